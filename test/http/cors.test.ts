import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request, { type Response } from 'supertest';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';
import { loadConfig } from '../../src/config.js';

// CORS_ALLOWED_ORIGINS: off by default (no CORS header at all); with it, only the listed origins.

const CONSOLE = 'https://console.example.com';
const LOCAL_CONSOLE = 'http://localhost:5173';

function corsHeaders(res: Response): string[] {
  return Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
}

function list(value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim().toLowerCase()).filter(Boolean);
}

function preflight(platform: TestPlatform, origin: string, path = '/platform/v1/projects') {
  return request(platform.app)
    .options(path)
    .set('Host', 'localhost')
    .set('Origin', origin)
    .set('Access-Control-Request-Method', 'POST')
    .set('Access-Control-Request-Headers', 'authorization, dpop, content-type, x-platform-organisation, if-match');
}

describe('without CORS_ALLOWED_ORIGINS', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startPlatform();
  });
  afterAll(() => platform.close());

  it('sends no CORS header and answers no preflight', async () => {
    const res = await call(platform, 'get', '/healthz', { headers: { Origin: CONSOLE } });
    expect(res.status).toBe(200);
    expect(corsHeaders(res)).toEqual([]);
    const options = await preflight(platform, CONSOLE);
    expect(options.status).toBe(405);
    expect(options.body).toMatchObject({ error: 'method_not_allowed' });
    expect(corsHeaders(options)).toEqual([]);
  });
});

describe('with CORS_ALLOWED_ORIGINS', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startPlatform({ env: { CORS_ALLOWED_ORIGINS: `${CONSOLE}, ${LOCAL_CONSOLE}` } });
  });
  afterAll(() => platform.close());

  it('answers the preflight of a listed origin with the methods and headers the API takes', async () => {
    for (const origin of [CONSOLE, LOCAL_CONSOLE]) {
      const res = await preflight(platform, origin);
      expect(res.status).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(origin);
      expect(list(res.headers['access-control-allow-methods'])).toEqual(['get', 'head', 'post', 'put', 'patch', 'delete']);
      expect(list(res.headers['access-control-allow-headers'])).toEqual(
        expect.arrayContaining(['authorization', 'dpop', 'x-platform-organisation', 'if-match', 'if-none-match', 'content-type']),
      );
      expect(res.headers['access-control-max-age']).toBe('600');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(list(res.headers.vary)).toContain('origin');
    }
  });

  it("lets a listed origin's page read the answer, refusals included, and the headers clients need", async () => {
    const res = await call(platform, 'get', '/platform/v1/projects', { host: 'nobody.test', headers: { Origin: CONSOLE } });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'unknown_tenant' });
    expect(res.headers['access-control-allow-origin']).toBe(CONSOLE);
    expect(list(res.headers['access-control-expose-headers'])).toEqual(
      expect.arrayContaining(['etag', 'dpop-nonce', 'retry-after', 'ratelimit', 'ratelimit-policy', 'www-authenticate', 'x-request-id']),
    );
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(list(res.headers.vary)).toContain('origin');
  });

  it('gives another origin, or a request without one, no CORS header', async () => {
    for (const origin of ['https://evil.example', 'https://console.example.com.evil.example', 'http://console.example.com', 'null']) {
      const res = await call(platform, 'get', '/healthz', { headers: { Origin: origin } });
      expect(res.status).toBe(200);
      expect(corsHeaders(res)).toEqual([]);
      // A cache keyed without Origin would hand this answer to a listed origin.
      expect(list(res.headers.vary)).toContain('origin');
      const options = await preflight(platform, origin);
      expect(options.status).toBe(405);
      expect(corsHeaders(options)).toEqual([]);
    }
    const plain = await call(platform, 'get', '/healthz');
    expect(corsHeaders(plain)).toEqual([]);
  });
});

describe('CORS_ALLOWED_ORIGINS is checked at start', () => {
  it.each(['*', 'https://console.example.com/', 'https://console.example.com/app', 'console.example.com', 'null', 'http://console.example.com', 'https://a.example,,https://b.example', 'https://user@console.example.com'])(
    'refuses %s',
    (value) => {
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value })).toThrow(/CORS_ALLOWED_ORIGINS: must be/);
    },
  );

  it('accepts exact https origins, with ports, and http on loopback', () => {
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: 'https://console.example.com:8443,http://127.0.0.1:5173, http://[::1]:3001' }).corsAllowedOrigins).toEqual([
      'https://console.example.com:8443',
      'http://127.0.0.1:5173',
      'http://[::1]:3001',
    ]);
    expect(loadConfig({}).corsAllowedOrigins).toEqual([]);
  });
});
