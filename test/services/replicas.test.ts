import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { ManualClock, systemClock } from '../../src/util/clock.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { TestIdentityProvider } from '../support/idp.js';
import { personHeaders, twoOrganisations } from '../support/organisations.js';
import type { TestPlatform } from '../support/platform.js';
import { RedisServer } from '../support/redis-server.js';
import { LoggedService } from '../support/service-process.js';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { CLI_ACTOR } from '../../src/audit.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';

/**
 * Two replicas of the real service (processes of src/main.ts on their own loopback ports) sharing
 * one MariaDB database and one Redis (a redis-server of this test's own): what one replica saw or
 * changed binds the other. A DPoP proof used at one is a replay at the other; an address's rate
 * limit counts requests to both; a refresh token rotated at one is a reused one at the other; a
 * device revoked through one is refused by the other within a second; a policy published through
 * one is served by the other at once (Redis), and one published by another process without Redis
 * (the command line) within a second. (An MCP call reaching the
 * workbench connected to the other replica: test/services/relay-replicas.test.ts.)
 */

let database: TestDatabase;
let redis: RedisServer;
let idp: TestIdentityProvider;
let otherIdp: TestIdentityProvider;
const replicas: { service: LoggedService; port: number }[] = [];
let host: string;
let organisationId: string;
let seeder: TestPlatform;
let seederClose: () => Promise<void>;

beforeAll(async () => {
  database = await freshDatabase();
  redis = await RedisServer.create();
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'info',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    DEVICE_REFRESH_GRACE_SECONDS: '0',
  };
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  const seeding = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
  seeder = { ...seeding, dataSource, clock: new ManualClock(Date.now()) } as unknown as TestPlatform;
  const orgs = await twoOrganisations(seeder, new ManualClock(Date.now()));
  ({ idp, otherIdp, host } = orgs);
  organisationId = orgs.organisation.id;
  seederClose = () => dataSource.destroy();

  for (const service of [new LoggedService(env), new LoggedService(env)]) replicas.push({ service, port: await service.port() });
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map(({ service }) => service.stop()));
  await Promise.all([idp?.close(), otherIdp?.close()]);
  await seederClose?.();
  await redis?.close();
  await database?.drop();
}, 30_000);

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** A request to one replica with the organisation's Host (both replicas are the same origin to a client). */
function send(replica: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: replicas[replica]!.port, method, path, headers: { Host: host, ...headers, ...(text ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) } : {}) } },
      (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data ? (JSON.parse(data) as Record<string, unknown>) : {} }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

async function newDevice(alg?: 'ES256'): Promise<EnrolledDevice> {
  const person = await createPerson(seeder, organisationId);
  return enrolDevice(seeder, { organisationId, personId: person.id, ...(alg ? { alg } : {}) });
}

describe('two replicas sharing MariaDB and Redis', () => {
  it('refuse a DPoP proof at one replica that the other has seen', async () => {
    const device = await newDevice('ES256');
    const headers = await deviceHeaders(device, 'GET', `http://${host}/platform/v1/organisation`);
    expect((await send(0, 'GET', '/platform/v1/organisation', headers)).status).toBe(200);
    const replayed = await send(1, 'GET', '/platform/v1/organisation', headers);
    expect(replayed).toMatchObject({ status: 401, body: { error: 'invalid_dpop_proof', message: expect.stringContaining('already used') } });
    // A fresh proof is fine at either.
    expect((await send(1, 'GET', '/platform/v1/organisation', await deviceHeaders(device, 'GET', `http://${host}/platform/v1/organisation`))).status).toBe(200);
  });

  it("count an address's requests to both replicas against one limit", async () => {
    // Device codes: 60 a minute per network address; the replicas share the count.
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await send(0, 'POST', '/relay/v1/device/code', {}, { workspaceId: 'ws', name: `laptop ${i}` })).status);
    for (let i = 0; i < 30; i++) statuses.push((await send(1, 'POST', '/relay/v1/device/code', {}, { workspaceId: 'ws', name: `laptop ${i}` })).status);
    expect(statuses).toEqual(Array(60).fill(200));
    expect(await send(0, 'POST', '/relay/v1/device/code', {}, { workspaceId: 'ws', name: 'one too many' })).toMatchObject({ status: 429, body: { error: 'too_many_requests' } });
    expect(await send(1, 'POST', '/relay/v1/device/code', {}, { workspaceId: 'ws', name: 'one too many' })).toMatchObject({ status: 429, body: { error: 'too_many_requests' } });
  });

  it('refuse at one replica a refresh token rotated at the other, as reused', async () => {
    const device = await newDevice();
    const rotated = await send(0, 'POST', '/relay/v1/token', {}, { grant_type: 'refresh_token', refresh_token: device.tokens.refresh_token });
    expect(rotated.status).toBe(200);
    const reused = await send(1, 'POST', '/relay/v1/token', {}, { grant_type: 'refresh_token', refresh_token: device.tokens.refresh_token });
    expect(reused).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // Reuse ends every token of the device, the new pair too, at both replicas.
    const bearer = { Authorization: `Bearer ${rotated.body.access_token as string}` };
    expect((await send(0, 'GET', '/platform/v1/organisation', bearer)).status).toBe(401);
    expect((await send(1, 'GET', '/platform/v1/organisation', bearer)).status).toBe(401);
  });

  it('refuse a device revoked through one replica at the other within a second', async () => {
    const device = await newDevice();
    const bearer = { Authorization: `Bearer ${device.tokens.access_token}` };
    expect((await send(1, 'GET', '/platform/v1/organisation', bearer)).status).toBe(200);
    const revoked = await send(0, 'DELETE', `/platform/v1/devices/${device.device.id}`, await personHeaders(idp, 'admin'));
    expect(revoked.status).toBe(204);
    const at = Date.now();
    let answer: Answer;
    do answer = await send(1, 'GET', '/platform/v1/organisation', bearer);
    while (answer.status === 200 && Date.now() - at < 1_500);
    expect(answer).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
    expect(Date.now() - at).toBeLessThan(1_000);
  });

  it('serve at one replica a policy published through the other at once, and one published by the command line within a second', async () => {
    const device = await newDevice();
    const bearer = { Authorization: `Bearer ${device.tokens.access_token}` };
    /** Polls replica 1 until it serves `revision`; answers how long that took (ms). */
    const servedWithin = async (revision: string): Promise<number> => {
      const at = Date.now();
      let answer: Answer;
      do answer = await send(1, 'GET', '/policy/v1', bearer);
      while (answer.status === 200 && answer.body.revision !== revision && Date.now() - at < 3_000);
      expect(answer).toMatchObject({ status: 200, body: { revision } });
      return Date.now() - at;
    };
    // Replica 1 holds the current numbers in its cache (two polls, the second from the cache).
    const before = await send(1, 'GET', '/policy/v1', bearer);
    expect(before.status).toBe(200);
    expect((await send(1, 'GET', '/policy/v1', bearer)).body.revision).toBe(before.body.revision);
    const metrics = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port: replicas[1]!.port, path: '/metrics' }, (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
        res.on('end', () => resolve(data));
      })
        .on('error', reject)
        .end();
    });
    expect(Number(/^platform_cache_entries\{cache="policyLatestNumbers"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);

    const published = await send(0, 'PUT', '/policy/v1/organisation', await personHeaders(idp, 'admin'), mergeOverride(DEFAULT_POLICY, { network: { denyHosts: ['replica-0.example.test'] } }));
    expect(published.status).toBe(200);
    expect(published.body.revision).not.toBe(before.body.revision);
    // Through Redis: as soon as the message arrives (well under the counter's second).
    expect(await servedWithin(published.body.revision as string)).toBeLessThan(1_000);

    // Another process without Redis (the seeder here, `platform policy publish` in production):
    // only the revocation counter, read at most once a second, tells the replicas.
    const outcome = await seeder.services.policies.publishOrganisation(organisationId, CLI_ACTOR, mergeOverride(DEFAULT_POLICY, { network: { denyHosts: ['command-line.example.test'] } }));
    expect(outcome.changed).toBe(true);
    // A second, plus the time of the polls themselves.
    expect(await servedWithin(outcome.revision)).toBeLessThan(1_500);
  });
});
