import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connectRedis } from '../../adapters/state/redis.js';
import { buildApp, type Platform } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { PersonIdentityEntity } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { pollForTokens, requestDeviceCode } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Rate limits with a real Redis (TEST_REDIS_URL): two replicas that share the database and Redis
 * count together, so a client cannot double its allowance by landing on another replica.
 */

const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
const redis = connectRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

let first: TestPlatform;
/** A second replica: its own app, rate limiter and replay cache, the same database and Redis. */
let second: Platform;
let idp: TestIdentityProvider;
let host: string;

/** Every Redis key this file makes, removed at the end. */
const keys = new Set<string>();

/** An address no other run uses, so counters left by an earlier run cannot interfere. */
function newAddress(): string {
  const [a, b, c] = randomBytes(3);
  return `10.${a}.${b}.${(c! % 250) + 1}`;
}

const addressKey = (rule: string, address: string) => `platform:rl:${rule}:ip:${address}`;

beforeAll(async () => {
  await redis.connect();
  idp = await TestIdentityProvider.start({ clock });
  first = await startPlatform({ clock, redis, env: { TRUST_PROXY: 'loopback' } });
  second = buildApp({ config: first.config, dataSource: first.dataSource, clock, logger: createLogger('silent'), redis });
  const organisation = await createOrganisation(first, { name: 'Replicated Org', oidc: idp.settings({ roleClaim: 'platform_role' }) });
  host = (await first.services.organisations.hostsOf(organisation.id))[0]!;
});

afterAll(async () => {
  if (keys.size) await redis.del(...keys);
  redis.disconnect();
  await idp?.close();
  await first?.close();
});

const codeRequestFrom = (replica: Platform, from: string) => requestDeviceCode(replica, { host, from, body: { workspaceId: 'ws', name: 'replicated' } });

describe('per-address limits in Redis', () => {
  it('count device/code requests of both replicas together, in one key that expires with the window', async () => {
    const from = newAddress();
    const key = addressKey('device-code-address', from);
    keys.add(key);
    expect(await redis.exists(key)).toBe(0);

    for (let i = 0; i < 30; i++) {
      expect((await codeRequestFrom(first, from)).status).toBe(200);
      expect((await codeRequestFrom(second, from)).status).toBe(200);
    }
    expect(await redis.get(key)).toBe('60');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);

    for (const replica of [first, second]) {
      const refused = await codeRequestFrom(replica, from);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_requests');
      expect(refused.headers['retry-after']).toBe('60');
    }
    const elsewhere = newAddress();
    keys.add(addressKey('device-code-address', elsewhere));
    expect((await codeRequestFrom(second, elsewhere)).status).toBe(200);
  });

  it('keep each rule in its own key', async () => {
    const from = newAddress();
    keys.add(addressKey('device-code-address', from));
    keys.add(addressKey('device-token-address', from));
    expect((await codeRequestFrom(first, from)).status).toBe(200);
    const polled = await pollForTokens(second, 'unknown', { host, from });
    expect(polled.body.error).toBe('invalid_grant');
    expect(await redis.get(addressKey('device-code-address', from))).toBe('1');
    expect(await redis.get(addressKey('device-token-address', from))).toBe('1');
  });
});

describe('per-person limits in Redis', () => {
  it('count one person\'s user-code look-ups on both replicas together', async () => {
    const subject = `guesser-${randomUUID()}`;
    const lookUp = async (replica: Platform) => {
      // A new address each time: only the person's counter can refuse.
      const from = newAddress();
      keys.add(addressKey('user-code-address', from));
      return call(replica, 'post', '/platform/v1/device-approvals/look-up', {
        host,
        headers: { Authorization: `Bearer ${await idp.mint({ sub: subject })}`, 'X-Forwarded-For': from },
        body: { userCode: 'BCDF-GHJK' },
      });
    };

    for (let i = 0; i < 5; i++) {
      expect((await lookUp(first)).status).toBe(404);
      expect((await lookUp(second)).status).toBe(404);
    }
    const { personId } = await first.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: idp.issuer, subject });
    const key = `platform:rl:user-code-person:person:${personId}`;
    keys.add(key);
    expect(await redis.get(key)).toBe('10');
    for (const replica of [first, second]) {
      const refused = await lookUp(replica);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_requests');
    }
  });
});
