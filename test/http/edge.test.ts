import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

let platform: TestPlatform;
let organisation: OrganisationRecord;
let host: string;

beforeAll(async () => {
  platform = await startPlatform();
  organisation = await createOrganisation(platform);
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});
afterAll(() => platform.close());

describe('edge', () => {
  it('echoes a well-formed X-Request-Id and generates one otherwise', async () => {
    const kept = await call(platform, 'get', '/healthz', { headers: { 'X-Request-Id': 'abc-123' } });
    expect(kept.headers['x-request-id']).toBe('abc-123');
    const replaced = await call(platform, 'get', '/healthz', { headers: { 'X-Request-Id': 'bad id\twith spaces' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const generated = await call(platform, 'get', '/healthz');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sets security headers (helmet)', async () => {
    const res = await call(platform, 'get', '/healthz');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('answers unknown routes with 404 not_found in the error body', async () => {
    const res = await call(platform, 'get', '/nothing/here', { host });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found', message: 'no such route' });
  });

  it('answers 405 method_not_allowed with Allow on every served path, for every method it does not serve', async () => {
    const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;
    const paths = new Map<string, Set<string>>();
    // A refused method is declared (the OpenAPI document says it answers 405), not served.
    for (const route of platform.registry.routes.filter((r) => !r.cloudOnly)) {
      const served = paths.get(route.path) ?? paths.set(route.path, new Set()).get(route.path)!;
      if (!route.refused) served.add(route.method);
    }
    expect(paths.size).toBeGreaterThan(10);
    let checked = 0;
    for (const [path, served] of paths) {
      const concrete = path.replace(/\{\w+\}/g, 'x1');
      const allow = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => served.has(m.toLowerCase()) || (m === 'HEAD' && served.has('get')));
      for (const method of methods.filter((m) => !served.has(m))) {
        const res = await call(platform, method, concrete, { host });
        expect({ path, method, status: res.status, body: res.body, allow: res.headers.allow }).toEqual({
          path,
          method,
          status: 405,
          body: { error: 'method_not_allowed', message: 'this method is not allowed on this path' },
          allow: allow.join(', '),
        });
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('decides HEAD and OPTIONS: HEAD is served wherever GET is, OPTIONS nowhere (no CORS preflight)', async () => {
    const head = await request(platform.app).head('/healthz');
    expect(head.status).toBe(200);
    expect(head.text ?? '').toBe('');
    const options = await request(platform.app).options('/healthz');
    expect(options.status).toBe(405);
    expect(options.headers.allow).toBe('GET, HEAD');
    const onPost = await request(platform.app).head('/relay/v1/device/code').set('Host', host);
    expect(onPost.status).toBe(405);
    expect(onPost.headers.allow).toBe('POST');
  });

  it("matches a path as Express's router does, whether or not the path has a router of its own: case, one trailing slash", async () => {
    // `/healthz` and `/policy/v1` are found through the own routers' map (route.ts `mount`);
    // `/platform/v1/projects/{projectId}` through the shared router.
    for (const path of ['/healthz', '/HEALTHZ', '/healthz/', '/HealthZ/']) {
      expect({ path, status: (await request(platform.app).get(path)).status }).toEqual({ path, status: 200 });
    }
    for (const path of ['/healthz//', '/health%7A', '/healthz/x', '//healthz']) {
      expect({ path, status: (await request(platform.app).get(path)).status }).toEqual({ path, status: 404 });
    }
    for (const path of ['/policy/v1', '/POLICY/v1/', '/platform/v1/projects/prj_x', '/PLATFORM/v1/Projects/prj_x/']) {
      const res = await request(platform.app).get(path).set('Host', host);
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status: 401, error: 'unauthorized' });
      const refused = await request(platform.app).options(path).set('Host', host);
      expect({ path, status: refused.status, error: refused.body.error }).toEqual({ path, status: 405, error: 'method_not_allowed' });
    }
  });

  it('answers 405 with Allow on the approval pages too, as a page', async () => {
    const res = await request(platform.app).post('/device').set('Host', host);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const signIn = await request(platform.app).get('/device/sign-in').set('Host', host);
    expect(signIn.status).toBe(405);
    expect(signIn.headers.allow).toBe('POST');
  });

  it('answers 404 not_found for a path nothing serves, whatever the method', async () => {
    for (const method of ['get', 'post', 'delete'] as const) {
      const res = await call(platform, method, '/platform/v1/nothing', { host });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it('refuses a body larger than the limit with 413 before any work is done', async () => {
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, raw: { type: 'application/json', data: big } });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it('refuses malformed JSON with 400 invalid_request', async () => {
    // A public route: bodies are read only after authentication, so it is where a stranger's
    // malformed body is read at all.
    const res = await call(platform, 'post', '/relay/v1/device/code', { host, raw: { type: 'application/json', data: '{"a":' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('reads no body before authentication, and none at all for an unknown route', async () => {
    const unauthenticated = await call(platform, 'get', '/platform/v1/organisation', { host, raw: { type: 'application/json', data: '{"a":' } });
    expect(unauthenticated.status).toBe(401);
    const unknown = await call(platform, 'post', '/nothing/here', { host, raw: { type: 'application/json', data: '{"a":' } });
    expect(unknown.status).toBe(404);
  });

  it('refuses a body of the wrong media type with 415', async () => {
    const res = await call(platform, 'get', '/healthz', { raw: { type: 'text/plain', data: 'hello' } });
    expect(res.status).toBe(415);
    expect(res.body.error).toBe('unsupported_media_type');
  });

  it('keeps credentials out of the logs', async () => {
    platform.logs.length = 0;
    await call(platform, 'get', '/platform/v1/organisation', {
      host,
      headers: { Authorization: 'Bearer platform_at_SECRETVALUE123', DPoP: 'eyJproof.SECRETPROOF.sig', Cookie: 'session=SECRETCOOKIE' },
    });
    const written = JSON.stringify(platform.logs);
    expect(platform.logs.length).toBeGreaterThan(0);
    expect(written).not.toContain('SECRETVALUE123');
    expect(written).not.toContain('SECRETPROOF');
    expect(written).not.toContain('SECRETCOOKIE');
    expect(written).toContain('[REDACTED]');
  });
});
