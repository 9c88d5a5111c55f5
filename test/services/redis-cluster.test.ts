import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { connectRedis, type RedisClient } from '../../adapters/state/redis.js';
import { RedisRateLimitStores } from '../../adapters/state/redis-rate-limit.js';
import { RedisRelayRouting } from '../../adapters/state/redis-relay-routing.js';
import type { PolicyChange } from '../../src/state/relay-routing.js';
import { RedisReplayCache } from '../../adapters/state/redis-replay-cache.js';
import { buildApp, type Platform } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { ManualClock } from '../../src/util/clock.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { TestPlatform } from '../support/platform.js';
import { RedisCluster } from '../support/redis-cluster.js';

// Everything the replicas share through Redis, on a real Redis Cluster (three primaries, a replica
// of each, started here from Debian's redis-server) reached with REDIS_MODE=cluster: the DPoP
// replay cache, the rate limits, relay presence and pub/sub, revocation fan-out. Then a primary
// is killed and its replica takes over: nothing is accepted twice, no DPoP proof is replayable.

interface Instance {
  platform: Platform;
  dataSource: DataSource;
  redis: RedisClient;
}

let cluster: RedisCluster;
let database: TestDatabase;
const clock = new ManualClock(Date.now());
const instances: Instance[] = [];
const clients: RedisClient[] = [];
let a: Instance;
let b: Instance;
let device: EnrolledDevice;
const HOST = 'cluster.test';

async function client(): Promise<RedisClient> {
  const redis = connectRedis({ url: cluster.url, mode: 'cluster' });
  redis.on('error', () => undefined);
  await redis.connect();
  clients.push(redis);
  return redis;
}

async function instance(): Promise<Instance> {
  const env = { PLATFORM_DEPLOYMENT: 'self-hosted', LOG_LEVEL: 'silent', DATABASE_URL: database.url, REDIS_URL: cluster.url, REDIS_MODE: 'cluster' };
  const config = loadConfig(env);
  const dataSource = createDataSource(database.config);
  await dataSource.initialize();
  await dataSource.runMigrations();
  const redis = await client();
  const platform = buildApp({ config, dataSource, clock, logger: createLogger('silent'), redis });
  await platform.start();
  const made = { platform, dataSource, redis };
  instances.push(made);
  return made;
}

beforeAll(async () => {
  cluster = await RedisCluster.start();
  database = await freshDatabase();
  a = await instance();
  b = await instance();
  const organisation = await a.platform.services.organisations.create({ name: 'Cluster', kind: 'enterprise', hosts: [HOST] });
  const seeder = { ...a.platform, clock, dataSource: a.dataSource } as unknown as TestPlatform;
  const person = await createPerson(seeder, organisation.id);
  device = await enrolDevice(seeder, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
}, 90_000);

afterAll(async () => {
  for (const made of instances) {
    await made.platform.stop();
    await made.dataSource.destroy();
  }
  for (const redis of clients) redis.disconnect();
  await database?.drop?.();
  await cluster?.stop();
}, 60_000);

/** One request of the device with `headers` (a proof) at one instance. */
async function poll(at: Instance, headers: Record<string, string>): Promise<number> {
  let test = request(at.platform.app).get('/policy/v1').set('Host', HOST);
  for (const [name, value] of Object.entries(headers)) test = test.set(name, value);
  return (await test).status;
}
const proof = () => deviceHeaders(device, 'GET', `http://${HOST}/policy/v1`);

/** Retries `attempt` until it stops throwing (a failover under way answers 503 meanwhile). */
async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

describe('on a Redis Cluster (REDIS_MODE=cluster)', () => {
  it('the DPoP replay cache: a proof is accepted once across replicas, keys spread over every primary', async () => {
    const headers = await proof();
    expect(await poll(a, headers)).toBe(200);
    expect(await poll(b, headers)).toBe(401);
    expect(await poll(a, headers)).toBe(401);
    // Concurrent sightings of many keys from both replicas: each unique exactly once.
    const caches = [new RedisReplayCache(a.redis, clock, 'platform:test:replay:'), new RedisReplayCache(b.redis, clock, 'platform:test:replay:')];
    const until = new Date(clock.now().getTime() + 60_000);
    const keys = Array.from({ length: 30 }, (_, i) => `race-${i}`);
    const answers = await Promise.all(keys.flatMap((key) => Array.from({ length: 6 }, (_, i) => caches[i % 2]!.unique(key, until).then((fresh) => [key, fresh] as const))));
    for (const key of keys) expect(answers.filter(([k, fresh]) => k === key && fresh)).toHaveLength(1);
    const holders = new Set(await Promise.all(keys.map((key) => cluster.primaryOf(`platform:test:replay:${key}`))));
    expect(holders.size).toBe(3);
  });

  it('the rate limits: two replicas count together (scripts loaded on every primary)', async () => {
    const stores = [new RedisRateLimitStores(a.redis).stores()({ name: 'cluster-test' }), new RedisRateLimitStores(b.redis).stores()({ name: 'cluster-test' })];
    for (const store of stores) await store.init({ windowMs: 60_000 } as never);
    const hits: number[] = [];
    for (let i = 0; i < 10; i += 1) hits.push((await stores[i % 2]!.increment('caller-1')).totalHits);
    expect(hits).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Other callers' counters live on other primaries and count apart.
    for (let i = 0; i < 12; i += 1) expect((await stores[i % 2]!.increment(`caller-x${i}`)).totalHits).toBe(1);
  });

  it('relay presence and pub/sub: a call for a device held on A, made on B, is answered by A', async () => {
    const logger = createLogger('silent');
    const onA = new RedisRelayRouting(a.redis, { presenceTtlMs: 30_000, logger, prefix: 'platform:test:relay:' });
    const onB = new RedisRelayRouting(b.redis, { presenceTtlMs: 30_000, logger, prefix: 'platform:test:relay:' });
    const evicted: string[] = [];
    const toldOnA: PolicyChange[] = [];
    const toldOnB: PolicyChange[] = [];
    await onA.start({ deliver: async (deviceId, params) => ({ ok: true, result: { deviceId, echo: params.message } }), evict: (deviceId) => evicted.push(deviceId), policyChanged: (change) => toldOnA.push(change) });
    await onB.start({ deliver: async () => ({ ok: false, reason: 'not_connected', message: 'not here' }) as never, evict: () => undefined, policyChanged: (change) => toldOnB.push(change) });
    try {
      await eventually(async () => expect(onA.healthy() && onB.healthy()).toBe(true));
      await onA.claim('dev_cluster', 'conn-a');
      expect(await onB.forward('dev_cluster', { runId: 'run_1', assertion: 'x', message: { n: 1 } }, 5_000)).toEqual({ ok: true, result: { deviceId: 'dev_cluster', echo: { n: 1 } } });
      expect(await onA.refresh('dev_cluster', 'conn-a')).toBe(true);
      // A newer connection on B takes the device over: A is told to close its socket.
      await onB.claim('dev_cluster', 'conn-b');
      await eventually(async () => expect(evicted).toEqual(['dev_cluster']));
      expect(await onA.refresh('dev_cluster', 'conn-a')).toBe(false);
      // A policy change broadcast from B reaches A (sharded like the calls), and B ignores its own.
      const change: PolicyChange = { organisationId: 'org_cluster', projectId: null, number: 3, revision: 'rev-3' };
      await onB.broadcast(change);
      await eventually(async () => expect(toldOnA).toEqual([change]));
      expect(toldOnB).toEqual([]);
    } finally {
      await onA.stop();
      await onB.stop();
    }
  });

  it('revocation fan-out: a device revoked on B is refused on A as soon as the message arrives, without moving any clock', async () => {
    const other = await enrolDevice({ ...a.platform, clock, dataSource: a.dataSource } as unknown as TestPlatform, {
      organisationId: device.device.organisationId,
      personId: device.device.personId,
      alg: 'ES256',
    });
    const headersOf = () => deviceHeaders(other, 'GET', `http://${HOST}/policy/v1`);
    expect(await poll(a, await headersOf())).toBe(200);
    await b.platform.services.deviceTokens.revokeDevice(other.device.id);
    await eventually(async () => expect(await poll(a, await headersOf())).toBe(401), 5_000);
  });

  it('a primary killed and failed over: nothing accepted twice, no DPoP proof replayable', async () => {
    // Proofs seen before the failover, some on the primary that will die.
    const seen = await Promise.all(Array.from({ length: 12 }, proof));
    for (const [i, headers] of seen.entries()) expect(await poll(instances[i % 2]!, headers)).toBe(200);
    const counters = new RedisRateLimitStores(a.redis).stores()({ name: 'cluster-failover' });
    await counters.init({ windowMs: 60_000 } as never);
    for (let i = 1; i <= 5; i += 1) expect((await counters.increment('caller-f')).totalHits).toBe(i);
    const victim = await cluster.primaryOf('platform:rl:cluster-failover:caller-f');
    // Redis replicates asynchronously: a write the primary took but had not passed on when it
    // died is lost with it (docs/operations/request-costs.md). Here every write has reached it.
    await cluster.replicated(victim);
    const before = await cluster.primaries();
    await cluster.kill(victim);
    await cluster.waitUntil(async () => {
      const now = await cluster.primaries();
      return now.length === 3 && !now.includes(victim) && now.some((port) => !before.includes(port));
    });
    await cluster.waitUntil(async () => (await cluster.info((await cluster.primaries())[0]!, 'cluster', 'info')).includes('cluster_state:ok'));
    // Every proof seen before is still refused, on either replica.
    for (const [i, headers] of seen.entries()) {
      const status = await eventually(async () => {
        const answer = await poll(instances[(i + 1) % 2]!, headers);
        if (answer === 503) throw new Error('failover under way');
        return answer;
      });
      expect(status).toBe(401);
    }
    // A new proof is accepted once.
    const fresh = await proof();
    expect(await eventually(async () => {
      const answer = await poll(a, fresh);
      if (answer === 503) throw new Error('failover under way');
      return answer;
    })).toBe(200);
    expect(await poll(b, fresh)).toBe(401);
    // The counter went on from where it was on the dead primary.
    expect((await eventually(() => counters.increment('caller-f'))).totalHits).toBe(6);
  }, 90_000);
});
