import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DeviceEntity, type DeviceRecord } from '../../src/modules/devices/entities.js';
import { DEVICE_REFRESH_RATE_LIMIT } from '../../src/modules/devices/token-routes.js';
import type { TokenAnswer } from '../../src/modules/devices/tokens.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { newId } from '../../src/util/ids.js';
import { scopeString } from '../../src/modules/devices/scopes.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import { newProofKey, proofKeyOf, proofSigner, type ProofKey } from '../support/dpop-proofs.js';
import { expectOauthError } from '../support/oauth.js';
import { call, createOrganisation, startPlatform, startWithOrganisation, type TestPlatform } from '../support/platform.js';

/**
 * `POST /relay/v1/token` (spec 4.6): a refresh token for a new pair, rotated on every use; a
 * replaced token presented again ends every token of the device, except for a concurrent
 * refresh within the grace; a key-bound device proves its key (RFC 9449 5).
 */

const GRACE_SECONDS = 10;
const REFRESH_TTL_SECONDS = 3600;

// Whole seconds, so that proof times (seconds) and the platform clock line up.
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let organisation: OrganisationRecord;
let other: OrganisationRecord;
let host: string;
let otherHost: string;
let approverId: string;

/** Every token handed out in this file, to prove afterwards that none was stored or logged. */
const tokensSeen: string[] = [];

beforeAll(async () => {
  platform = await startPlatform({
    clock,
    env: {
      RATE_LIMITS_ENABLED: 'false',
      DEVICE_REFRESH_GRACE_SECONDS: String(GRACE_SECONDS),
      DEVICE_REFRESH_TOKEN_TTL_SECONDS: String(REFRESH_TTL_SECONDS),
    },
  });
  organisation = await createOrganisation(platform, { name: 'Acme' });
  other = await createOrganisation(platform, { name: 'Other' });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  otherHost = (await platform.services.organisations.hostsOf(other.id))[0]!;
  approverId = (await createPerson(platform, organisation.id, 'admin')).id;
});

afterAll(() => platform?.close());

// DPoP proofs signed here so that `iat` follows the platform's clock.
const proof = proofSigner(clock);

const tokenUrl = (at = host) => `http://${at}/relay/v1/token`;

interface Device {
  device: DeviceRecord;
  tokens: TokenAnswer;
  key?: ProofKey;
}

/** A node enrolled directly (enrolment has its own tests), bound to a fresh key when `bound`. */
async function enrol(options: { bound?: boolean; organisationId?: string; personId?: string } = {}, target = platform): Promise<Device> {
  const key = options.bound ? await newProofKey() : undefined;
  const device: DeviceRecord = {
    id: newId('dev'),
    organisationId: options.organisationId ?? organisation.id,
    personId: options.personId ?? approverId,
    name: 'Rack node',
    kind: 'node',
    workspaceId: null,
    nodeId: `node-${randomUUID()}`,
    enrolledVia: 'join_key',
    joinKeyId: null,
    dpopJkt: key?.jkt ?? null,
    scope: scopeString('node'),
    createdAt: clock.now(),
    lastSeenAt: null,
    revokedAt: null,
  };
  const tokens = await target.dataSource.transaction(async (manager) => {
    await manager.insert(DeviceEntity, device);
    return target.services.deviceTokens.issue(manager, device);
  });
  tokensSeen.push(tokens.access_token, tokens.refresh_token);
  return key ? { device, tokens, key } : { device, tokens };
}

async function refresh(refreshToken: string, options: { key?: ProofKey; headers?: Record<string, string>; at?: string; form?: Record<string, string> } = {}): Promise<Response> {
  const at = options.at ?? host;
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.DPoP = await proof(options.key, tokenUrl(at));
  const res = options.form
    ? await call(platform, 'post', '/relay/v1/token', { host: at, headers, raw: { type: 'application/x-www-form-urlencoded', data: new URLSearchParams(options.form).toString() } })
    : await call(platform, 'post', '/relay/v1/token', { host: at, headers, body: { refresh_token: refreshToken } });
  if (res.status === 200) tokensSeen.push(res.body.access_token, res.body.refresh_token);
  return res;
}

/** GET /platform/v1/organisation with an access token: 200 while the token works. */
async function useAccessToken(accessToken: string, key?: ProofKey, at = host): Promise<number> {
  const url = `http://${at}/platform/v1/organisation`;
  const headers: Record<string, string> = key
    ? { Authorization: `DPoP ${accessToken}`, DPoP: await proof(key, url, { method: 'GET', accessToken }) }
    : { Authorization: `Bearer ${accessToken}` };
  return (await call(platform, 'get', '/platform/v1/organisation', { host: at, headers })).status;
}

describe('rotation', () => {
  it('answers a new pair, no-store, and the new access token works', async () => {
    const { device, tokens } = await enrol();
    const res = await refresh(tokens.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^platform_at_/),
      refresh_token: expect.stringMatching(/^platform_rt_/),
      expires_in: 3600,
      token_type: 'Bearer',
      device_id: device.id,
      scope: 'organisation:read policy:read ingest:write relay:connect',
    });
    expect(res.body.access_token).not.toBe(tokens.access_token);
    expect(res.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(await useAccessToken(res.body.access_token)).toBe(200);
  });

  it('rotates on every use: each new refresh token works once', async () => {
    let { tokens } = await enrol();
    for (let i = 0; i < 3; i++) {
      clock.advance((GRACE_SECONDS + 1) * 1000);
      const res = await refresh(tokens.refresh_token);
      expect(res.status).toBe(200);
      tokens = res.body as TokenAnswer;
    }
    expect(await useAccessToken(tokens.access_token)).toBe(200);
  });

  it('ends every token of the device when a replaced refresh token comes back after the grace', async () => {
    const { tokens } = await enrol();
    const first = await refresh(tokens.refresh_token);
    const second = await refresh(first.body.refresh_token);
    expect(second.status).toBe(200);
    expect(await useAccessToken(second.body.access_token)).toBe(200);

    clock.advance(GRACE_SECONDS * 1000 + 1);
    expectOauthError(await refresh(tokens.refresh_token), 'invalid_grant', /already used.*revoked/);
    // The newest pair, which the replay never saw, stops working too.
    expect(await useAccessToken(second.body.access_token)).toBe(401);
    expectOauthError(await refresh(second.body.refresh_token), 'invalid_grant', /revoked/);
  });

  it('accepts a form-encoded request with grant_type refresh_token (RFC 6749 6)', async () => {
    const { tokens } = await enrol();
    const res = await refresh(tokens.refresh_token, { form: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: 'node-agent' } });
    expect(res.status).toBe(200);
    expect(res.body.refresh_token).toMatch(/^platform_rt_/);
  });

  it('refuses another grant_type with unsupported_grant_type, and the token keeps working', async () => {
    const { tokens } = await enrol();
    expectOauthError(await refresh(tokens.refresh_token, { form: { grant_type: 'password', refresh_token: tokens.refresh_token } }), 'unsupported_grant_type');
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  it.each([
    ['no refresh_token', {}, 'body.refresh_token'],
    ['an empty refresh_token', { refresh_token: '' }, 'body.refresh_token'],
    ['an unknown field', { refresh_token: 'platform_rt_x', scope: 'everything' }, 'body.scope'],
  ])('refuses %s with invalid_request naming the field', async (_case, body, field) => {
    const res = await call(platform, 'post', '/relay/v1/token', { host, body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });
});

describe('the concurrent-refresh grace', () => {
  it('gives two concurrent refreshes of the same token the same new pair', async () => {
    const { tokens } = await enrol();
    const [a, b] = await Promise.all([refresh(tokens.refresh_token), refresh(tokens.refresh_token)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
    expect(await useAccessToken(a.body.access_token)).toBe(200);
    // Only one pair was made: its refresh token rotates normally.
    expect((await refresh(a.body.refresh_token)).status).toBe(200);
  });

  it('gives a late twin within the grace the same pair, with what is left of its lifetime', async () => {
    const { tokens } = await enrol();
    const first = await refresh(tokens.refresh_token);
    clock.advance(GRACE_SECONDS * 1000 - 1000);
    const twin = await refresh(tokens.refresh_token);
    expect(twin.status).toBe(200);
    expect({ ...twin.body, expires_in: 0 }).toEqual({ ...first.body, expires_in: 0 });
    expect(twin.body.expires_in).toBe(3600 - (GRACE_SECONDS - 1));
  });

  it('ends everything when the old token comes back within the grace after the new one was used', async () => {
    const { tokens } = await enrol();
    const first = await refresh(tokens.refresh_token);
    const second = await refresh(first.body.refresh_token);
    expect(second.status).toBe(200);
    expectOauthError(await refresh(tokens.refresh_token), 'invalid_grant', /already used/);
    expect(await useAccessToken(second.body.access_token)).toBe(401);
  });

  it('gives a bound device the same pair for two concurrent refreshes with two proofs of its key', async () => {
    const { tokens, key } = await enrol({ bound: true });
    const [a, b] = await Promise.all([refresh(tokens.refresh_token, { key }), refresh(tokens.refresh_token, { key })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body).toEqual(b.body);
    expect(a.body.token_type).toBe('DPoP');
  });

  it("refuses a grace replay signed by another key, and leaves the device's tokens standing", async () => {
    const { tokens, key } = await enrol({ bound: true });
    const first = await refresh(tokens.refresh_token, { key });
    expect(first.status).toBe(200);
    expectOauthError(await refresh(tokens.refresh_token, { key: await newProofKey() }), 'invalid_dpop_proof', /another key/);
    expect(await useAccessToken(first.body.access_token, key)).toBe(200);
    const twin = await refresh(tokens.refresh_token, { key });
    expect(twin.status).toBe(200);
    expect(twin.body.refresh_token).toBe(first.body.refresh_token);
  });
});

describe('refused refresh tokens', () => {
  it('refuses an unknown token, and an access token presented as a refresh token', async () => {
    const { tokens } = await enrol();
    expectOauthError(await refresh(`platform_rt_${randomUUID()}`), 'invalid_grant', /not valid/);
    expectOauthError(await refresh('not-a-token'), 'invalid_grant', /not valid/);
    expectOauthError(await refresh(tokens.access_token), 'invalid_grant', /not valid/);
    expect((await refresh(tokens.refresh_token)).status).toBe(200);
  });

  it('refuses a revoked device', async () => {
    const { device, tokens } = await enrol();
    await platform.services.deviceTokens.revokeDevice(device.id);
    expectOauthError(await refresh(tokens.refresh_token), 'invalid_grant', /revoked/);
  });

  it("refuses another organisation's refresh token at this host like an unknown one", async () => {
    const theirs = await enrol({ organisationId: other.id, personId: (await createPerson(platform, other.id, 'admin')).id });
    expectOauthError(await refresh(theirs.tokens.refresh_token), 'invalid_grant', /not valid/);
    const there = await refresh(theirs.tokens.refresh_token, { at: otherHost });
    expect(there.status).toBe(200);
    expect(await useAccessToken(there.body.access_token, undefined, otherHost)).toBe(200);
  });
});

describe('key-bound devices (DPoP)', () => {
  it('answers token_type DPoP to a refresh with a proof of the bound key; the new token works', async () => {
    const { tokens, key } = await enrol({ bound: true });
    const res = await refresh(tokens.refresh_token, { key });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    expect(await useAccessToken(res.body.access_token, key)).toBe(200);
    expect(await useAccessToken(res.body.access_token)).toBe(401);
  });

  it.each([
    ['no proof', async () => ({})],
    ['a proof by another key', async () => ({ DPoP: await proof(await newProofKey(), tokenUrl()) })],
    ['a proof for another URL', async (key: ProofKey) => ({ DPoP: await proof(key, `http://${host}/relay/v1/device/join`) })],
    ['a proof for GET', async (key: ProofKey) => ({ DPoP: await proof(key, tokenUrl(), { method: 'GET' }) })],
    ['a proof a minute and more old', async (key: ProofKey) => {
      clock.advance(-61_000);
      const old = await proof(key, tokenUrl());
      clock.advance(61_000);
      return { DPoP: old };
    }],
    ['two proofs', async (key: ProofKey) => ({ DPoP: `${await proof(key, tokenUrl())}, ${await proof(key, tokenUrl())}` })],
  ])('refuses %s with 400 invalid_dpop_proof, and the token still works with a good one', async (_case, headers) => {
    const { tokens, key } = await enrol({ bound: true });
    const res = await refresh(tokens.refresh_token, { headers: await headers(key!) });
    expectOauthError(res, 'invalid_dpop_proof');
    expect(res.headers['cache-control']).toBeUndefined();
    expect((await refresh(tokens.refresh_token, { key })).status).toBe(200);
  });

  it('refuses a replayed proof', async () => {
    const { tokens, key } = await enrol({ bound: true });
    const headers = { DPoP: await proof(key!, tokenUrl()) };
    const first = await refresh(tokens.refresh_token, { headers });
    expect(first.status).toBe(200);
    expectOauthError(await refresh(first.body.refresh_token, { headers }), 'invalid_dpop_proof', /already used/);
  });

  it('does not let a replay without the key end the bound device\'s tokens', async () => {
    const { tokens, key } = await enrol({ bound: true });
    const first = await refresh(tokens.refresh_token, { key });
    clock.advance((GRACE_SECONDS + 1) * 1000);
    // A thief holding the old refresh token but not the key.
    expectOauthError(await refresh(tokens.refresh_token, { key: await newProofKey() }), 'invalid_dpop_proof');
    expect(await useAccessToken(first.body.access_token, key)).toBe(200);
    // The device itself replaying it is reuse, and ends everything.
    expectOauthError(await refresh(tokens.refresh_token, { key }), 'invalid_grant', /already used/);
    expect(await useAccessToken(first.body.access_token, key)).toBe(401);
  });

  it('refuses a proof sent for a device that is not bound, rather than bind it now', async () => {
    const { tokens } = await enrol();
    expectOauthError(await refresh(tokens.refresh_token, { key: await newProofKey() }), 'invalid_dpop_proof', /not bound/);
    const plain = await refresh(tokens.refresh_token);
    expect(plain.status).toBe(200);
    expect(plain.body.token_type).toBe('Bearer');
  });
});

describe('storage and logs', () => {
  it('stores only hashes of the tokens', async () => {
    const { device, tokens } = await enrol();
    const first = await refresh(tokens.refresh_token);
    const twin = await refresh(tokens.refresh_token);
    expect(twin.status).toBe(200);
    const rows = await platform.dataSource.query<Record<string, unknown>[]>('SELECT * FROM device_tokens WHERE device_id = ?', [device.id]);
    expect(rows).toHaveLength(4);
    const text = JSON.stringify(rows);
    for (const token of [tokens.access_token, tokens.refresh_token, first.body.access_token, first.body.refresh_token]) {
      expect(text).not.toContain(token.slice('platform_xx_'.length));
      expect(rows.map((row) => row.token_hash)).toContain(createHash('sha256').update(token).digest('hex'));
    }
    const everything = JSON.stringify(await platform.dataSource.query('SELECT * FROM device_tokens'));
    for (const token of tokensSeen) expect(everything).not.toContain(token.slice('platform_xx_'.length));
  });

  it('writes no token to the logs', async () => {
    const text = JSON.stringify(platform.logs);
    expect(platform.logs.length).toBeGreaterThan(10);
    for (const token of tokensSeen) expect(text).not.toContain(token.slice('platform_xx_'.length));
  });
});

// Moves the clock past the refresh lifetime: nothing after this relies on earlier tokens.
describe('expiry', () => {
  it('refuses a refresh token past its lifetime', async () => {
    const { tokens } = await enrol();
    clock.advance(REFRESH_TTL_SECONDS * 1000 - 1);
    const fresh = await refresh(tokens.refresh_token);
    expect(fresh.status).toBe(200);
    clock.advance(REFRESH_TTL_SECONDS * 1000);
    expectOauthError(await refresh(fresh.body.refresh_token), 'invalid_grant', /expired/);
  });
});

describe('server nonces (DPOP_REQUIRE_NONCE)', () => {
  let noncePlatform: TestPlatform;
  beforeAll(async () => {
    noncePlatform = await startPlatform({ clock, env: { RATE_LIMITS_ENABLED: 'false', DPOP_REQUIRE_NONCE: 'true' } });
  });
  afterAll(() => noncePlatform?.close());

  it('answers 400 use_dpop_nonce with a DPoP-Nonce header, then takes a proof carrying it', async () => {
    const org = await createOrganisation(noncePlatform, { name: 'Nonce' });
    const at = (await noncePlatform.services.organisations.hostsOf(org.id))[0]!;
    const person = await createPerson(noncePlatform, org.id, 'admin');
    const enrolled = await enrolDevice(noncePlatform, { organisationId: org.id, personId: person.id, alg: 'ES256' });
    const key = await proofKeyOf(enrolled.keys!);
    const first = await call(noncePlatform, 'post', '/relay/v1/token', {
      host: at,
      headers: { DPoP: await proof(key, tokenUrl(at)) },
      body: { refresh_token: enrolled.tokens.refresh_token },
    });
    expectOauthError(first, 'use_dpop_nonce');
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toBeTruthy();
    const second = await call(noncePlatform, 'post', '/relay/v1/token', {
      host: at,
      headers: { DPoP: await proof(key, tokenUrl(at), { nonce }) },
      body: { refresh_token: enrolled.tokens.refresh_token },
    });
    expect(second.status).toBe(200);
    expect(second.body.token_type).toBe('DPoP');
  });
});

describe('rate limit of POST /relay/v1/token', () => {
  let limited: TestPlatform;
  let limitedHost: string;

  beforeAll(async () => {
    ({ platform: limited, host: limitedHost } = await startWithOrganisation({}, { name: 'Limited' }));
  });
  afterAll(() => limited?.close());

  it(`answers 429 with Retry-After after ${DEVICE_REFRESH_RATE_LIMIT.limit} refreshes a minute from one address`, async () => {
    const body = { refresh_token: 'platform_rt_not-a-token' };
    for (let i = 0; i < DEVICE_REFRESH_RATE_LIMIT.limit; i++) {
      expect((await call(limited, 'post', '/relay/v1/token', { host: limitedHost, body })).status).toBe(400);
    }
    const refused = await call(limited, 'post', '/relay/v1/token', { host: limitedHost, body });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
  });
});

describe("the approver's membership", () => {
  it('ends the device at its next refresh once the person who approved it has left', async () => {
    const leaver = await createPerson(platform, organisation.id, 'member');
    const { device, tokens } = await enrolDevice(platform, { organisationId: organisation.id, personId: leaver.id });
    tokensSeen.push(tokens.access_token, tokens.refresh_token);
    expect(await useAccessToken(tokens.access_token)).toBe(200);
    await platform.dataSource.query('DELETE FROM memberships WHERE organisation_id = ? AND person_id = ?', [organisation.id, leaver.id]);
    const res = await refresh(tokens.refresh_token);
    expectOauthError(res, 'invalid_grant', /no longer belongs/);
    expect(await useAccessToken(tokens.access_token)).toBe(401);
    expect(device.personId).toBe(leaver.id);
  });
});

describe('what the store keeps', () => {
  it('erases the sealed copy of a replacement pair once its grace has passed', async () => {
    const { device, tokens } = await enrol();
    const first = await refresh(tokens.refresh_token);
    expect(first.status).toBe(200);
    const sealed = () =>
      platform.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM device_tokens WHERE device_id = ? AND grace_sealed IS NOT NULL', [device.id]);
    expect(Number((await sealed())[0]!.n)).toBe(1);
    clock.advance((GRACE_SECONDS + 1) * 1000);
    expect((await refresh(first.body.refresh_token)).status).toBe(200);
    // The first copy's grace is over (erased); the second's has just begun.
    expect(Number((await sealed())[0]!.n)).toBe(1);
    const rows = await platform.dataSource.query<unknown[]>('SELECT grace_until FROM device_tokens WHERE device_id = ? AND grace_sealed IS NOT NULL', [device.id]);
    expect(rows).toHaveLength(1);
  });

  it('marks a refresh token used once, whoever read it first', async () => {
    const { tokens } = await enrol();
    const [row] = await platform.dataSource.query<{ id: string }[]>('SELECT id FROM device_tokens WHERE token_hash = ?', [createHash('sha256').update(tokens.refresh_token).digest('hex')]);
    const { DeviceStore } = await import('../../src/modules/devices/store.js');
    const store = new DeviceStore(platform.dataSource);
    expect(await store.markRefreshUsed(row!.id, clock.now(), null, null)).toBe(true);
    expect(await store.markRefreshUsed(row!.id, clock.now(), null, null)).toBe(false);
  });

});
