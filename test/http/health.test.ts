import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, startPlatform, unreachableRedis, type TestPlatform } from '../support/platform.js';

// Readiness on SQLite (npm test) and on MariaDB (npm run test:services reruns this file there).
// Redis going away and coming back, with a real redis-server: test/services/redis-recovery.test.ts.

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

  it('is ready when the database answers and is migrated, and says Redis is not configured', async () => {
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'ready',
      checks: { database: 'ok', migrations: 'ok', redis: 'not configured', rateLimits: 'in process', replayCache: 'in process', relay: 'in process' },
    });
    expect(res.headers['cache-control']).toBe('no-store');
  });
});

describe('readiness while migrations are pending (MIGRATE_ON_START=false leaves them to `platform migrate`)', () => {
  it('answers 503 naming the migrations until they are applied, then 200 without a restart', async () => {
    const platform = await startPlatform({ env: { MIGRATE_ON_START: 'false' } });
    try {
      await platform.dataSource.undoLastMigration();
      const pending = await call(platform, 'get', '/readyz');
      expect(pending.status).toBe(503);
      expect(pending.body).toEqual({
        error: 'not_ready',
        message: 'not ready: migrations is not usable',
        checks: { database: 'ok', migrations: 'pending', redis: 'not configured', rateLimits: 'in process', replayCache: 'in process', relay: 'in process' },
      });
      expect((await call(platform, 'get', '/readyz')).status).toBe(503);

      // What `platform migrate` does, from another process, while this one keeps serving.
      await platform.dataSource.runMigrations({ transaction: 'each' });
      const ready = await call(platform, 'get', '/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.checks.migrations).toBe('ok');
    } finally {
      await platform.close();
    }
  });
});

describe('readiness when a dependency is down', () => {
  it('answers 503 with a JSON reason when the database is gone', async () => {
    const platform = await startPlatform();
    await platform.dataSource.destroy();
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'not_ready', checks: { database: 'unreachable', migrations: 'unreachable' } });
    expect(res.body.message).toBe('not ready: database and migrations are not usable');
    expect(JSON.stringify(res.body)).not.toMatch(/SQLITE|select|stack|ECONN/i);
    await platform.database.drop();
  });

  it('answers 503 naming Redis and every component on it when Redis is configured but unreachable', async () => {
    // Port 1 on loopback: nothing listens there.
    const redis = await unreachableRedis();
    const platform = await startPlatform({ redis });
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: 'not_ready',
      message: 'not ready: redis, rateLimits, replayCache and relay are not usable',
      checks: { database: 'ok', migrations: 'ok', redis: 'unreachable', rateLimits: 'unreachable', replayCache: 'unreachable', relay: 'not subscribed' },
    });
    redis.disconnect();
    await platform.close();
  });

  it('says rate limits are disabled when RATE_LIMITS_ENABLED=false, and stays ready', async () => {
    const platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false' } });
    const res = await call(platform, 'get', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body.checks.rateLimits).toBe('disabled');
    await platform.close();
  });
});
