import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { RedisStore } from 'rate-limit-redis';
import { connectRedis } from '../../adapters/state/redis.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, requestDeviceCode, type EnrolledDevice } from '../support/devices.js';
import { RedisServer } from '../support/redis-server.js';

/**
 * Redis going away and coming back, with a redis-server of this file's own (its own port and
 * data directory, nothing saved) stopped and started while the platform keeps running: readiness
 * names what is not usable, requests that need Redis are refused with 503 (never let through),
 * and everything works again when Redis is back, without restarting the platform, also when
 * Redis was away when the platform started. A Redis restart forgets the rate-limit scripts: the
 * store loads them again (NOSCRIPT, and on reconnect). The relay's subscription (calls for
 * workbenches held by other replicas) comes back the same way.
 */

/** Real time: these wait for a real process and a real reconnecting client. */
const WAIT_MS = 15_000;

interface Setup {
  server: RedisServer;
  redis: Redis;
  platform: TestPlatform;
  host: string;
  bound: EnrolledDevice;
}

async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Resolves when the client is connected and ready (it reconnects by itself, at most every 2 s). */
async function connected(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return;
  await Promise.race([once(redis, 'ready'), new Promise((_, reject) => setTimeout(() => reject(new Error('Redis client did not reconnect')), WAIT_MS).unref())]);
}

async function stopRedis(setup: Setup): Promise<void> {
  await setup.server.stop();
  await until(() => setup.redis.status !== 'ready', 'the client to notice Redis is gone');
}

async function startRedis(setup: Setup): Promise<void> {
  await setup.server.start();
  await connected(setup.redis);
}

async function setUp(options: { redisRunning: boolean }): Promise<Setup> {
  const server = await RedisServer.create({ running: options.redisRunning });
  // The production client: no offline queue, reconnects forever.
  const redis = connectRedis(server.url);
  redis.on('error', () => undefined);
  redis.connect().catch(() => undefined);
  if (options.redisRunning) await connected(redis);
  const platform = await startPlatform({ redis, env: { TRUST_PROXY: 'loopback' } });
  const organisation = await createOrganisation(platform);
  const host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  const person = await createPerson(platform, organisation.id);
  const bound = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
  return { server, redis, platform, host, bound };
}

async function tearDown(setup: Setup | undefined): Promise<void> {
  if (!setup) return;
  setup.redis.disconnect();
  await setup.platform.close();
  await setup.server.close();
}

let address = 0;
/** A rate-limited request (device code, 60 a minute per address), from an address of its own. */
function limitedRequest(setup: Setup) {
  address += 1;
  const from = `10.77.${Math.floor(address / 250)}.${(address % 250) + 1}`;
  return requestDeviceCode(setup.platform, { host: setup.host, from, body: { workspaceId: 'ws', name: 'recovering' } });
}

/** A request with a DPoP-bound token: its proof goes through the replay cache in Redis. */
async function withProof(setup: Setup) {
  // Proofs carry the real time; the platform's clock follows it here.
  setup.platform.clock.set(Date.now());
  const url = `http://${setup.host}/platform/v1/organisation`;
  return call(setup.platform, 'get', '/platform/v1/organisation', { host: setup.host, headers: await deviceHeaders(setup.bound, 'GET', url) });
}

const readiness = (setup: Setup) => call(setup.platform, 'get', '/readyz');

async function expectWorking(setup: Setup): Promise<void> {
  // The relay subscribes on a connection of its own, which reconnects on its own schedule.
  await until(async () => (await readiness(setup)).body.checks?.relay === 'ok', 'the relay to subscribe again');
  const ready = await readiness(setup);
  expect(ready.status).toBe(200);
  expect(ready.body.checks).toEqual({ database: 'ok', migrations: 'ok', redis: 'ok', rateLimits: 'ok', replayCache: 'ok', relay: 'ok' });
  expect((await limitedRequest(setup)).status).toBe(200);
  expect((await withProof(setup)).status).toBe(200);
}

async function expectRefusing(setup: Setup): Promise<void> {
  await until(async () => (await readiness(setup)).body.checks?.relay === 'not subscribed', 'the relay to notice Redis is gone');
  const ready = await readiness(setup);
  expect(ready.status).toBe(503);
  expect(ready.body).toEqual({
    error: 'not_ready',
    message: 'not ready: redis, rateLimits, replayCache and relay are not usable',
    checks: { database: 'ok', migrations: 'ok', redis: 'unreachable', rateLimits: 'unreachable', replayCache: 'unreachable', relay: 'not subscribed' },
  });
  const limited = await limitedRequest(setup);
  expect(limited.status).toBe(503);
  expect(limited.body.error).toBe('unavailable');
  expect(limited.headers['retry-after']).toBe('1');
  const proved = await withProof(setup);
  expect(proved.status).toBe(503);
  expect(proved.body.error).toBe('unavailable');
}

describe('Redis stopped and started while the platform runs', () => {
  let setup: Setup;

  beforeAll(async () => {
    setup = await setUp({ redisRunning: true });
  });
  afterAll(() => tearDown(setup));

  it('works while Redis is up, with the scripts rate-limit-redis loaded under the SHA1 computed here', async () => {
    await expectWorking(setup);
    const shas = await loadedShas();
    expect(shas).toHaveLength(2);
    expect(await setup.redis.call('SCRIPT', 'EXISTS', ...shas)).toEqual([1, 1]);
    // What the store is told while Redis is away is exactly what Redis answers for the same text.
    expect(await Promise.all((await scriptTexts()).map((text) => setup.redis.call('SCRIPT', 'LOAD', text)))).toEqual(shas);
  });

  it('is not ready and refuses what needs Redis while it is down, and recovers when it restarts (scripts forgotten)', async () => {
    await stopRedis(setup);
    await expectRefusing(setup);
    // Still served: what needs no Redis.
    expect((await call(setup.platform, 'get', '/healthz')).status).toBe(200);

    await startRedis(setup);
    await expectWorking(setup);
  });

  it('recovers again after a second outage', async () => {
    await stopRedis(setup);
    await expectRefusing(setup);
    await startRedis(setup);
    await expectWorking(setup);
  });

  it('loads the scripts again when Redis answers NOSCRIPT (SCRIPT FLUSH), in the request itself', async () => {
    await setup.redis.call('SCRIPT', 'FLUSH');
    expect(await setup.redis.call('SCRIPT', 'EXISTS', ...(await loadedShas()))).toEqual([0, 0]);
    expect((await limitedRequest(setup)).status).toBe(200);
    // The increment script is back (the request loaded it); readiness loads the other.
    expect((await setup.redis.call('SCRIPT', 'EXISTS', ...(await loadedShas())) as number[]).filter((loaded) => loaded === 1).length).toBeGreaterThanOrEqual(1);
    await expectWorking(setup);
    expect(await setup.redis.call('SCRIPT', 'EXISTS', ...(await loadedShas()))).toEqual([1, 1]);
  });
});

describe('Redis that answers but cannot run the rate-limit scripts', () => {
  let setup: Setup;

  beforeAll(async () => {
    setup = await setUp({ redisRunning: true });
  });
  afterAll(() => tearDown(setup));

  it('is not ready (rateLimits names why), refuses rate-limited requests, and recovers when scripts load again', async () => {
    await expectWorking(setup);
    // Redis forgot the scripts and may not load them (an ACL here; a failover in real life): the
    // store's reload after NOSCRIPT fails.
    await setup.redis.call('SCRIPT', 'FLUSH');
    await setup.redis.call('ACL', 'SETUSER', 'default', '-script');
    try {
      const ready = await readiness(setup);
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({
        message: 'not ready: rateLimits is not usable',
        checks: { redis: 'ok', rateLimits: 'scripts not loaded', replayCache: 'ok', relay: 'ok' },
      });
      const refused = await limitedRequest(setup);
      expect(refused.status).toBe(503);
      expect(refused.body.error).toBe('unavailable');
      // DPoP needs no script: it goes on working.
      expect((await withProof(setup)).status).toBe(200);
    } finally {
      await setup.redis.call('ACL', 'SETUSER', 'default', '+script');
    }
    // The failed reload left nothing stuck in the store: its next NOSCRIPT loads the script.
    expect((await limitedRequest(setup)).status).toBe(200);
    await expectWorking(setup);
  });
});

describe('Redis down when the platform started', () => {
  let setup: Setup;

  beforeAll(async () => {
    setup = await setUp({ redisRunning: false });
  });
  afterAll(() => tearDown(setup));

  it('is not ready and refuses what needs Redis, then works once Redis is up, without a restart', async () => {
    await expectRefusing(setup);
    await startRedis(setup);
    await expectWorking(setup);
    // The counters really are in Redis again.
    expect((await setup.redis.keys('platform:rl:device-code-address:*')).length).toBeGreaterThan(0);
  });

  it('control: a bare rate-limit-redis store made while Redis was away stays broken after Redis is back', async () => {
    await stopRedis(setup);
    const bare = new RedisStore({ prefix: 'platform:test:bare:', sendCommand: (command: string, ...args: string[]) => setup.redis.call(command, ...args) as never });
    await bare.init({ windowMs: 60_000 } as never).catch(() => undefined);
    await startRedis(setup);
    await expect(bare.increment('k')).rejects.toThrow();
    // The platform's stores, made the same way at the same moment, work (see above).
    expect((await limitedRequest(setup)).status).toBe(200);
  });
});

/** The scripts rate-limit-redis runs, as its store sends them (captured from a store writing to a recorder). */
async function scriptTexts(): Promise<string[]> {
  const seen: string[] = [];
  const recorder = new RedisStore({
    sendCommand: async (...command: string[]) => {
      if (command[0] === 'SCRIPT') seen.push(command[2]!);
      return 'sha' as never;
    },
  });
  await recorder.init({ windowMs: 60_000 } as never);
  return seen;
}

/** Their names in Redis: the SHA1 hex of their text, computed here (loading them would change what is tested). */
async function loadedShas(): Promise<string[]> {
  return (await scriptTexts()).map((text) => createHash('sha1').update(text, 'utf8').digest('hex'));
}
