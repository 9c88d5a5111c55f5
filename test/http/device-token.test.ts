import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice } from '../support/devices.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

let platform: TestPlatform;
let organisation: OrganisationRecord;
let host: string;

beforeAll(async () => {
  platform = await startPlatform();
  organisation = await createOrganisation(platform, { name: 'Devices Org' });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});
afterAll(() => platform.close());

describe('device tokens on GET /platform/v1/organisation', () => {
  it('accepts a Bearer device token', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(enrolled, 'GET', `http://${host}/platform/v1/organisation`) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: organisation.id, name: 'Devices Org', kind: 'enterprise', plan: 'enterprise', edition: 'enterprise' });
  });

  it.each(['ES256', 'Ed25519'] as const)('accepts a DPoP-bound token with a fresh %s proof', async (alg) => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg });
    const url = `http://${host}/platform/v1/organisation`;
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(enrolled, 'GET', url) });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(organisation.id);
  });

  it('refuses a bound token sent as Bearer with invalid_dpop_proof', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: { Authorization: `Bearer ${enrolled.tokens.access_token}` } });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_dpop_proof');
    expect(res.headers['www-authenticate']).toMatch(/^DPoP error="invalid_dpop_proof".*algs="ES256 EdDSA"/);
  });

  it('refuses a replayed proof', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
    const headers = await deviceHeaders(enrolled, 'GET', `http://${host}/platform/v1/organisation`);
    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers })).status).toBe(200);
    const again = await call(platform, 'get', '/platform/v1/organisation', { host, headers });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe('invalid_dpop_proof');
  });

  it('refuses a revoked device at once', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    await platform.services.deviceTokens.revokeDevice(enrolled.device.id);
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(enrolled, 'GET', '') });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });
});

describe('device scopes and organisations', () => {
  it('refuses a device whose token lacks organisation:read with 403 insufficient_scope', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    await platform.dataSource.query('UPDATE devices SET scope = ? WHERE id = ?', ['ingest:write', enrolled.device.id]);
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(enrolled, 'GET', '') });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('insufficient_scope');
  });

  it("refuses another organisation's bound token like an unknown one, before its proof is spent", async () => {
    const other = await createOrganisation(platform, { name: 'Elsewhere' });
    const person = await createPerson(platform, other.id);
    const theirs = await enrolDevice(platform, { organisationId: other.id, personId: person.id, alg: 'ES256' });
    const headers = await deviceHeaders(theirs, 'GET', `http://${host}/platform/v1/organisation`);
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized', message: 'the access token is not valid' });
    expect(res.headers['www-authenticate']).toContain('DPoP error="invalid_token"');
    const seen = await platform.dataSource.query('SELECT last_seen_at FROM devices WHERE id = ?', [theirs.device.id]);
    expect(seen[0].last_seen_at).toBeNull();
  });
});

describe('access token lifetime', () => {
  it('stops an access token at the end of DEVICE_ACCESS_TOKEN_TTL_SECONDS; its refresh token still works', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    const get = (token: string) => call(platform, 'get', '/platform/v1/organisation', { host, headers: { Authorization: `Bearer ${token}` } });
    platform.clock.advance(3600 * 1000 - 1);
    expect((await get(enrolled.tokens.access_token)).status).toBe(200);
    platform.clock.advance(1);
    const expired = await get(enrolled.tokens.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers['www-authenticate']).toContain('error="invalid_token"');
    const renewed = await call(platform, 'post', '/relay/v1/token', { host, body: { refresh_token: enrolled.tokens.refresh_token } });
    expect(renewed.status).toBe(200);
    expect((await get(renewed.body.access_token)).status).toBe(200);
  });
});
