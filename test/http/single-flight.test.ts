import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Agent, request as httpRequest } from 'node:http';
import { OrganisationStore } from '../../src/modules/organisation/store.js';
import { DeviceTokenService } from '../../src/modules/devices/tokens.js';
import { PolicyStore } from '../../src/modules/policy/store.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { listen, startWithOrganisation, type TestPlatform } from '../support/platform.js';

// Cache stampedes (issue 30): when the host → organisation entry, a verified token and the
// newest policy publish numbers all end at once, the requests in flight share one look-up of
// each instead of each making their own. The store methods are spied on and held until every
// request has arrived, so the requests are truly concurrent at the moment their entries end.

let platform: TestPlatform;
let host: string;
let device: EnrolledDevice;
let server: Awaited<ReturnType<typeof listen>>;
let arrived = 0;
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * Store methods the hot path reads through, counted; while `holding`, each answer (read now) is
 * held back until `release`, so the look-up stays in flight while more requests arrive.
 */
type Method = (...args: unknown[]) => Promise<unknown>;
const held: Array<() => void> = [];
let holding = false;
let failNext: string | undefined;
/** Set: only this method is held. */
let holdOnly: string | undefined;
function spyOn(prototype: object, name: string) {
  const methods = prototype as Record<string, Method>;
  const real = methods[name]!;
  return jest.spyOn(methods, name).mockImplementation(async function (this: unknown, ...args: unknown[]) {
    const answer = await real.apply(this, args);
    if (holding && (holdOnly === undefined || holdOnly === name)) await new Promise<void>((resolve) => held.push(resolve));
    if (failNext === name) {
      failNext = undefined;
      throw new Error('the database went away');
    }
    return answer;
  });
}
const spies = {
  findByHost: spyOn(OrganisationStore.prototype, 'findByHost'),
  resolveAccessTokenHash: spyOn(DeviceTokenService.prototype, 'resolveAccessTokenHash'),
  latestNumbers: spyOn(PolicyStore.prototype, 'latestNumbers'),
};
const release = () => {
  holding = false;
  holdOnly = undefined;
  held.splice(0).forEach((resolve) => resolve());
};
/** Until `count` requests have arrived, then long enough for each to reach its first wait (the caches). */
async function arrivedAll(count: number): Promise<void> {
  while (arrived < count) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 100));
}
const calls = () => Object.fromEntries(Object.entries(spies).map(([name, spy]) => [name, spy.mock.calls.length]));

beforeAll(async () => {
  ({ platform, host } = await startWithOrganisation());
  const organisationId = (await platform.services.organisations.findByHost(host))!.id;
  const person = await createPerson(platform, organisationId);
  device = await enrolDevice(platform, { organisationId, personId: person.id, alg: 'ES256' });
  server = await listen(platform);
  server.server.on('request', () => (arrived += 1));
});

afterEach(release);

afterAll(async () => {
  agent.destroy();
  await server.close();
  await platform.close();
  jest.restoreAllMocks();
});

/** One DPoP-authenticated policy poll over a real connection, at the organisation's host. */
async function poll(): Promise<number> {
  const headers = await deviceHeaders(device, 'GET', `http://${host}/policy/v1`);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ agent, host: '127.0.0.1', port: server.port, path: '/policy/v1', headers: { ...headers, Host: host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** `count` polls at once; the held look-ups go on once all have arrived and had time to reach them. */
async function burst(count: number): Promise<number[]> {
  arrived = 0;
  holding = true;
  const answers = Promise.all(Array.from({ length: count }, poll));
  await arrivedAll(count);
  release();
  return answers;
}

/** Past the end of every entry: tenancy's 5 s, AUTH_CACHE_MAX_AGE_SECONDS's 5 s. */
const endEntries = () => platform.clock.advance(6_000);

describe('concurrent misses share one look-up', () => {
  it('50 concurrent requests at ended entries make exactly one query of each', async () => {
    expect(await poll()).toBe(200);
    const warmed = calls();
    endEntries();
    const statuses = await burst(50);
    expect(statuses).toEqual(Array(50).fill(200));
    const after = calls();
    expect(after.findByHost! - warmed.findByHost!).toBe(1);
    expect(after.resolveAccessTokenHash! - warmed.resolveAccessTokenHash!).toBe(1);
    expect(after.latestNumbers! - warmed.latestNumbers!).toBe(1);
    // Within the entries' life, no query at all.
    expect(await poll()).toBe(200);
    expect(calls()).toEqual(after);
  });

  it('a failed look-up fails the requests that shared it, and the next request asks again', async () => {
    endEntries();
    failNext = 'resolveAccessTokenHash';
    const before = calls();
    const statuses = await burst(20);
    expect(statuses.every((status) => status >= 500)).toBe(true);
    expect(calls().resolveAccessTokenHash! - before.resolveAccessTokenHash!).toBe(1);
    expect(await poll()).toBe(200);
    expect(calls().resolveAccessTokenHash! - before.resolveAccessTokenHash!).toBe(2);
  });

  it('a revoked token is refused at once: a request after the revocation never shares a look-up made before it', async () => {
    endEntries();
    const before = calls();
    arrived = 0;
    holding = true;
    holdOnly = 'resolveAccessTokenHash';
    const early = Promise.all(Array.from({ length: 10 }, poll));
    await arrivedAll(10);
    // Revoked while the look-up read before it is still in flight.
    await platform.services.deviceTokens.revokeDevice(device.device.id);
    const late = poll();
    await arrivedAll(11);
    release();
    // The requests that arrived before the revocation are answered from what was read before it, as without a cache.
    expect(await early).toEqual(Array(10).fill(200));
    expect(await late).toBe(401);
    expect(calls().resolveAccessTokenHash! - before.resolveAccessTokenHash!).toBe(2);
    // Nothing read before the revocation was kept.
    expect(await poll()).toBe(401);
  });
});
