import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as DPoP from 'dpop';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../adapters/state/redis.js';
import { RedisReplayCache } from '../../adapters/state/redis-replay-cache.js';
import { DpopError, DpopVerifier, type ProofExpectations } from '../../src/auth/dpop.js';
import { ManualClock } from '../../src/util/clock.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { proofClaims, sha256base64url } from '../support/dpop-proofs.js';

// Runs in the services project, against the real Redis (TEST_REDIS_URL). Every key this file
// writes is under a prefix of its own, or (the platform's) named exactly, and deleted after.

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `platform:test:dpop-redis:${process.pid}:${Date.now()}:`;
const PLATFORM_PREFIX = 'platform:dpop:jti:';
const PATH = '/platform/v1/organisation';

/** Several connections: each stands for one replica of the service. */
const replicas: Redis[] = [];
/** Keys written under the platform's own prefix, deleted by name at the end. */
const platformKeys: string[] = [];

async function connect(): Promise<Redis> {
  const redis = connectRedis(REDIS_URL);
  await redis.connect();
  replicas.push(redis);
  return redis;
}

beforeAll(async () => {
  for (let i = 0; i < 4; i += 1) await connect();
});

afterAll(async () => {
  const redis = replicas[0]!;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  if (platformKeys.length > 0) await redis.del(...platformKeys);
  expect(await redis.exists(...platformKeys, `${PREFIX}none`)).toBe(0);
  for (const replica of replicas) replica.disconnect();
});

describe('RedisReplayCache on a real Redis', () => {
  it('of concurrent sightings of one key from several replicas, exactly one is unique', async () => {
    const clock = new ManualClock(Date.now());
    const caches = replicas.map((redis) => new RedisReplayCache(redis, clock, PREFIX));
    const expiresAt = new Date(clock.now().getTime() + 60_000);
    for (const key of ['race-1', 'race-2', 'race-3']) {
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => caches[i % caches.length]!.unique(key, expiresAt)));
      expect(answers.filter(Boolean)).toHaveLength(1);
    }
  });

  it('sets the expiry (PX) from the injected clock, under its own prefix, and a replay does not extend it', async () => {
    const clock = new ManualClock(Date.now());
    const redis = replicas[0]!;
    const cache = new RedisReplayCache(redis, clock, PREFIX);
    const expiresAt = new Date(clock.now().getTime() + 90_000);

    expect(await cache.unique('ttl', expiresAt)).toBe(true);
    const ttl = await redis.pttl(`${PREFIX}ttl`);
    expect(ttl).toBeGreaterThan(85_000);
    expect(ttl).toBeLessThanOrEqual(90_000);

    // Thirty seconds later on the service's clock, the same expiry is sixty seconds away.
    clock.advance(30_000);
    expect(await cache.unique('ttl-later', expiresAt)).toBe(true);
    const later = await redis.pttl(`${PREFIX}ttl-later`);
    expect(later).toBeGreaterThan(55_000);
    expect(later).toBeLessThanOrEqual(60_000);

    // A replay is refused and leaves the first expiry alone (NX: nothing is written).
    expect(await cache.unique('ttl', new Date(clock.now().getTime() + 600_000))).toBe(false);
    expect(await redis.pttl(`${PREFIX}ttl`)).toBeLessThanOrEqual(ttl);
  });

  it('keeps an entry whose expiry has already passed for a millisecond at most, rather than failing', async () => {
    const clock = new ManualClock(Date.now());
    const redis = replicas[0]!;
    const cache = new RedisReplayCache(redis, clock, PREFIX);
    expect(await cache.unique('past', new Date(clock.now().getTime() - 5_000))).toBe(true);
    // -2: already gone; 0 or 1: about to go. Never a lasting key.
    expect([-2, 0, 1]).toContain(await redis.pttl(`${PREFIX}past`));
  });

  it('fails closed when Redis is unreachable: the cache and the verifier reject, never accept', async () => {
    const clock = new ManualClock(Date.now());
    const keys = await DPoP.generateKeyPair('ES256');
    const url = 'https://org.example.test/platform/v1/organisation';
    const proof = await DPoP.generateProof(keys, url, 'GET', undefined, 'platform_at_x');
    const expected = { method: 'GET', url, accessToken: 'platform_at_x', boundJkt: await DPoP.calculateThumbprint(keys.publicKey) };

    /** The production client (no offline queue) pointed where nothing listens; closed right after its first command. */
    async function unreachable<T>(use: (cache: RedisReplayCache) => Promise<T>): Promise<T> {
      const redis = connectRedis('redis://127.0.0.1:1');
      redis.on('error', () => undefined);
      try {
        return await use(new RedisReplayCache(redis, clock, PREFIX));
      } finally {
        redis.disconnect();
      }
    }

    await expect(unreachable((cache) => cache.unique('down', new Date(clock.now().getTime() + 60_000)))).rejects.toMatchObject({
      status: 503,
      code: 'unavailable',
    });
    const outcome = await unreachable((cache) =>
      new DpopVerifier({ clock, replay: cache, windowSeconds: 60, futureSkewSeconds: 5, requireNonce: false, nonceSecret: Buffer.alloc(32, 1), nonceLifetimeSeconds: 300 })
        .verify(proof, expected)
        .then(
          () => 'accepted',
          (error: unknown) => (error instanceof DpopError ? `refused: ${error.message}` : `failed: ${(error as Error).message}`),
        ),
    );
    expect(outcome).toBe('failed: the replay cache is not reachable just now; try again shortly');
  });
});

describe('a platform started with a real Redis', () => {
  let platform: TestPlatform;
  let host: string;
  let url: string;
  let enrolled: EnrolledDevice;
  let otherReplica: DpopVerifier;

  beforeAll(async () => {
    platform = await startPlatform({ redis: replicas[0]! });
    const organisation = await createOrganisation(platform);
    host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
    url = `http://${host}${PATH}`;
    const person = await createPerson(platform, organisation.id);
    enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
    // Another replica: its own connection to the same Redis, the platform's settings.
    otherReplica = new DpopVerifier({
      clock: platform.clock,
      replay: new RedisReplayCache(replicas[1]!, platform.clock),
      ...platform.config.dpop,
      nonceSecret: Buffer.alloc(32, 1),
    });
  });
  afterAll(() => platform.close());

  /** The platform's Redis key for a proof (jkt, method, URL and jti); recorded for clean-up. */
  async function platformKey(proof: string): Promise<string> {
    const jkt = await DPoP.calculateThumbprint(enrolled.keys!.publicKey);
    const key = `${PLATFORM_PREFIX}${sha256base64url(`${jkt}\nGET\n${url}\n${proofClaims(proof).jti as string}`)}`;
    platformKeys.push(key);
    return key;
  }

  const expectations = async (token: string): Promise<ProofExpectations> => ({
    method: 'GET',
    url,
    accessToken: token,
    boundJkt: await DPoP.calculateThumbprint(enrolled.keys!.publicKey),
  });

  const get = (proof: string) =>
    call(platform, 'get', PATH, { host, headers: { Authorization: `DPoP ${enrolled.tokens.access_token}`, DPoP: proof } });

  function expectReplayRefusal(res: Awaited<ReturnType<typeof get>>): void {
    const message = 'the DPoP proof was already used';
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_dpop_proof', message });
    expect(res.headers['www-authenticate']).toBe(`DPoP error="invalid_dpop_proof", error_description="${message}", algs="ES256 EdDSA"`);
  }

  it('records an accepted proof in Redis and refuses it again, on this replica and on another', async () => {
    const token = enrolled.tokens.access_token;
    const proof = await DPoP.generateProof(enrolled.keys!, url, 'GET', undefined, token);
    const key = await platformKey(proof);
    expect(await replicas[0]!.exists(key)).toBe(0);

    expect((await get(proof)).status).toBe(200);
    expect(await replicas[0]!.exists(key)).toBe(1);
    // Kept until iat + window + skew + 1 s, counted from the service's clock.
    const ttl = await replicas[0]!.pttl(key);
    const expected = ((proofClaims(proof).iat as number) + 60 + 5 + 1) * 1000 - platform.clock.now().getTime();
    expect(ttl).toBeLessThanOrEqual(expected);
    expect(ttl).toBeGreaterThan(expected - 5_000);

    expectReplayRefusal(await get(proof));
    await expect(otherReplica.verify(proof, await expectations(token))).rejects.toMatchObject({ code: 'invalid_dpop_proof', message: 'the DPoP proof was already used' });
  });

  it('refuses a proof another replica has already accepted', async () => {
    const token = enrolled.tokens.access_token;
    const proof = await DPoP.generateProof(enrolled.keys!, url, 'GET', undefined, token);
    await platformKey(proof);
    await expect(otherReplica.verify(proof, await expectations(token))).resolves.toMatchObject({ jti: proofClaims(proof).jti });
    expectReplayRefusal(await get(proof));
    // Control: a fresh proof passes.
    const fresh = await DPoP.generateProof(enrolled.keys!, url, 'GET', undefined, token);
    await platformKey(fresh);
    expect((await get(fresh)).status).toBe(200);
  });
});
