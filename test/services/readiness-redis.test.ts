import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connectRedis } from '../../adapters/state/redis.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

// Runs in the services project, against the real Redis (TEST_REDIS_URL). Redis stopped and
// started while the platform runs: redis-recovery.test.ts.
describe('readiness with a real Redis', () => {
  let platform: TestPlatform;
  const redis = connectRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

  beforeAll(async () => {
    await redis.connect();
    platform = await startPlatform({ redis });
  });
  afterAll(async () => {
    redis.disconnect();
    await platform.close();
  });

  it('reports the database, its migrations, Redis and what stands on it as ok', async () => {
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', redis: 'ok', rateLimits: 'ok', replayCache: 'ok', relay: 'ok' } });
  });
});
