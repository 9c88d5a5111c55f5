import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connectRedis } from '../../adapters/state/redis.js';
import { buildApp, type Platform } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { CONSOLE_REDIRECT, pkce, startCloud, type CloudPlatform } from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * Cloud sign-in limits with a real Redis (TEST_REDIS_URL): two replicas count together, an IPv6
 * /64 is one counter in Redis, and the emailed-code start answers `slow_down` on either replica.
 */

const redis = connectRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
let first: CloudPlatform;
let second: Platform;
const keys = new Set<string>();
let challenge: string;
let mailbox = 0;

beforeAll(async () => {
  await redis.connect();
  first = await startCloud({ redis, env: { RATE_LIMITS_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '4', TRUST_PROXY: 'loopback' } });
  second = buildApp({ config: first.config, dataSource: first.dataSource, clock: first.clock, logger: createLogger('silent'), redis });
  ({ challenge } = await pkce());
});

afterAll(async () => {
  if (keys.size) await redis.del(...keys);
  redis.disconnect();
  await first?.close();
});

const emailStart = (replica: Platform, from: string) =>
  call(replica, 'post', '/auth/v1/email/start', {
    headers: { 'X-Forwarded-For': from },
    body: { email: `replicated${++mailbox}@example.test`, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge },
  });

describe('sign-in limits across replicas', () => {
  it('counts an IPv6 /64 once in Redis, whichever replica is asked', async () => {
    const [a, b] = randomBytes(2);
    const prefix = `2001:db8:${a!.toString(16)}:${b!.toString(16)}`;
    keys.add(`platform:rl:auth-email-start-address:ip:${prefix}::/64`);
    const answers = [];
    for (const [index, suffix] of ['::1', '::2', ':ffff::3', '::4'].entries()) answers.push(await emailStart(index % 2 ? second : first, `${prefix}${suffix}`));
    expect(answers.map((res) => res.status)).toEqual([202, 202, 202, 202]);
    const refused = await emailStart(second, `${prefix}::99`);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('slow_down');
    expect(refused.headers['retry-after']).toBeDefined();
    expect(Number(await redis.get(`platform:rl:auth-email-start-address:ip:${prefix}::/64`))).toBeGreaterThanOrEqual(5);
  });
});
