import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

describe('discovery on self-hosted', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform();
    await createOrganisation(platform, {
      name: 'Acme',
      hosts: ['platform.acme.test'],
      oidc: { issuer: 'https://idp.acme.test', clientId: 'workbench', apiScope: 'platform.api', audience: 'https://platform.acme.test' },
    });
    await createOrganisation(platform, { name: 'Bare', hosts: ['bare.test'] });
  });
  afterAll(() => platform.close());

  it("answers the organisation's document at its host name", async () => {
    const res = await call(platform, 'get', '/.well-known/platform.json', { host: 'platform.acme.test' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      edition: 'enterprise',
      apiBaseUrl: 'http://platform.acme.test',
      organisation: { id: expect.stringMatching(/^org_/), name: 'Acme' },
      auth: { issuer: 'https://idp.acme.test', clientId: 'workbench', apiScope: 'platform.api' },
      dpopSigningAlgs: ['ES256', 'EdDSA'],
    });
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
  });

  it('matches host names case-insensitively and ignores the port', async () => {
    const res = await call(platform, 'get', '/.well-known/platform.json', { host: 'PLATFORM.Acme.test:8443' });
    expect(res.status).toBe(200);
    expect(res.body.organisation.name).toBe('Acme');
  });

  it('answers 304 to a matching If-None-Match and 200 to a stale one', async () => {
    const first = await call(platform, 'get', '/.well-known/platform.json', { host: 'platform.acme.test' });
    const again = await call(platform, 'get', '/.well-known/platform.json', {
      host: 'platform.acme.test',
      headers: { 'If-None-Match': first.headers.etag as string },
    });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.etag).toBe(first.headers.etag);
    const stale = await call(platform, 'get', '/.well-known/platform.json', { host: 'platform.acme.test', headers: { 'If-None-Match': '"old"' } });
    expect(stale.status).toBe(200);
  });

  it('gives each organisation its own document and ETag', async () => {
    const acme = await call(platform, 'get', '/.well-known/platform.json', { host: 'platform.acme.test' });
    const bare = await call(platform, 'get', '/.well-known/platform.json', { host: 'bare.test' });
    expect(bare.body.organisation.name).toBe('Bare');
    expect(bare.body.auth).toEqual({});
    expect(bare.headers.etag).not.toBe(acme.headers.etag);
  });

  it('answers 404 unknown_tenant when no organisation is served at the host name', async () => {
    const res = await call(platform, 'get', '/.well-known/platform.json', { host: 'nobody.test' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('unknown_tenant');
    const tenantRoute = await call(platform, 'get', '/platform/v1/organisation', { host: 'nobody.test' });
    expect(tenantRoute.status).toBe(404);
    expect(tenantRoute.body.error).toBe('unknown_tenant');
  });

  it('ignores X-Forwarded-Host unless TRUST_PROXY trusts the proxy', async () => {
    const res = await call(platform, 'get', '/.well-known/platform.json', {
      host: 'nobody.test',
      headers: { 'X-Forwarded-Host': 'platform.acme.test', 'X-Forwarded-Proto': 'https' },
    });
    expect(res.status).toBe(404);
  });
});

describe('discovery behind a trusted proxy', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
    await createOrganisation(platform, { name: 'Proxied', hosts: ['proxied.test'] });
  });
  afterAll(() => platform.close());

  it('uses the forwarded host and scheme', async () => {
    const res = await call(platform, 'get', '/.well-known/platform.json', {
      host: 'internal:3000',
      headers: { 'X-Forwarded-Host': 'proxied.test', 'X-Forwarded-Proto': 'https' },
    });
    expect(res.status).toBe(200);
    expect(res.body.apiBaseUrl).toBe('https://proxied.test');
  });
});

describe('discovery on Cloud', () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({ env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' } });
  });
  afterAll(() => platform.close());

  it('answers one document for everyone, whatever the host', async () => {
    const one = await call(platform, 'get', '/.well-known/platform.json', { host: 'anything.test' });
    const two = await call(platform, 'get', '/.well-known/platform.json', { host: 'api.platform.test' });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ edition: 'cloud', apiBaseUrl: 'https://api.platform.test', dpopSigningAlgs: ['ES256', 'EdDSA'] });
    expect(two.body).toEqual(one.body);
    expect(one.headers['cache-control']).toBe('public, max-age=300');
    expect(two.headers.etag).toBe(one.headers.etag);
  });
});
