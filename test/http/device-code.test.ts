import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import {
  DeviceAuthorizationEntity,
  DeviceEntity,
  DeviceTokenEntity,
} from '../../src/modules/devices/entities.js';
import { DeviceCodeService } from '../../src/modules/devices/device-code.js';
import { scopeString } from '../../src/modules/devices/scopes.js';
import { MembershipEntity, PersonIdentityEntity, type OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { newProofKey, proofSigner, type ProofKey, type RequestProofOptions } from '../support/dpop-proofs.js';
import { pollForTokens, requestDeviceCode, type AskedCode } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { expectOauthError } from '../support/oauth.js';
import { ROLE_CLAIM } from '../support/organisations.js';
import { addressSequence, call, createOrganisation, startPlatform, startWithOrganisation, type TestPlatform } from '../support/platform.js';

/**
 * The device-code flow (spec 4.6 and 5, RFC 8628) as a device sees it: ask for a code, poll,
 * receive tokens once a person approved it in the console (approved here through the real
 * approval API with a person token from a real OpenID Connect provider).
 */

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const CODE_TTL_SECONDS = 600;
const INTERVAL_SECONDS = 5;

// Whole seconds, so that token and proof times (seconds) and the platform clock line up.
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;

/** Every secret the platform handed out in this file, to prove none reached logs or storage. */
const secrets: string[] = [];

beforeAll(async () => {
  // Behind a trusted proxy (loopback), so each test can come from its own network address and
  // the per-address rate limits of one test never spill into another.
  platform = await startPlatform({ clock, env: { TRUST_PROXY: 'loopback' } });
  idp = await TestIdentityProvider.start({ clock });
  organisation = await createOrganisation(platform, { name: 'Enrolment Org', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});

afterAll(async () => {
  await idp?.close();
  await platform?.close();
});

/** A network address of its own, as the trusted proxy reports it. */
const newAddress = addressSequence('10.0');

/** A request for a code with exactly `body`, from an address of its own unless told. */
async function requestCode(body: Record<string, unknown>, options: { from?: string; headers?: Record<string, string>; at?: string } = {}): Promise<Response> {
  const res = await requestDeviceCode(platform, { host: options.at ?? host, from: options.from ?? newAddress(), headers: options.headers ?? {}, body });
  if (res.status === 200) secrets.push(res.body.device_code);
  return res;
}

async function newCode(body: Record<string, unknown> = {}, from?: string): Promise<AskedCode> {
  const res = await requestCode({ workspaceId: 'ws-1', name: 'Ada’s laptop', ...body }, from ? { from } : {});
  expect(res.status).toBe(200);
  return res.body as AskedCode;
}

const tokenUrl = () => `http://${host}/relay/v1/device/token`;

async function poll(deviceCode: string, options: { proof?: string; from?: string; body?: Record<string, unknown> } = {}): Promise<Response> {
  const res = await pollForTokens(platform, deviceCode, {
    host,
    from: options.from ?? '198.51.100.1',
    headers: options.proof ? { DPoP: options.proof } : {},
    body: options.body ?? {},
  });
  if (res.status === 200) secrets.push(res.body.access_token, res.body.refresh_token);
  return res;
}

/** An OAuth error answer whose description is not empty. */
function expectOAuthError(res: Response, error: string): void {
  expectOauthError(res, error);
  expect(res.body.error_description.length).toBeGreaterThan(0);
}

// The approver: a person signed in with a token of the organisation's provider ---------------

interface Approver {
  subject: string;
  role: 'owner' | 'admin' | 'member';
}

function newApprover(role: Approver['role'] = 'member'): Approver {
  return { subject: `approver-${randomUUID()}`, role };
}

async function personToken(approver: Approver): Promise<string> {
  return idp.mint({ sub: approver.subject, claims: { [ROLE_CLAIM]: approver.role, name: 'Approver' } });
}

async function personIdOf(approver: Approver): Promise<string> {
  const identity = await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: idp.issuer, subject: approver.subject });
  return identity.personId;
}

async function decide(approver: Approver, userCode: string, decision: 'approve' | 'deny'): Promise<Response> {
  return call(platform, 'post', `/platform/v1/device-approvals/${decision}`, {
    host,
    headers: { Authorization: `Bearer ${await personToken(approver)}`, 'X-Forwarded-For': newAddress() },
    body: { userCode },
  });
}

async function approve(approver: Approver, userCode: string): Promise<void> {
  const res = await decide(approver, userCode, 'approve');
  expect(res.status).toBe(200);
  expect(res.body.status).toBe('approved');
}

/** A code approved by a fresh member, polled once it may be: the device's tokens. */
async function enrolled(body: Record<string, unknown> = {}, approver = newApprover()): Promise<{ code: AskedCode; tokens: Response; approver: Approver }> {
  const code = await newCode(body);
  await approve(approver, code.user_code);
  const tokens = await poll(code.device_code);
  return { code, tokens, approver };
}

// DPoP proofs whose iat follows the platform's clock (the `dpop` package signs with real time) --

const signProof = proofSigner(clock);

/** A fresh key; an Ed25519 key signs its proofs as `EdDSA`. */
const newKey = (kind: 'ES256' | 'Ed25519' = 'ES256') => newProofKey(kind, { signAs: kind === 'ES256' ? 'ES256' : 'EdDSA' });

/** A proof by `key`, for the device token endpoint unless told. */
const proofBy = (key: ProofKey, { url = tokenUrl(), ...options }: RequestProofOptions & { url?: string } = {}) => signProof(key, url, options);

async function getOrganisation(headers: Record<string, string>): Promise<Response> {
  return call(platform, 'get', '/platform/v1/organisation', { host, headers });
}

const sha256hex = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

async function storedAuthorization(deviceCode: string) {
  return platform.dataSource.getRepository(DeviceAuthorizationEntity).findOneByOrFail({ deviceCodeHash: sha256hex(deviceCode) });
}

// -------------------------------------------------------------------------------------------

describe('POST /relay/v1/device/code', () => {
  it('answers a device code, a XXXX-XXXX user code, where to approve it and how often to poll', async () => {
    const from = newAddress();
    const res = await requestCode({ workspaceId: 'ws-42', name: 'Build box' }, { from, headers: { 'User-Agent': 'workbench/3.1 (linux)' } });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const code = res.body as AskedCode;
    expect(code.device_code).toMatch(/^platform_dc_[A-Za-z0-9_-]{43}$/);
    expect(code.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(code.verification_uri).toBe(`http://${host}/device`);
    expect(code.verification_uri_complete).toBe(`http://${host}/device?user_code=${code.user_code}`);
    expect(code.interval).toBe(INTERVAL_SECONDS);
    expect(code.expires_in).toBe(CODE_TTL_SECONDS);

    const stored = await storedAuthorization(code.device_code);
    expect(stored).toMatchObject({
      organisationId: organisation.id,
      workspaceId: 'ws-42',
      name: 'Build box',
      kind: 'workbench',
      dpopJkt: null,
      status: 'pending',
      requesterAddress: from,
      requesterUserAgent: 'workbench/3.1 (linux)',
      userCodeHash: sha256hex(code.user_code.replace('-', '')),
    });
    expect(stored.expiresAt.getTime()).toBe(clock.now().getTime() + CODE_TTL_SECONDS * 1000);
  });

  it.each([
    ['U+202E', '\u202E'],
    ['U+2066', '\u2066'],
    ['U+200F', '\u200F'],
    ['U+200B', '\u200B'],
    ['U+FEFF', '\uFEFF'],
    ['U+00AD', '\u00AD'],
    ['U+0000', '\u0000'],
    ['U+0085', '\u0085'],
    ['U+000A', '\n'],
    ['U+E000', '\uE000'],
    ['U+3164', '\u3164'],
    ['U+E0041', '\u{E0041}'],
  ])('refuses a name or workspace holding %s (not shown as it is), naming the field; nothing is stored', async (code, character) => {
    for (const [field, body] of [
      ['body.name', { workspaceId: 'ws-1', name: `Build box${character}xob` }],
      ['body.workspaceId', { workspaceId: `ws${character}1`, name: 'Build box' }],
    ] as const) {
      const before = await platform.dataSource.getRepository(DeviceAuthorizationEntity).count();
      const res = await requestCode(body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field });
      expect(res.body.message ?? res.body.error_description).toContain(code);
      expect(await platform.dataSource.getRepository(DeviceAuthorizationEntity).count()).toBe(before);
    }
  });

  it('refuses a User-Agent holding a control or invisible character (C1 controls and the soft hyphen travel as Latin-1)', async () => {
    for (const agent of ['workbench/3.1 \u0085(linux)', 'work\u00ADbench/3.1']) {
      const res = await requestCode({ workspaceId: 'ws-1', name: 'Build box' }, { headers: { 'User-Agent': agent } });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field: 'headers.user-agent' });
    }
  });

  it('takes names in any script, with accents, emoji and punctuation', async () => {
    for (const name of ['Café déjà vu', '東京のマシン', 'Ada’s laptop 🚀', 'بناء', 'Build box (x86_64) #2']) {
      const res = await requestCode({ workspaceId: `ws-${name}`, name }, { headers: { 'User-Agent': 'workbench/3.1 (linux; é)' } });
      expect(res.status).toBe(200);
    }
  });

  it('draws user codes from consonants only: no vowels, digits or look-alikes', async () => {
    const codes = new Set<string>();
    for (let i = 0; i < 25; i++) codes.add((await newCode()).user_code.replace('-', ''));
    expect(codes.size).toBe(25);
    const used = new Set([...codes].join(''));
    for (const char of used) expect(USER_CODE_ALPHABET).toContain(char);
    for (const lookAlike of ['A', 'E', 'I', 'O', 'U', 'Y', '0', '1', '5', '8']) expect(used.has(lookAlike)).toBe(false);
  });

  it('names the proxy\'s public scheme and host in the verification URI when the proxy is trusted', async () => {
    const res = await requestCode(
      { workspaceId: 'ws-1', name: 'Behind TLS' },
      { at: 'platform-internal:8080', headers: { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': host } },
    );
    expect(res.status).toBe(200);
    expect(res.body.verification_uri).toBe(`https://${host}/device`);
    expect(res.body.verification_uri_complete).toBe(`https://${host}/device?user_code=${res.body.user_code}`);
  });

  it('keeps a non-default port in the verification URI', async () => {
    const res = await requestCode({ workspaceId: 'ws-1', name: 'Port' }, { at: `${host}:8443` });
    expect(res.status).toBe(200);
    expect(res.body.verification_uri).toBe(`http://${host}:8443/device`);
  });

  it('accepts a form-encoded body, as RFC 8628 clients send it', async () => {
    const res = await call(platform, 'post', '/relay/v1/device/code', {
      host,
      headers: { 'X-Forwarded-For': newAddress() },
      raw: { type: 'application/x-www-form-urlencoded', data: 'workspaceId=ws-form&name=Rack+node+7&kind=node&client_id=any' },
    });
    expect(res.status).toBe(200);
    secrets.push(res.body.device_code);
    expect(await storedAuthorization(res.body.device_code)).toMatchObject({ workspaceId: 'ws-form', name: 'Rack node 7', kind: 'node' });
  });

  it('stores the key thumbprint a code is bound to', async () => {
    const key = await newKey();
    const code = await newCode({ dpop_jkt: key.jkt });
    expect((await storedAuthorization(code.device_code)).dpopJkt).toBe(key.jkt);
  });

  it.each([
    ['no workspaceId', { name: 'x' }, 'body.workspaceId'],
    ['no name', { workspaceId: 'ws' }, 'body.name'],
    ['an empty workspaceId', { workspaceId: '', name: 'x' }, 'body.workspaceId'],
    ['a blank name', { workspaceId: 'ws', name: '   ' }, 'body.name'],
    ['a name too long to show', { workspaceId: 'ws', name: 'n'.repeat(201) }, 'body.name'],
    ['a workspaceId that is not text', { workspaceId: 42, name: 'x' }, 'body.workspaceId'],
    ['a dpop_jkt that is not a SHA-256 thumbprint', { workspaceId: 'ws', name: 'x', dpop_jkt: 'abc' }, 'body.dpop_jkt'],
    ['a padded dpop_jkt', { workspaceId: 'ws', name: 'x', dpop_jkt: `${'a'.repeat(43)}=` }, 'body.dpop_jkt'],
    ['an unknown kind', { workspaceId: 'ws', name: 'x', kind: 'server' }, 'body.kind'],
    ['an unknown field', { workspaceId: 'ws', name: 'x', scope: 'everything' }, 'body.scope'],
  ])('refuses %s with 400 invalid_request naming the field', async (_case, body, field) => {
    const res = await requestCode(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.field).toBe(field);
    expect(res.body.message).toContain(field);
  });

  it('refuses a form field sent twice', async () => {
    const res = await call(platform, 'post', '/relay/v1/device/code', {
      host,
      headers: { 'X-Forwarded-For': newAddress() },
      raw: { type: 'application/x-www-form-urlencoded', data: 'workspaceId=a&workspaceId=b&name=x' },
    });
    expect(res.status).toBe(400);
    expect(res.body.field).toBe('body.workspaceId');
  });

  it('refuses other media types with 415', async () => {
    const res = await call(platform, 'post', '/relay/v1/device/code', {
      host,
      headers: { 'X-Forwarded-For': newAddress() },
      raw: { type: 'text/plain', data: 'workspaceId=ws&name=x' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error).toBe('unsupported_media_type');
  });

  it('answers a form with too many fields with 413, not a failure', async () => {
    const data = Array.from({ length: 150 }, (_, i) => `f${i}=x`).join('&');
    const res = await call(platform, 'post', '/relay/v1/device/code', {
      host,
      headers: { 'X-Forwarded-For': newAddress() },
      raw: { type: 'application/x-www-form-urlencoded', data },
    });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it('answers 404 unknown_tenant at a host name no organisation is served at', async () => {
    const res = await requestCode({ workspaceId: 'ws', name: 'x' }, { at: 'nobody.test' });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('unknown_tenant');
  });
});

describe('POST /relay/v1/device/token before a decision', () => {
  it('answers authorization_pending until the code is approved', async () => {
    const code = await newCode();
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
  });

  it('answers slow_down when polled too fast, and the interval grows by 5 seconds each time', async () => {
    const code = await newCode();
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    clock.advance(1000);
    const fast = await poll(code.device_code);
    expectOAuthError(fast, 'slow_down');
    expect(fast.body.error_description).toContain('10 seconds');

    // The interval is now 10 seconds, and stays so: 10 seconds later is fine, 5 is too fast.
    clock.advance(10_000);
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    clock.advance(5000);
    const again = await poll(code.device_code);
    expectOAuthError(again, 'slow_down');
    expect(again.body.error_description).toContain('15 seconds');
    clock.advance(15_000);
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    expect((await storedAuthorization(code.device_code)).intervalSeconds).toBe(15);
  });

  it('counts the interval from the previous poll to the millisecond', async () => {
    const code = await newCode();
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
    clock.advance(INTERVAL_SECONDS * 1000 - 1);
    expectOAuthError(await poll(code.device_code), 'slow_down');
  });

  it('answers expired_token once the code has expired, approved or not', async () => {
    const waiting = await newCode();
    const approved = await newCode();
    await approve(newApprover(), approved.user_code);
    clock.advance(CODE_TTL_SECONDS * 1000 - 1);
    expectOAuthError(await poll(waiting.device_code), 'authorization_pending');
    clock.advance(1);
    expectOAuthError(await poll(waiting.device_code), 'expired_token');
    expectOAuthError(await poll(approved.device_code), 'expired_token');
  });

  it('answers access_denied after the approver denied it, every time', async () => {
    const code = await newCode();
    const res = await decide(newApprover(), code.user_code, 'deny');
    expect(res.status).toBe(200);
    expectOAuthError(await poll(code.device_code), 'access_denied');
    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code), 'access_denied');
    expect(await storedAuthorization(code.device_code)).toMatchObject({ status: 'denied', deviceId: null });
  });

  it.each([
    ['an unknown device code', `platform_dc_${'x'.repeat(43)}`],
    ['a code of another kind', 'not-a-device-code'],
    ['a user code', 'BCDF-GHJK'],
  ])('answers invalid_grant for %s', async (_case, deviceCode) => {
    expectOAuthError(await poll(deviceCode), 'invalid_grant');
  });

  it("answers invalid_grant for a code polled at another organisation's host, and leaves it pending", async () => {
    const other = await createOrganisation(platform, { name: 'Neighbour Org' });
    const otherHost = (await platform.services.organisations.hostsOf(other.id))[0]!;
    const code = await newCode();
    await approve(newApprover(), code.user_code);
    const res = await call(platform, 'post', '/relay/v1/device/token', {
      host: otherHost,
      headers: { 'X-Forwarded-For': '198.51.100.1' },
      body: { device_code: code.device_code },
    });
    expectOAuthError(res, 'invalid_grant');
    expect(await storedAuthorization(code.device_code)).toMatchObject({ status: 'approved', deviceId: null });
    expect((await poll(code.device_code)).status).toBe(200);
  });

  it('accepts the device-code grant_type and a form-encoded poll', async () => {
    const code = await newCode();
    const res = await call(platform, 'post', '/relay/v1/device/token', {
      host,
      headers: { 'X-Forwarded-For': '198.51.100.1' },
      raw: {
        type: 'application/x-www-form-urlencoded',
        data: new URLSearchParams({ grant_type: DEVICE_CODE_GRANT, device_code: code.device_code, client_id: 'workbench' }).toString(),
      },
    });
    expectOAuthError(res, 'authorization_pending');
  });

  it('refuses another grant_type with unsupported_grant_type, before looking at the code', async () => {
    const code = await newCode();
    const res = await poll(code.device_code, { body: { grant_type: 'authorization_code' } });
    expectOAuthError(res, 'unsupported_grant_type');
    // The refused request was not a poll: the next one is not "too fast".
    expectOAuthError(await poll(code.device_code), 'authorization_pending');
  });

  it.each([
    ['no device_code', {}, 'body.device_code'],
    ['a device_code that is not text', { device_code: 7 }, 'body.device_code'],
    ['an unknown field', { device_code: 'x', scope: 'all' }, 'body.scope'],
  ])('refuses %s with 400 invalid_request naming the field', async (_case, body, field) => {
    const res = await call(platform, 'post', '/relay/v1/device/token', { host, headers: { 'X-Forwarded-For': '198.51.100.1' }, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.field).toBe(field);
  });
});

describe('POST /relay/v1/device/token after approval', () => {
  it('hands a workbench Bearer tokens that work, and stores the device with only token hashes', async () => {
    const approver = newApprover('member');
    const code = await newCode({ workspaceId: 'ws-stored', name: 'Stored laptop' });
    await approve(approver, code.user_code);
    const res = await poll(code.device_code);

    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^platform_at_/),
      refresh_token: expect.stringMatching(/^platform_rt_/),
      expires_in: 3600,
      token_type: 'Bearer',
      device_id: expect.stringMatching(/^dev_/),
      scope: scopeString('workbench'),
    });

    const device = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id });
    expect(device).toMatchObject({
      organisationId: organisation.id,
      personId: await personIdOf(approver),
      name: 'Stored laptop',
      kind: 'workbench',
      workspaceId: 'ws-stored',
      dpopJkt: null,
      enrolledVia: 'device_code',
      revokedAt: null,
    });
    const tokens = await platform.dataSource.getRepository(DeviceTokenEntity).findBy({ deviceId: device.id });
    expect(tokens.map((token) => token.tokenHash).sort()).toEqual([sha256hex(res.body.access_token), sha256hex(res.body.refresh_token)].sort());
    expect((await storedAuthorization(code.device_code)).status).toBe('redeemed');

    const organisationAnswer = await getOrganisation({ Authorization: `Bearer ${res.body.access_token}` });
    expect(organisationAnswer.status).toBe(200);
    expect(organisationAnswer.body.id).toBe(organisation.id);
  });

  it('gives a node approved by an admin the node scopes', async () => {
    const { tokens } = await enrolled({ kind: 'node', name: 'Rack 4' }, newApprover('admin'));
    expect(tokens.status).toBe(200);
    expect(tokens.body.scope).toBe(scopeString('node'));
    expect(await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: tokens.body.device_id })).toMatchObject({ kind: 'node', name: 'Rack 4' });
  });

  it('exchanges a code once: a second poll is invalid_grant and ends the tokens it issued', async () => {
    const { code, tokens } = await enrolled();
    expect(tokens.status).toBe(200);
    expect((await getOrganisation({ Authorization: `Bearer ${tokens.body.access_token}` })).status).toBe(200);

    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code), 'invalid_grant');
    const after = await getOrganisation({ Authorization: `Bearer ${tokens.body.access_token}` });
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('unauthorized');
    const rows = await platform.dataSource.getRepository(DeviceTokenEntity).findBy({ deviceId: tokens.body.device_id });
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.revokedAt).not.toBeNull();
  });

  it('never gives tokens to two concurrent polls of the same code', async () => {
    const name = `raced ${randomUUID()}`;
    const code = await newCode({ name });
    await approve(newApprover(), code.user_code);
    const answers = await Promise.all(Array.from({ length: 6 }, () => poll(code.device_code)));
    const granted = answers.filter((res) => res.status === 200);
    expect(granted.length).toBeLessThanOrEqual(1);
    for (const res of answers.filter((answer) => answer.status !== 200)) {
      expect(res.status).toBe(400);
      expect(['invalid_grant', 'slow_down']).toContain(res.body.error);
    }
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ name })).toBe(1);
  });

  it('answers access_denied when the approver left the organisation before the poll, and stays denied', async () => {
    const approver = newApprover('member');
    const code = await newCode();
    await approve(approver, code.user_code);
    const personId = await personIdOf(approver);
    const memberships = platform.dataSource.getRepository(MembershipEntity);
    const membership = await memberships.findOneByOrFail({ organisationId: organisation.id, personId });
    await memberships.delete({ organisationId: organisation.id, personId });

    expectOAuthError(await poll(code.device_code), 'access_denied');
    // Coming back does not revive an approval given while they were gone.
    await memberships.insert(membership);
    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code), 'access_denied');
    expect((await storedAuthorization(code.device_code)).deviceId).toBeNull();
  });

  it('answers access_denied for a node whose admin approver became a member before the poll', async () => {
    const approver = newApprover('admin');
    const code = await newCode({ kind: 'node' });
    await approve(approver, code.user_code);
    await platform.dataSource
      .getRepository(MembershipEntity)
      .update({ organisationId: organisation.id, personId: await personIdOf(approver) }, { role: 'member' });
    expectOAuthError(await poll(code.device_code), 'access_denied');
  });
});

describe('DPoP-bound codes (RFC 9449)', () => {
  it.each(['ES256', 'Ed25519'] as const)('hands %s-bound DPoP tokens for a proof by the bound key, and the tokens need proofs', async (kind) => {
    const key = await newKey(kind);
    const code = await newCode({ dpop_jkt: key.jkt });
    await approve(newApprover(), code.user_code);
    const res = await poll(code.device_code, { proof: await proofBy(key) });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    expect((await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id })).dpopJkt).toBe(key.jkt);

    const url = `http://${host}/platform/v1/organisation`;
    const token = res.body.access_token as string;
    const bound = await getOrganisation({ Authorization: `DPoP ${token}`, DPoP: await proofBy(key, { url, method: 'GET', accessToken: token }) });
    expect(bound.status).toBe(200);
    const asBearer = await getOrganisation({ Authorization: `Bearer ${token}` });
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.error).toBe('invalid_dpop_proof');
  });

  it('refuses a bound code polled without a proof with invalid_dpop_proof, before saying anything of its state', async () => {
    const key = await newKey();
    const code = await newCode({ dpop_jkt: key.jkt });
    expectOAuthError(await poll(code.device_code), 'invalid_dpop_proof');
    await approve(newApprover(), code.user_code);
    expectOAuthError(await poll(code.device_code), 'invalid_dpop_proof');
    // Nothing was redeemed by the refused polls: the right proof still gets the tokens.
    expect((await poll(code.device_code, { proof: await proofBy(key) })).status).toBe(200);
  });

  it.each([
    ['signed by another key', async (_key: ProofKey) => proofBy(await newKey())],
    ['made for another URL', async (key: ProofKey) => proofBy(key, { url: `http://${host}/relay/v1/token` })],
    ['made for another method', async (key: ProofKey) => proofBy(key, { method: 'GET' })],
    ['that is not a JWT', async () => 'not-a-proof'],
  ])('refuses a proof %s with invalid_dpop_proof', async (_case, makeProof) => {
    const key = await newKey();
    const code = await newCode({ dpop_jkt: key.jkt });
    await approve(newApprover(), code.user_code);
    expectOAuthError(await poll(code.device_code, { proof: await makeProof(key) }), 'invalid_dpop_proof');
    expect((await storedAuthorization(code.device_code)).status).toBe('approved');
  });

  it('refuses a replayed proof', async () => {
    const key = await newKey();
    const code = await newCode({ dpop_jkt: key.jkt });
    const proof = await proofBy(key);
    expectOAuthError(await poll(code.device_code, { proof }), 'authorization_pending');
    clock.advance(INTERVAL_SECONDS * 1000);
    expectOAuthError(await poll(code.device_code, { proof }), 'invalid_dpop_proof');
  });

  it('binds the tokens of an unbound code to the key of a proof sent with the poll', async () => {
    const key = await newKey();
    const code = await newCode();
    await approve(newApprover(), code.user_code);
    const res = await poll(code.device_code, { proof: await proofBy(key) });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    expect((await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id })).dpopJkt).toBe(key.jkt);
  });

  it('needs a proof of the key a poll bound the tokens to before the code, presented again, can end them', async () => {
    const key = await newKey();
    const code = await newCode();
    await approve(newApprover(), code.user_code);
    const res = await poll(code.device_code, { proof: await proofBy(key) });
    expect(res.status).toBe(200);
    expectOAuthError(await poll(code.device_code), 'invalid_dpop_proof');
    const url = `http://${host}/platform/v1/organisation`;
    const token = res.body.access_token as string;
    expect((await getOrganisation({ Authorization: `DPoP ${token}`, DPoP: await proofBy(key, { url, method: 'GET', accessToken: token }) })).status).toBe(200);
  });

  it('redeems a code once even when two polls read it before either exchanged it', async () => {
    const code = await newCode();
    await approve(newApprover(), code.user_code);
    const stale = await storedAuthorization(code.device_code);
    const service = new DeviceCodeService(platform.dataSource, clock, { deviceCodeTtlSeconds: 600, pollIntervalSeconds: INTERVAL_SECONDS }, platform.services.deviceTokens, platform.services.organisations);
    const first = await service.poll(stale);
    expect(first.access_token).toMatch(/^platform_at_/);
    await expect(service.poll(stale)).rejects.toMatchObject({ code: 'invalid_grant' });
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ id: first.device_id })).toBe(1);
  });

  it('refuses an unbound code polled with a broken proof', async () => {
    const code = await newCode();
    expectOAuthError(await poll(code.device_code, { proof: await proofBy(await newKey(), { method: 'PUT' }) }), 'invalid_dpop_proof');
  });

  describe('with server nonces required', () => {
    let strict: TestPlatform;
    let strictHost: string;

    beforeAll(async () => {
      ({ platform: strict, host: strictHost } = await startWithOrganisation({ clock, env: { DPOP_REQUIRE_NONCE: 'true' } }, { name: 'Nonce Org' }));
    });
    afterAll(() => strict?.close());

    it('answers use_dpop_nonce with a DPoP-Nonce header, and accepts a proof carrying it', async () => {
      const key = await newKey();
      const started = await call(strict, 'post', '/relay/v1/device/code', { host: strictHost, body: { workspaceId: 'ws', name: 'x', dpop_jkt: key.jkt } });
      expect(started.status).toBe(200);
      const url = `http://${strictHost}/relay/v1/device/token`;
      const first = await call(strict, 'post', '/relay/v1/device/token', {
        host: strictHost,
        headers: { DPoP: await proofBy(key, { url }) },
        body: { device_code: started.body.device_code },
      });
      expectOAuthError(first, 'use_dpop_nonce');
      const nonce = first.headers['dpop-nonce'];
      expect(nonce).toEqual(expect.any(String));
      const second = await call(strict, 'post', '/relay/v1/device/token', {
        host: strictHost,
        headers: { DPoP: await proofBy(key, { url, nonce }) },
        body: { device_code: started.body.device_code },
      });
      expectOAuthError(second, 'authorization_pending');
    });
  });
});

describe('rate limits', () => {
  it('limits device/code to 60 a minute per address, with Retry-After, and counts each address apart', async () => {
    const from = newAddress();
    for (let i = 0; i < 60; i++) {
      const res = await requestCode({ workspaceId: 'ws', name: `burst ${i}` }, { from });
      expect(res.status).toBe(200);
    }
    const refused = await requestCode({ workspaceId: 'ws', name: 'one too many' }, { from });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
    expect((await requestCode({ workspaceId: 'ws', name: 'elsewhere' })).status).toBe(200);
  });

  it('limits device/token to 600 a minute per address: room for an office of polling devices', async () => {
    const from = newAddress();
    const statuses: number[] = [];
    for (let batch = 0; batch < 30; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => poll('not-a-device-code', { from })));
      statuses.push(...answers.map((res) => res.status));
    }
    expect(statuses.filter((status) => status === 400)).toHaveLength(600);
    const refused = await poll('not-a-device-code', { from });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
    expect((await poll('not-a-device-code', { from: newAddress() })).status).toBe(400);
  });
});

describe('on Cloud', () => {
  let cloud: TestPlatform;
  beforeAll(async () => {
    cloud = await startPlatform({ clock, env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://platform.example.com' } });
  });
  afterAll(() => cloud?.close());

  it('names the public base address and leaves the organisation to the approver', async () => {
    const res = await call(cloud, 'post', '/relay/v1/device/code', { host: 'anything.internal', body: { workspaceId: 'ws', name: 'Cloud laptop' } });
    expect(res.status).toBe(200);
    secrets.push(res.body.device_code);
    expect(res.body.verification_uri).toBe('https://platform.example.com/device');
    expect(res.body.verification_uri_complete).toBe(`https://platform.example.com/device?user_code=${res.body.user_code}`);
    const stored = await cloud.dataSource.getRepository(DeviceAuthorizationEntity).findOneByOrFail({ deviceCodeHash: sha256hex(res.body.device_code) });
    expect(stored.organisationId).toBeNull();
  });
});

describe('secrets', () => {
  it('never stores or logs a device code or token in plain text', async () => {
    expect(secrets.length).toBeGreaterThan(20);
    const tables = ['device_authorizations', 'devices', 'device_tokens'];
    const stored = JSON.stringify(await Promise.all(tables.map((table) => platform.dataSource.query(`SELECT * FROM ${table}`))));
    const logged = JSON.stringify(platform.logs);
    for (const secret of secrets) {
      expect(stored).not.toContain(secret);
      expect(logged).not.toContain(secret);
    }
  });
});
