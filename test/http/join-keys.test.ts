import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DeviceEntity, JoinKeyEntity } from '../../src/modules/devices/entities.js';
import { JoinKeyService } from '../../src/modules/devices/join-keys.js';
import { DEVICE_JOIN_RATE_LIMIT } from '../../src/modules/devices/join-routes.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import { epochSeconds, keylessProof, newProofKey, proofSigner, SMALL_ORDER_ED25519, type ProofKey } from '../support/dpop-proofs.js';
import type { TestIdentityProvider } from '../support/idp.js';
import { expectOauthError } from '../support/oauth.js';
import { personHeaders, personIdFor, twoOrganisations, type Role } from '../support/organisations.js';
import { call, startPlatform, startWithOrganisation, type TestPlatform } from '../support/platform.js';

/**
 * Join keys: owners and admins create, list and revoke them (an extension), and a node joins
 * with one at `POST /relay/v1/device/join` (spec 3, 4.6), enrolled at once with the key's
 * creator as its approver.
 */

const KEY_SHAPE = /^platform_jk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const NODE_SCOPE = 'organisation:read policy:read ingest:write relay:connect';

// Whole seconds, so that token and proof times (seconds) and the platform clock line up.
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let otherIdp: TestIdentityProvider;
let organisation: OrganisationRecord;
let other: OrganisationRecord;
let host: string;
let otherHost: string;

/** Every join key handed out in this file, to prove afterwards that none was stored or logged. */
const keysSeen: string[] = [];

beforeAll(async () => {
  // Rate limits are switched off here (the join tests would share one counter) and tested on a
  // platform of their own below.
  platform = await startPlatform({ clock, env: { RATE_LIMITS_ENABLED: 'false' } });
  ({ idp, otherIdp, organisation, other, host, otherHost } = await twoOrganisations(platform, clock));
});

afterAll(async () => {
  await Promise.all([idp?.close(), otherIdp?.close()]);
  await platform?.close();
});

/** A person token of the organisation's provider naming `role` (the provider is the authority). */
const as = (role: Role, sub: string = role, provider = idp) => personHeaders(provider, role, sub);
const personIdOf = (sub: string, provider = idp) => personIdFor(platform, provider, sub);

interface CreatedKey {
  key: string;
  joinKey: Record<string, unknown> & { id: string };
}

async function createKey(body: Record<string, unknown> = {}, headers?: Record<string, string>, at = host): Promise<CreatedKey> {
  const res = await call(platform, 'post', '/platform/v1/join-keys', { host: at, headers: headers ?? (await as('admin')), body: { description: 'Rack 12', ...body } });
  expect(res.status).toBe(201);
  keysSeen.push(res.body.key);
  return res.body as CreatedKey;
}

async function listKeys(headers?: Record<string, string>, query = '', at = host): Promise<Response> {
  return call(platform, 'get', `/platform/v1/join-keys${query}`, { host: at, headers: headers ?? (await as('admin')) });
}

async function stateOf(id: string, headers?: Record<string, string>, at = host): Promise<Record<string, unknown>> {
  const res = await listKeys(headers, '?limit=200', at);
  expect(res.status).toBe(200);
  return (res.body.joinKeys as { id: string }[]).find((key) => key.id === id) as Record<string, unknown>;
}

let nodeCount = 0;
function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  nodeCount += 1;
  return { schemaVersion: 1, nodeId: `node-${nodeCount}`, name: `rack-node-${nodeCount}`, kind: 'node', owner: { type: 'user' }, ...overrides };
}

/** A join; a field given as `undefined` in `body` is left out of the request. */
async function join(key: string, options: { at?: string; body?: Record<string, unknown>; headers?: Record<string, string> } = {}): Promise<Response> {
  const body = Object.fromEntries(Object.entries({ key, manifest: manifest(), name: 'Rack 12 node', ...options.body }).filter(([, value]) => value !== undefined));
  return call(platform, 'post', '/relay/v1/device/join', { host: options.at ?? host, headers: options.headers ?? {}, body });
}

// DPoP proofs signed here so that `iat` follows the platform's clock.
const proof = proofSigner(clock);

const joinUrl = () => `http://${host}/relay/v1/device/join`;

async function getOrganisation(accessToken: string, key?: ProofKey): Promise<Response> {
  const headers: Record<string, string> = key
    ? { Authorization: `DPoP ${accessToken}`, DPoP: await proof(key, `http://${host}/platform/v1/organisation`, { method: 'GET', accessToken }) }
    : { Authorization: `Bearer ${accessToken}` };
  return call(platform, 'get', '/platform/v1/organisation', { host, headers });
}

describe('creating a join key', () => {
  it('answers the key once, prefixed, and stores only its lookup part and the hash of its secret', async () => {
    const before = clock.now();
    const res = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: await as('admin'), body: { description: '  Rack 12, hall B  ' } });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    keysSeen.push(res.body.key);
    const [, lookup, secret] = KEY_SHAPE.exec(res.body.key)!;
    expect(res.body.joinKey).toEqual({
      id: expect.stringMatching(/^jk_/),
      description: 'Rack 12, hall B',
      createdBy: { id: await personIdOf('admin'), name: 'The admin' },
      createdAt: before.toISOString(),
      expiresAt: new Date(before.getTime() + 24 * 3600 * 1000).toISOString(),
      lastUsedAt: null,
      revokedAt: null,
      useCount: 0,
      reusable: false,
      state: 'active',
    });
    const row = await platform.dataSource.getRepository(JoinKeyEntity).findOneByOrFail({ id: res.body.joinKey.id });
    expect(row.lookup).toBe(lookup);
    expect(row.secretHash).toBe(createHash('sha256').update(secret!).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(secret);
    expect(res.body.joinKey.id).not.toContain(lookup);
  });

  it('lets an owner create one too, reusable and with a lifetime of up to 90 days', async () => {
    const created = await createKey({ reusable: true, expiresInSeconds: 90 * 86_400 }, await as('owner'));
    expect(created.joinKey).toMatchObject({
      reusable: true,
      createdBy: { id: await personIdOf('owner'), name: 'The owner' },
      expiresAt: new Date(clock.now().getTime() + 90 * 86_400 * 1000).toISOString(),
    });
  });

  it('makes a different key every time', async () => {
    const [a, b] = [await createKey(), await createKey()];
    expect(a.key).not.toBe(b.key);
    expect(KEY_SHAPE.exec(a.key)![1]).not.toBe(KEY_SHAPE.exec(b.key)![1]);
  });

  it.each([
    ['a lifetime over 90 days', { description: 'x', expiresInSeconds: 90 * 86_400 + 1 }, 'body.expiresInSeconds'],
    ['a lifetime under five minutes', { description: 'x', expiresInSeconds: 299 }, 'body.expiresInSeconds'],
    ['no description', {}, 'body.description'],
    ['a blank description', { description: '   ' }, 'body.description'],
    ['reusable as a string', { description: 'x', reusable: 'yes' }, 'body.reusable'],
    ['an unknown field', { description: 'x', kind: 'workbench' }, 'body.kind'],
  ])('refuses %s with invalid_request naming the field', async (_case, body, field) => {
    const res = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: await as('admin'), body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });

  it('refuses a member with 403, and stores nothing', async () => {
    const count = await platform.dataSource.getRepository(JoinKeyEntity).count();
    const res = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: await as('member'), body: { description: 'mine' } });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    expect(await platform.dataSource.getRepository(JoinKeyEntity).count()).toBe(count);
  });

  it('refuses a device token, even of a device an owner approved (401), and no token at all', async () => {
    const owner = await createPerson(platform, organisation.id, 'owner');
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: owner.id });
    const res = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: { Authorization: `Bearer ${enrolled.tokens.access_token}` }, body: { description: 'x' } });
    expect(res.status).toBe(401);
    expect((await call(platform, 'post', '/platform/v1/join-keys', { host, body: { description: 'x' } })).status).toBe(401);
  });
});

describe('listing join keys', () => {
  it("shows the organisation's keys newest first, never a key's value", async () => {
    const older = await createKey({ description: 'older' });
    clock.advance(1000);
    const newer = await createKey({ description: 'newer' });
    const res = await listKeys();
    expect(res.status).toBe(200);
    const ids = (res.body.joinKeys as { id: string }[]).map((key) => key.id);
    expect(ids.indexOf(newer.joinKey.id)).toBeLessThan(ids.indexOf(older.joinKey.id));
    expect(res.body.joinKeys.find((key: { id: string }) => key.id === newer.joinKey.id)).toEqual(newer.joinKey);
    const text = JSON.stringify(res.body);
    for (const key of keysSeen) {
      const [, lookup, secret] = KEY_SHAPE.exec(key)!;
      expect(text).not.toContain(secret);
      expect(text).not.toContain(lookup);
    }
  });

  it("shows nothing of another organisation's keys", async () => {
    const theirs = await createKey({ description: 'theirs' }, await as('admin', 'admin', otherIdp), otherHost);
    const ours = await listKeys();
    expect((ours.body.joinKeys as { id: string }[]).map((key) => key.id)).not.toContain(theirs.joinKey.id);
    const mine = await listKeys(await as('admin', 'admin', otherIdp), '', otherHost);
    expect((mine.body.joinKeys as { id: string }[]).map((key) => key.id)).toEqual([theirs.joinKey.id]);
  });

  it('pages with limit and cursor, each key once', async () => {
    const all = (await listKeys(undefined, '?limit=200')).body.joinKeys.map((key: { id: string }) => key.id) as string[];
    expect(all.length).toBeGreaterThan(3);
    const paged: string[] = [];
    let query = '?limit=2';
    for (;;) {
      const res = await listKeys(undefined, query);
      expect(res.status).toBe(200);
      expect(res.body.joinKeys.length).toBeLessThanOrEqual(2);
      paged.push(...res.body.joinKeys.map((key: { id: string }) => key.id));
      if (res.body.nextCursor === null) break;
      query = `?limit=2&cursor=${res.body.nextCursor}`;
    }
    expect(paged).toEqual(all);
  });

  it.each([
    ['a cursor it did not give out', '?cursor=bm90LWEtY3Vyc29y', 'query.cursor'],
    ['a limit over 200', '?limit=201', 'query.limit'],
    ['a limit of 0', '?limit=0', 'query.limit'],
  ])('refuses %s with invalid_request', async (_case, query, field) => {
    const res = await listKeys(undefined, query);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });

  it('refuses a member with 403', async () => {
    const res = await listKeys(await as('member'));
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
  });
});

describe('revoking a join key', () => {
  it('answers 204, shows the key revoked, and revoking again is harmless', async () => {
    const created = await createKey();
    const res = await call(platform, 'delete', `/platform/v1/join-keys/${created.joinKey.id}`, { host, headers: await as('admin') });
    expect(res.status).toBe(204);
    const revokedAt = clock.now().toISOString();
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'revoked', revokedAt });
    clock.advance(1000);
    expect((await call(platform, 'delete', `/platform/v1/join-keys/${created.joinKey.id}`, { host, headers: await as('owner') })).status).toBe(204);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'revoked', revokedAt });
    expectOauthError(await join(created.key), 'invalid_grant', /revoked/);
  });

  it("answers 404 for another organisation's key, and leaves it working", async () => {
    const theirs = await createKey({}, await as('admin', 'admin', otherIdp), otherHost);
    const res = await call(platform, 'delete', `/platform/v1/join-keys/${theirs.joinKey.id}`, { host, headers: await as('owner') });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect(await stateOf(theirs.joinKey.id, await as('admin', 'admin', otherIdp), otherHost)).toMatchObject({ state: 'active' });
    expect((await join(theirs.key, { at: otherHost })).status).toBe(200);
  });

  it('answers 404 for an id that names no key', async () => {
    const res = await call(platform, 'delete', '/platform/v1/join-keys/jk_doesnotexist', { host, headers: await as('admin') });
    expect(res.status).toBe(404);
  });

  it('refuses a member with 403, and the key keeps working', async () => {
    const created = await createKey();
    const res = await call(platform, 'delete', `/platform/v1/join-keys/${created.joinKey.id}`, { host, headers: await as('member') });
    expect(res.status).toBe(403);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', revokedAt: null });
  });
});

describe('POST /relay/v1/device/join', () => {
  it("enrols the node at once, with the key's creator as its approver", async () => {
    const created = await createKey();
    const nodeManifest = manifest({ nodeId: 'node-rack12-a', firmware: '2.4.1', labels: { hall: 'B' } });
    const res = await join(created.key, { body: { manifest: nodeManifest, name: ' Rack 12 / A ' } });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^platform_at_/),
      refresh_token: expect.stringMatching(/^platform_rt_/),
      expires_in: 3600,
      token_type: 'Bearer',
      device_id: expect.stringMatching(/^dev_/),
      scope: NODE_SCOPE,
    });
    const device = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id });
    expect(device).toMatchObject({
      organisationId: organisation.id,
      personId: await personIdOf('admin'),
      name: 'Rack 12 / A',
      kind: 'node',
      workspaceId: null,
      nodeId: 'node-rack12-a',
      enrolledVia: 'join_key',
      joinKeyId: created.joinKey.id,
      dpopJkt: null,
      revokedAt: null,
    });
    const organisationAnswer = await getOrganisation(res.body.access_token);
    expect(organisationAnswer.status).toBe(200);
    expect(organisationAnswer.body.id).toBe(organisation.id);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'used', useCount: 1, lastUsedAt: clock.now().toISOString() });
  });

  it('refuses a single-use key the second time with invalid_grant', async () => {
    const created = await createKey();
    expect((await join(created.key)).status).toBe(200);
    expectOauthError(await join(created.key), 'invalid_grant', /already used/);
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ joinKeyId: created.joinKey.id })).toBe(1);
  });

  it('enrols exactly one node when several join with one single-use key at the same time', async () => {
    const created = await createKey();
    const answers = await Promise.all(Array.from({ length: 6 }, () => join(created.key)));
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400]);
    for (const res of answers.filter((answer) => answer.status === 400)) expect(res.body.error).toBe('invalid_grant');
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ joinKeyId: created.joinKey.id })).toBe(1);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'used', useCount: 1 });
  });

  it('lets the use itself decide: of two joins that both passed the checks, only the first enrols', async () => {
    const created = await createKey();
    const service = new JoinKeyService(platform.dataSource, clock, platform.services.deviceTokens, platform.services.organisations);
    const [first, second] = [await service.usableKey(created.key, organisation.id), await service.usableKey(created.key, organisation.id)];
    await service.enrol(first, { name: 'first', nodeId: 'first', dpopJkt: undefined });
    await expect(service.enrol(second, { name: 'second', nodeId: 'second', dpopJkt: undefined })).rejects.toMatchObject({ status: 400, code: 'invalid_grant' });
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ joinKeyId: created.joinKey.id })).toBe(1);
  });

  it('refuses a key revoked between the checks and the use', async () => {
    const created = await createKey({ reusable: true });
    const service = new JoinKeyService(platform.dataSource, clock, platform.services.deviceTokens, platform.services.organisations);
    const checked = await service.usableKey(created.key, organisation.id);
    expect((await call(platform, 'delete', `/platform/v1/join-keys/${created.joinKey.id}`, { host, headers: await as('admin') })).status).toBe(204);
    await expect(service.enrol(checked, { name: 'late', nodeId: 'late', dpopJkt: undefined })).rejects.toMatchObject({ status: 400, code: 'invalid_grant' });
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'revoked', useCount: 0 });
  });

  it('keeps a single-use key used after the node it enrolled is revoked', async () => {
    const created = await createKey();
    const first = await join(created.key);
    expect(first.status).toBe(200);
    const revoked = await call(platform, 'delete', `/platform/v1/devices/${first.body.device_id}`, { host, headers: await as('admin') });
    expect(revoked.status).toBe(204);
    expectOauthError(await join(created.key), 'invalid_grant', /already used/);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'used', useCount: 1 });
  });

  it('enrols any number of nodes with a reusable key, counting them', async () => {
    const created = await createKey({ reusable: true });
    const answers = await Promise.all([join(created.key), join(created.key), join(created.key)]);
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200]);
    expect(new Set(answers.map((res) => res.body.device_id)).size).toBe(3);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 3 });
  });

  it('refuses an unknown key, a wrong secret and a malformed key alike, with invalid_grant', async () => {
    const created = await createKey();
    const [, lookup] = KEY_SHAPE.exec(created.key)!;
    const wrongSecret = `platform_jk_${lookup}_${randomBytes(32).toString('base64url')}`;
    const unknown = `platform_jk_${randomBytes(8).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    for (const key of [wrongSecret, unknown, 'platform_jk_short', created.key.slice(0, -1), `${created.key}x`]) {
      expectOauthError(await join(key), 'invalid_grant', /^the join key is not valid$/);
    }
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 0 });
  });

  it("refuses another organisation's key at this host as if it were unknown, and leaves it unused", async () => {
    const theirs = await createKey({}, await as('admin', 'admin', otherIdp), otherHost);
    expectOauthError(await join(theirs.key), 'invalid_grant', /^the join key is not valid$/);
    expect(await stateOf(theirs.joinKey.id, await as('admin', 'admin', otherIdp), otherHost)).toMatchObject({ state: 'active', useCount: 0 });
    const there = await join(theirs.key, { at: otherHost });
    expect(there.status).toBe(200);
    expect((await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: there.body.device_id })).organisationId).toBe(other.id);
  });

  it.each([
    ['without nodeId', { nodeId: undefined }, 'body.manifest.nodeId'],
    ['with schemaVersion 2', { schemaVersion: 2 }, 'body.manifest.schemaVersion'],
    ['of kind workbench', { kind: 'workbench' }, 'body.manifest.kind'],
    ['owned by a team', { owner: { type: 'team' } }, 'body.manifest.owner.type'],
    ['without owner', { owner: undefined }, 'body.manifest.owner'],
    ['with a blank nodeId', { nodeId: ' ' }, 'body.manifest.nodeId'],
    ['with more than 64 fields', Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`extra${i}`, i])), 'body.manifest'],
    ['larger than 16 KiB', { notes: 'x'.repeat(16 * 1024) }, 'body.manifest'],
  ])('refuses a manifest %s with invalid_request naming the field, and leaves the key unused', async (_case, overrides, field) => {
    const created = await createKey();
    const res = await join(created.key, { body: { manifest: JSON.parse(JSON.stringify(manifest(overrides))) } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 0 });
  });

  it.each([
    ['no key', { key: undefined }, 'body.key'],
    ['no manifest', { manifest: undefined }, 'body.manifest'],
    ['no name', { name: undefined }, 'body.name'],
    ['a blank name', { name: '  ' }, 'body.name'],
    ['a malformed dpop_jkt', { dpop_jkt: 'not-a-thumbprint' }, 'body.dpop_jkt'],
    ['an unknown field', { workspaceId: 'ws' }, 'body.workspaceId'],
  ])('refuses a request with %s with invalid_request', async (_case, overrides, field) => {
    const created = await createKey();
    const res = await join(created.key, { body: overrides });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });

  it('refuses a key whose creator is no longer an owner or admin, and takes it again once they are', async () => {
    const sub = 'admin-to-be-demoted';
    const created = await createKey({ reusable: true }, await as('admin', sub));
    const personId = await personIdOf(sub);
    await platform.services.organisations.setRole(organisation.id, personId, 'member');
    expectOauthError(await join(created.key), 'invalid_grant', /may no longer enrol nodes/);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ useCount: 0 });
    // The provider names them admin again on their next request.
    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: await as('admin', sub) })).body.role).toBe('admin');
    expect((await join(created.key)).status).toBe(200);
  });

  it('binds the tokens to the key named by dpop_jkt, proved on the request', async () => {
    const created = await createKey();
    const key = await newProofKey();
    const res = await join(created.key, { body: { dpop_jkt: key.jkt }, headers: { DPoP: await proof(key, joinUrl()) } });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    expect((await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id })).dpopJkt).toBe(key.jkt);
    expect((await getOrganisation(res.body.access_token, key)).status).toBe(200);
    const asBearer = await getOrganisation(res.body.access_token);
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.error).toBe('invalid_dpop_proof');
  });

  it("binds the tokens to the proof's key when a proof comes without dpop_jkt", async () => {
    const created = await createKey();
    const key = await newProofKey();
    const res = await join(created.key, { headers: { DPoP: await proof(key, joinUrl()) } });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('DPoP');
    expect((await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: res.body.device_id })).dpopJkt).toBe(key.jkt);
  });

  it.each([
    ['no proof', async () => ({})],
    ['a proof by another key', async () => ({ DPoP: await proof(await newProofKey(), joinUrl()) })],
    ['a proof for another URL', async (key: ProofKey) => ({ DPoP: await proof(key, `http://${host}/relay/v1/token`) })],
    ['a proof for GET', async (key: ProofKey) => ({ DPoP: await proof(key, joinUrl(), { method: 'GET' }) })],
    ['a malformed proof', async () => ({ DPoP: 'not.a.proof' })],
  ])('refuses dpop_jkt with %s with invalid_dpop_proof (400), and leaves the key unused', async (_case, headers) => {
    const created = await createKey();
    const key = await newProofKey();
    const res = await join(created.key, { body: { dpop_jkt: key.jkt }, headers: await headers(key) });
    expectOauthError(res, 'invalid_dpop_proof');
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 0 });
    expect((await join(created.key, { body: { dpop_jkt: key.jkt }, headers: { DPoP: await proof(key, joinUrl()) } })).status).toBe(200);
  });

  it('refuses to bind a node to an Ed25519 key of small order, whose proofs need no private key', async () => {
    const created = await createKey();
    const made = await keylessProof(SMALL_ORDER_ED25519.identity, { htm: 'POST', htu: joinUrl(), iat: epochSeconds(clock.now()) });
    for (const body of [{ dpop_jkt: made.jkt }, {}]) {
      expectOauthError(await join(created.key, { body, headers: { DPoP: made.proof } }), 'invalid_dpop_proof', /signature is invalid/);
    }
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 0 });
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ dpopJkt: made.jkt })).toBe(0);
  });

  it('refuses a replayed proof', async () => {
    const created = await createKey({ reusable: true });
    const key = await newProofKey();
    const headers = { DPoP: await proof(key, joinUrl()) };
    expect((await join(created.key, { body: { dpop_jkt: key.jkt }, headers })).status).toBe(200);
    expectOauthError(await join(created.key, { body: { dpop_jkt: key.jkt }, headers }), 'invalid_dpop_proof', /already used/);
  });

  // Moves the clock a long way: proofs signed before this point are stale afterwards.
  it('refuses an expired key, and shows it expired', async () => {
    const created = await createKey({ expiresInSeconds: 300 });
    clock.advance(299_999);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active' });
    clock.advance(1);
    expectOauthError(await join(created.key), 'invalid_grant', /expired/);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'expired', useCount: 0 });
  });

  it('writes no join key or token to the logs', async () => {
    const text = JSON.stringify(platform.logs);
    expect(platform.logs.length).toBeGreaterThan(10);
    for (const key of keysSeen) expect(text).not.toContain(KEY_SHAPE.exec(key)![2]);
    expect(text).not.toMatch(/platform_(jk|at|rt)_[A-Za-z0-9]/);
  });
});

describe('requester text at POST /relay/v1/device/join', () => {
  it.each([
    ['body.name', { name: 'Rack\u202E21 kcaR' }, 'U+202E'],
    ['body.name', { name: 'Rack 12\u200B' }, 'U+200B'],
    ['body.manifest.nodeId', { manifest: manifest({ nodeId: 'node\u2066-1' }) }, 'U+2066'],
    ['body.manifest.name', { manifest: manifest({ name: 'rack\u00ADnode' }) }, 'U+00AD'],
  ])('refuses %s holding a character not shown as it is, and the key stays unused', async (field, body, code) => {
    const created = await createKey();
    const res = await join(created.key, { body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
    expect(res.body.error_description ?? res.body.message).toContain(code);
    expect(await stateOf(created.joinKey.id)).toMatchObject({ state: 'active', useCount: 0 });
  });
});

describe('rate limit of POST /relay/v1/device/join', () => {
  let limited: TestPlatform;
  let limitedHost: string;

  beforeAll(async () => {
    ({ platform: limited, host: limitedHost } = await startWithOrganisation({}, { name: 'Limited' }));
  });
  afterAll(() => limited?.close());

  it(`answers 429 with Retry-After after ${DEVICE_JOIN_RATE_LIMIT.limit} joins a minute from one address`, async () => {
    const body = { key: 'platform_jk_0000000000000000_not-a-key', manifest: manifest(), name: 'n' };
    for (let i = 0; i < DEVICE_JOIN_RATE_LIMIT.limit; i++) {
      const res = await call(limited, 'post', '/relay/v1/device/join', { host: limitedHost, body });
      expect(res.status).toBe(400);
    }
    const refused = await call(limited, 'post', '/relay/v1/device/join', { host: limitedHost, body });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
  });
});

describe('server nonces (DPOP_REQUIRE_NONCE) at POST /relay/v1/device/join', () => {
  let noncePlatform: TestPlatform;
  let nonceIdp: TestIdentityProvider;
  let nonceHost: string;

  beforeAll(async () => {
    noncePlatform = await startPlatform({ clock, env: { RATE_LIMITS_ENABLED: 'false', DPOP_REQUIRE_NONCE: 'true' } });
    const orgs = await twoOrganisations(noncePlatform, clock, ['Nonce', 'Nonce other']);
    await orgs.otherIdp.close();
    nonceIdp = orgs.idp;
    nonceHost = orgs.host;
  });
  afterAll(async () => {
    await nonceIdp?.close();
    await noncePlatform?.close();
  });

  it('answers 400 use_dpop_nonce with a DPoP-Nonce header and leaves the key unused, then takes a proof carrying it', async () => {
    const created = await call(noncePlatform, 'post', '/platform/v1/join-keys', { host: nonceHost, headers: await personHeaders(nonceIdp, 'admin'), body: { description: 'Nonce rack' } });
    expect(created.status).toBe(201);
    const key = await newProofKey();
    const url = `http://${nonceHost}/relay/v1/device/join`;
    const body = { key: created.body.key, manifest: manifest(), name: 'Nonce node', dpop_jkt: key.jkt };
    const first = await call(noncePlatform, 'post', '/relay/v1/device/join', { host: nonceHost, headers: { DPoP: await proof(key, url) }, body });
    expectOauthError(first, 'use_dpop_nonce');
    const nonce = first.headers['dpop-nonce'] as string;
    expect(nonce).toBeTruthy();
    const second = await call(noncePlatform, 'post', '/relay/v1/device/join', { host: nonceHost, headers: { DPoP: await proof(key, url, { nonce }) }, body });
    expect(second.status).toBe(200);
    expect(second.body.token_type).toBe('DPoP');
  });
});
