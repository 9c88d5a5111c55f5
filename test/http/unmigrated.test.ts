import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { readsDatabase, type RouteDefinition } from '../../src/http/route.js';
import { call, serverOf, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * MIGRATE_ON_START=false on an empty database, as the Helm chart's replicas start before (or
 * beside) the migration Job: every route that reads the database answers 503 `unavailable` with
 * `Retry-After`, never a 500; what never reads it still answers; readiness says
 * `migrations: pending`. Once the migrations have run (here on the same database, as `platform
 * migrate` would from elsewhere) the same process serves, without a restart. SQLite here;
 * `npm run test:services` runs this file again on an empty MariaDB database.
 */

/** A request path for a route's template: each parameter filled with a value of its own. */
function pathOf(route: RouteDefinition): string {
  return route.path.replace(/\{(\w+)\}/g, (_whole, name: string) => `x-${name}`);
}

const UNAVAILABLE = {
  error: 'unavailable',
  message: 'the service is being upgraded (its database migrations have not run yet); try again shortly',
};

for (const deployment of ['self-hosted', 'cloud'] as const) {
  describe(`an empty database on ${deployment} (MIGRATE_ON_START=false, before \`platform migrate\`)`, () => {
    let platform: TestPlatform;

    beforeAll(async () => {
      platform = await startPlatform({
        migrate: false,
        env: {
          MIGRATE_ON_START: 'false',
          PLATFORM_DEPLOYMENT: deployment,
          ...(deployment === 'cloud' ? { PLATFORM_BASE_URL: 'https://api.platform.test' } : {}),
          // Keys in the database: the start must not need the signing_keys table.
          SIGNING_KEYS_SECRET: 'c2lnbmluZy1rZXlzLXNlY3JldC1mb3ItdW5taWdyYXRlZC10ZXN0cw',
        },
      });
    });
    afterAll(() => platform.close());

    it('answers the discovery document 503 `unavailable`, not 500 (the reported case)', async () => {
      const res = await call(platform, 'get', '/.well-known/platform.json', { host: 'localhost' });
      if (deployment === 'cloud') {
        // Cloud answers one document for everyone, from its configuration alone.
        expect(res.status).toBe(200);
        return;
      }
      expect(res.status).toBe(503);
      expect(res.body).toEqual(UNAVAILABLE);
      expect(res.headers['retry-after']).toBe('5');
    });

    it('answers every route that reads the database 503 `unavailable` with Retry-After, whatever the request', async () => {
      const routes = platform.registry.routes.filter((route) => !route.refused && readsDatabase(route, platform.profile) && platform.registry.find(route.method, pathOf(route)) === route);
      expect(routes.length).toBeGreaterThan(40);
      const answers: string[] = [];
      for (const route of routes) {
        const res = await call(platform, route.method, pathOf(route), {
          host: 'localhost',
          headers: { Authorization: 'Bearer platform_at_not-a-token' },
          ...(route.method === 'get' || route.method === 'delete' ? {} : { body: {} }),
        });
        answers.push(`${route.method.toUpperCase()} ${route.path}: ${res.status} ${String(res.body?.error)} ${String(res.headers['retry-after'])}`);
      }
      expect(answers).toEqual(routes.map((route) => `${route.method.toUpperCase()} ${route.path}: 503 unavailable 5`));
      expect(platform.logs.filter((line) => line.msg === 'unexpected failure')).toEqual([]);
    });

    it('still answers what never reads the database, and readiness names the pending migrations', async () => {
      expect((await call(platform, 'get', '/healthz')).status).toBe(200);
      expect((await call(platform, 'get', '/openapi.json')).status).toBe(200);
      const ready = await call(platform, 'get', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({ error: 'not_ready', checks: { database: 'ok', migrations: 'pending' } });
      const metrics = await request(serverOf(platform.app)).get('/metrics');
      expect(metrics.status).toBe(200);
    });

    it('answers the approval page 503 too (a page): a missing table is an unmigrated schema, not a bug', async () => {
      // Self-hosted, the page reads the organisation at its host name; Cloud's first page reads nothing.
      if (deployment === 'cloud') return;
      const res = await request(serverOf(platform.app)).get('/device').set('Host', 'localhost');
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toContain('Not available just now');
      expect(res.headers['retry-after']).toBe('5');
      const refusal = platform.logs.find((line) => line.msg === 'database schema older than this build; page refused');
      expect(refusal).toMatchObject({ level: 40, dependency: 'database' });
      expect(['SQLITE_ERROR', 'ER_NO_SUCH_TABLE']).toContain(refusal?.errorCode);
      expect(JSON.stringify(refusal)).not.toMatch(/"stack"|\\n\s+at /);
    });

    it('lets the sweeper skip its turn quietly: there is nothing to sweep yet', async () => {
      expect(await platform.sweeper.sweep({ force: true })).toMatchObject({ outcome: 'skipped', reason: 'migrations pending' });
      expect(platform.logs.filter((line) => line.msg === 'sweep failed')).toEqual([]);
    });

    it('serves once the migrations have run, without a restart (at most a second later)', async () => {
      await platform.dataSource.runMigrations({ transaction: 'each' });
      platform.clock.advance(1_000);
      const discovery = await call(platform, 'get', '/.well-known/platform.json', { host: 'localhost' });
      expect(discovery.status).toBe(deployment === 'cloud' ? 200 : 404);
      if (deployment === 'self-hosted') expect(discovery.body.error).toBe('unknown_tenant');
      expect((await call(platform, 'get', '/readyz')).status).toBe(200);
      expect((await platform.sweeper.sweep({ force: true })).outcome).toBe('swept');
      const jwks = await call(platform, 'get', '/.well-known/jwks.json');
      expect(jwks.status).toBe(200);
      expect(jwks.body.keys.length).toBeGreaterThan(0);
    });
  });
}

describe('a table missing from a migrated database (dropped by hand, or a restore that left it out)', () => {
  it('answers 503 `unavailable`, logged as one warning line without a stack, never a 500', async () => {
    const platform = await startPlatform();
    try {
      await platform.dataSource.query('DROP TABLE organisation_hosts');
      const res = await call(platform, 'get', '/.well-known/platform.json', { host: 'localhost' });
      expect(res.status).toBe(503);
      expect(res.body).toEqual(UNAVAILABLE);
      expect(res.headers['retry-after']).toBe('5');
      const line = platform.logs.find((entry) => entry.msg === 'database schema older than this build; request refused');
      expect(line).toMatchObject({ level: 40, dependency: 'database', reason: expect.stringMatching(/organisation_hosts/) });
      expect(platform.logs.filter((entry) => entry.msg === 'unexpected failure')).toEqual([]);
    } finally {
      await platform.close();
    }
  });
});
