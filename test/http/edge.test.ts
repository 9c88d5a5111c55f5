import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
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
