import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, startPlatform, unreachableRedis, type TestPlatform } from '../support/platform.js';

describe('health', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform();
  });
  afterAll(() => platform.close());

  it('answers liveness without a tenant or a token', async () => {
    const res = await call(platform, 'get', '/healthz', { host: 'no-such-tenant.test' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('is ready when the database answers, and says Redis is not configured', async () => {
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'not configured', relay: 'not configured' } });
  });
});

describe('readiness when a dependency is down', () => {
  it('answers 503 with a JSON reason when the database is gone', async () => {
    const platform = await startPlatform();
    await platform.dataSource.destroy();
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'not_ready', checks: { database: 'unreachable' } });
    expect(JSON.stringify(res.body)).not.toMatch(/SQLITE|select|stack/i);
    await platform.database.drop();
  });

  it('answers 503 when Redis is configured but unreachable', async () => {
    // Port 1 on loopback: nothing listens there.
    const redis = await unreachableRedis();
    const platform = await startPlatform({ redis });
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'not_ready', checks: { database: 'ok', redis: expect.stringMatching(/unreachable|timed out/) } });
    redis.disconnect();
    await platform.close();
  });
});
