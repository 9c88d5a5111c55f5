import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Response } from 'supertest';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import { PersonIdentityEntity, type OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PolicyRevisionEntity } from '../../src/modules/policy/entities.js';
import { canonicalJson, mergeOverride, revisionOf } from '../../src/modules/policy/merge.js';
import { PolicyStore } from '../../src/modules/policy/store.js';
import type { PolicyDocument } from '../../src/modules/policy/schemas.js';
import { ProjectService } from '../../src/modules/projects/service.js';
import { ManualClock } from '../../src/util/clock.js';
import { newId } from '../../src/util/ids.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * The effective policy (spec 2.14, 4.10): defaults until the organisation publishes, publishes
 * by owners and admins only, project overrides merged over the organisation's policy, revisions
 * as ETags, and a stored document that stops validating never stopping the answer.
 */

const ROLE_CLAIM = 'platform_role';
const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;
let other: OrganisationRecord;
let otherHost: string;
let projects: ProjectService;
let device: EnrolledDevice;

const SECTIONS = ['dlp', 'approvals', 'remote', 'git', 'agents', 'network', 'tools', 'secrets', 'teams', 'pullRequests', 'cloudAgents'];

beforeAll(async () => {
  platform = await startPlatform({ clock });
  idp = await TestIdentityProvider.start({ clock });
  organisation = await createOrganisation(platform, { name: 'Policy Org', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  other = await createOrganisation(platform, { name: 'Elsewhere' });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  otherHost = (await platform.services.organisations.hostsOf(other.id))[0]!;
  projects = new ProjectService(platform.dataSource, platform.clock);
  const person = await createPerson(platform, organisation.id);
  device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
});

afterAll(async () => {
  await idp?.close();
  await platform?.close();
});

async function personToken(role: 'owner' | 'admin' | 'member'): Promise<string> {
  return idp.mint({ sub: `policy-${role}`, claims: { [ROLE_CLAIM]: role, name: `Policy ${role}` } });
}

async function getPolicy(options: { as?: EnrolledDevice; projectId?: string; headers?: Record<string, string>; at?: string } = {}): Promise<Response> {
  const at = options.at ?? host;
  const path = options.projectId === undefined ? '/policy/v1' : `/policy/v1?projectId=${encodeURIComponent(options.projectId)}`;
  const auth = await deviceHeaders(options.as ?? device, 'GET', `http://${at}/policy/v1`);
  return call(platform, 'get', path, { host: at, headers: { ...auth, ...options.headers } });
}

async function publish(path: string, body: unknown, token?: string): Promise<Response> {
  const headers = { Authorization: `Bearer ${token ?? (await personToken('admin'))}` };
  return call(platform, 'put', path, { host, headers, body });
}

const publishOrganisation = (body: unknown, token?: string) => publish('/policy/v1/organisation', body, token);
const publishProject = (projectId: string, body: unknown, token?: string) => publish(`/policy/v1/projects/${projectId}`, body, token);

/** A whole document that differs from the defaults in a few places. */
function organisationDocument(changes: Record<string, unknown> = {}): PolicyDocument {
  return mergeOverride(DEFAULT_POLICY, {
    allowedProviders: ['acme-ai'],
    dlp: { onSecrets: 'block' },
    network: { denyHosts: ['paste.example.test'] },
    cloudAgents: { maxConcurrent: 2 },
    ...changes,
  });
}

/** The effective policy of a publish answer (what `GET /policy/v1` answers), without what the publish changed. */
function effective(res: Response) {
  const { changed: _changed, number: _number, ...answer } = res.body as Record<string, unknown>;
  return answer;
}

const storedRows = (organisationId = organisation.id) => platform.dataSource.getRepository(PolicyRevisionEntity).findBy({ organisationId });

async function insertRow(organisationId: string, projectId: string | null, document: string): Promise<number> {
  const repository = platform.dataSource.getRepository(PolicyRevisionEntity);
  const newest = await repository.findOne({ where: { organisationId }, order: { number: 'DESC' } });
  const number = (newest?.number ?? 0) + 1;
  await repository.insert({ id: newId('pol'), organisationId, projectId, number, document, publishedBy: null, createdAt: clock.now() });
  return number;
}

function warningsAbout(revision: number, organisationId = organisation.id) {
  return platform.logs.filter((line) => line.organisationId === organisationId && line.revision === revision && line.level === 40);
}

describe('GET /policy/v1 before anything is published', () => {
  it('answers the shipped defaults, unpublished, with every section of the spec', async () => {
    const fresh = await createOrganisation(platform);
    const freshHost = (await platform.services.organisations.hostsOf(fresh.id))[0]!;
    const person = await createPerson(platform, fresh.id);
    const enrolled = await enrolDevice(platform, { organisationId: fresh.id, personId: person.id });
    const res = await getPolicy({ as: enrolled, at: freshHost });

    expect(res.status).toBe(200);
    expect(res.body.published).toBe(false);
    expect(res.body.policy).toEqual({ ...DEFAULT_POLICY, source: 'default' });
    expect(Object.keys(res.body.policy)).toEqual(expect.arrayContaining(['version', 'source', 'allowedRuntimes', 'allowedProviders', 'inference', 'settings', 'settingsMode', ...SECTIONS]));
    expect(res.body.policy.version).toBe(1);
    expect(res.body.revision).toBe(revisionOf(res.body.policy));
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    expect(res.headers['cache-control']).toBe('private, no-cache');
  });

  it('needs a token, and one that carries policy:read', async () => {
    const anonymous = await call(platform, 'get', '/policy/v1', { host });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('unauthorized');

    const person = await createPerson(platform, organisation.id);
    const narrow = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    await platform.dataSource.getRepository(DeviceEntity).update({ id: narrow.device.id }, { scope: 'organisation:read ingest:write' });
    const res = await getPolicy({ as: narrow });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('insufficient_scope');
    expect(res.headers['www-authenticate']).toContain('scope="policy:read"');
  });
});

describe('publishing the organisation policy', () => {
  let before: Response;

  beforeAll(async () => {
    before = await getPolicy();
  });

  it('lets an admin publish: published, a new revision, a new ETag for every device', async () => {
    const document = organisationDocument();
    const res = await publishOrganisation(document);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ revision: revisionOf({ ...document, source: 'organisation' }), policy: { ...document, source: 'organisation' }, published: true, changed: true, number: 1 });
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);

    const seen = await getPolicy();
    expect(seen.status).toBe(200);
    expect(seen.body).toEqual(effective(res));
    expect(seen.headers.etag).not.toBe(before.headers.etag);

    const rows = await storedRows();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ projectId: null, number: 1, document: canonicalJson(document) });
    expect(rows[0]!.publishedBy).toMatch(/^usr_/);
  });

  it('keeps one revision for the same document published again, whatever its key order', async () => {
    const current = await getPolicy();
    const reordered = Object.fromEntries(Object.entries(organisationDocument()).reverse());
    const res = await publishOrganisation(reordered, await personToken('owner'));
    expect(res.status).toBe(200);
    expect(res.body.revision).toBe(current.body.revision);
    expect(await storedRows()).toHaveLength(1);
    expect((await getPolicy()).headers.etag).toBe(current.headers.etag);
  });

  it('sets source itself: a source sent in the document is not kept', async () => {
    const current = await getPolicy();
    const res = await publishOrganisation({ ...organisationDocument(), source: 'project' });
    expect(res.status).toBe(200);
    expect(res.body.policy.source).toBe('organisation');
    expect(res.body.revision).toBe(current.body.revision);
    expect(await storedRows()).toHaveLength(1);
  });

  it('refuses a member with 403 and keeps the policy', async () => {
    const current = await getPolicy();
    const res = await publishOrganisation(organisationDocument({ cloudAgents: { allowed: false, maxConcurrent: 1 } }), await personToken('member'));
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    expect(await storedRows()).toHaveLength(1);
    expect((await getPolicy()).body.revision).toBe(current.body.revision);
  });

  it('refuses a device, Bearer or DPoP-bound: devices enforce policies, they never publish them', async () => {
    for (const alg of [undefined, 'ES256'] as const) {
      const person = await createPerson(platform, organisation.id, 'owner');
      const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, ...(alg ? { alg } : {}) });
      const headers = await deviceHeaders(enrolled, 'PUT', `http://${host}/policy/v1/organisation`);
      const res = await call(platform, 'put', '/policy/v1/organisation', { host, headers, body: organisationDocument({ cloudAgents: { allowed: false, maxConcurrent: 1 } }) });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
      expect(res.body.message).toBe('this kind of token is not accepted here');
    }
    expect(await storedRows()).toHaveLength(1);
  });

  it.each([
    ['an enumerated value it does not know', organisationDocument({ dlp: { onSecrets: 'shred' } }), 'body.dlp.onSecrets', /must be one of "allow", "warn", "redact", "block"/],
    ['a missing section', (({ cloudAgents: _gone, ...rest }) => rest)(organisationDocument()), 'body.cloudAgents', /is required/],
    ['a misspelt field', organisationDocument({ tools: { unlistedServer: 'deny' } }), 'body.tools.unlistedServer', /is not allowed/],
    ['a rule without its action', organisationDocument({ network: { rules: [{ host: 'example.test' }] } }), 'body.network.rules[0].action', /is required/],
    ['another format version', organisationDocument({ version: 2 }), 'body.version', /must be equal to constant/],
  ])('refuses %s with 400 naming the field, and keeps serving the previous one', async (_case, document, field, message) => {
    const current = await getPolicy();
    const res = await publishOrganisation(document);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
    expect(res.body.message).toMatch(message);
    expect(await storedRows()).toHaveLength(1);
    const after = await getPolicy();
    expect(after.body).toEqual(current.body);
  });

  it('refuses a document too large to store', async () => {
    // Each string within JSON_MAX_STRING_LENGTH, the whole beyond what a row holds.
    const res = await publishOrganisation(organisationDocument({ settings: { notes: 'x'.repeat(40_000), more: 'y'.repeat(30_000) } }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field: 'body' });
    expect(await storedRows()).toHaveLength(1);
  });

  it('keeps both of two publishes made at the same moment, one after the other', async () => {
    const before = (await storedRows()).length;
    const [first, second] = await Promise.all([
      publishOrganisation(organisationDocument({ teams: { allowGranted: true, allowPersonal: false, granted: [] } })),
      publishOrganisation(organisationDocument({ teams: { allowGranted: false, allowPersonal: true, granted: [] } })),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const numbers = (await storedRows()).map((row) => row.number).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: before + 2 }, (_, index) => index + 1));
    const served = await getPolicy();
    expect([first.body.revision, second.body.revision]).toContain(served.body.revision);
  });

  it('answers a new revision for a changed document, and records who published it', async () => {
    const current = await getPolicy();
    const before = (await storedRows()).length;
    const res = await publishOrganisation(organisationDocument({ git: { protectedBranches: ['main', 'release/*'], requirePullRequest: true } }));
    expect(res.status).toBe(200);
    expect(res.body.revision).not.toBe(current.body.revision);
    expect(res.body.policy.git.protectedBranches).toEqual(['main', 'release/*']);
    expect((await getPolicy()).body.revision).toBe(res.body.revision);
    const rows = await storedRows();
    expect(rows).toHaveLength(before + 1);
    const newest = rows.reduce((a, b) => (a.number > b.number ? a : b));
    expect(newest.document).toBe(canonicalJson(organisationDocument({ git: { protectedBranches: ['main', 'release/*'], requirePullRequest: true } })));
    expect(newest.publishedBy).toMatch(/^usr_/);
  });
});

describe('ETag and If-None-Match', () => {
  it('answers 304 with no body while the revision holds, 200 for a stale or foreign tag', async () => {
    const current = await getPolicy();
    const etag = current.headers.etag!;

    const same = await getPolicy({ headers: { 'If-None-Match': etag } });
    expect(same.status).toBe(304);
    expect(same.text).toBe('');
    expect(same.headers.etag).toBe(etag);
    expect(same.headers['cache-control']).toBe('private, no-cache');

    expect((await getPolicy({ headers: { 'If-None-Match': `W/${etag}` } })).status).toBe(304);
    expect((await getPolicy({ headers: { 'If-None-Match': `"stale", ${etag}` } })).status).toBe(304);

    const stale = await getPolicy({ headers: { 'If-None-Match': `"${revisionOf(DEFAULT_POLICY)}"` } });
    expect(stale.status).toBe(200);
    expect(stale.body.revision).toBe(current.body.revision);
  });

  it('answers 200 to the old tag once a new revision is published', async () => {
    const old = await getPolicy();
    const published = await publishOrganisation(organisationDocument({ agents: { sandbox: 'isolated' } }));
    expect(published.status).toBe(200);
    const res = await getPolicy({ headers: { 'If-None-Match': old.headers.etag! } });
    expect(res.status).toBe(200);
    expect(res.body.policy.agents.sandbox).toBe('isolated');
    expect(res.headers.etag).toBe(published.headers.etag);
  });
});

describe('device tokens', () => {
  it.each([
    ['a Bearer workbench token', {}],
    ['a DPoP-bound (ES256) workbench token', { alg: 'ES256' as const }],
    ['a DPoP-bound (Ed25519) workbench token', { alg: 'Ed25519' as const }],
    ["a node's token", { kind: 'node' as const }],
  ])('accepts %s and answers the same policy', async (_case, options) => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, ...options });
    const reference = await getPolicy();
    const res = await getPolicy({ as: enrolled });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(reference.body);
  });

  it("answers a person of the organisation too, whatever their role (the console shows what applies)", async () => {
    const reference = await getPolicy();
    const res = await call(platform, 'get', '/policy/v1', { host, headers: { Authorization: `Bearer ${await personToken('member')}` } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(reference.body);
  });

  it('refuses a DPoP-bound token sent without its proof', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, alg: 'ES256' });
    const res = await call(platform, 'get', '/policy/v1', { host, headers: { Authorization: `Bearer ${enrolled.tokens.access_token}` } });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_dpop_proof');
  });
});

describe('project overrides', () => {
  let projectId: string;
  let organisationAnswer: Response;

  beforeAll(async () => {
    projectId = (await projects.create(organisation.id, { name: 'Payments' })).id;
    organisationAnswer = await getPolicy();
  });

  it('answers the organisation policy for a project without an override', async () => {
    const res = await getPolicy({ projectId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(organisationAnswer.body);
  });

  it('merges an override over the organisation policy: objects key by key, arrays replaced', async () => {
    const override = { dlp: { onPii: 'block' }, network: { denyHosts: ['files.example.test'] }, pullRequests: { requiredApprovals: 2 } };
    const res = await publishProject(projectId, override);
    expect(res.status).toBe(200);
    const expected = mergeOverride(organisationAnswer.body.policy as PolicyDocument, override);
    expect(effective(res)).toEqual({ revision: revisionOf({ ...expected, source: 'project' }), policy: { ...expected, source: 'project' }, published: true });
    expect(res.body.changed).toBe(true);
    expect(res.body.policy.dlp).toEqual({ ...organisationAnswer.body.policy.dlp, onPii: 'block' });
    expect(res.body.policy.network.denyHosts).toEqual(['files.example.test']);
    expect(res.body.policy.pullRequests.requireChecks).toBe(organisationAnswer.body.policy.pullRequests.requireChecks);

    const seen = await getPolicy({ projectId });
    expect(seen.body).toEqual(effective(res));
    expect(seen.headers.etag).not.toBe(organisationAnswer.headers.etag);
    expect((await getPolicy()).body).toEqual(organisationAnswer.body);
  });

  it('follows the organisation policy where the override says nothing', async () => {
    const updated = await publishOrganisation(organisationDocument({ agents: { sandbox: 'isolated' }, remote: { ...DEFAULT_POLICY.remote, idleTimeoutMinutes: 5 } }));
    expect(updated.status).toBe(200);
    const res = await getPolicy({ projectId });
    expect(res.body.policy.remote.idleTimeoutMinutes).toBe(5);
    expect(res.body.policy.dlp.onPii).toBe('block');
    organisationAnswer = updated;
  });

  it('refuses an invalid override with 400 naming the field, and keeps the previous one', async () => {
    const current = await getPolicy({ projectId });
    for (const [override, field] of [
      [{ dlp: { onPii: 'shred' } }, 'body.dlp.onPii'],
      [{ network: { rules: [{ host: 'example.test' }] } }, 'body.network.rules[0].action'],
      [{ cloudAgents: { maxConcurrent: 0 } }, 'body.cloudAgents.maxConcurrent'],
      [{ remote: { transports: ['lan'] } }, 'body.remote.transports'],
    ] as const) {
      const res = await publishProject(projectId, override);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field });
    }
    expect((await getPolicy({ projectId })).body).toEqual(current.body);
  });

  it('refuses a member, even one who owns the project', async () => {
    const member = await personToken('member');
    const signedIn = await call(platform, 'get', '/platform/v1/organisation', { host, headers: { Authorization: `Bearer ${member}` } });
    expect(signedIn.status).toBe(200);
    const identity = await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: idp.issuer, subject: 'policy-member' });
    const owned = await projects.create(organisation.id, { name: 'Theirs', owner: identity.personId });
    const res = await publishProject(owned.id, { agents: { sandbox: 'off' } }, member);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    expect((await getPolicy({ projectId: owned.id })).body.policy.agents.sandbox).toBe(organisationAnswer.body.policy.agents.sandbox);
  });

  it('clears the override with {}', async () => {
    const res = await publishProject(projectId, {});
    expect(res.status).toBe(200);
    expect(effective(res)).toEqual((await getPolicy()).body);
    expect(res.body.policy.source).toBe('organisation');
  });

  it('answers 404 for a project of another organisation and for an unknown one, reading or publishing', async () => {
    const theirs = await projects.create(other.id, { name: 'Not yours' });
    for (const id of [theirs.id, 'prj_doesnotexist0000', 'x']) {
      const read = await getPolicy({ projectId: id });
      expect(read.status).toBe(404);
      expect(read.body.error).toBe('not_found');
      const write = await publishProject(id, { agents: { sandbox: 'off' } });
      expect(write.status).toBe(404);
      expect(write.body.error).toBe('not_found');
    }
    expect(await storedRows(other.id)).toHaveLength(0);
  });
});

describe('stored documents that no longer validate', () => {
  it('serves the newest valid revision, logs the bad ones once, and never answers 500', async () => {
    const good = await getPolicy();
    const badSchema = await insertRow(organisation.id, null, canonicalJson(mergeOverride(organisationDocument(), { dlp: { onSecrets: 'vaporise' } })));
    const notJson = await insertRow(organisation.id, null, '{"version": 1, "dlp": ');

    for (let poll = 0; poll < 3; poll += 1) {
      const res = await getPolicy();
      expect(res.status).toBe(200);
      expect(res.body).toEqual(good.body);
    }
    expect((await getPolicy({ headers: { 'If-None-Match': good.headers.etag! } })).status).toBe(304);

    // Logged once each: the answer is cached until the next publish, not re-checked per poll.
    expect(warningsAbout(badSchema)).toHaveLength(1);
    expect(warningsAbout(badSchema)[0]).toMatchObject({ field: 'policy.dlp.onSecrets' });
    expect(warningsAbout(notJson)).toHaveLength(1);
  });

  it('falls back to the defaults, unpublished, when no stored revision validates', async () => {
    const broken = await createOrganisation(platform);
    const brokenHost = (await platform.services.organisations.hostsOf(broken.id))[0]!;
    const person = await createPerson(platform, broken.id);
    const enrolled = await enrolDevice(platform, { organisationId: broken.id, personId: person.id });
    await insertRow(broken.id, null, canonicalJson({ version: 1 }));
    await insertRow(broken.id, null, 'not json at all');

    const res = await getPolicy({ as: enrolled, at: brokenHost });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ published: false, policy: { ...DEFAULT_POLICY, source: 'default' } });
    expect(platform.logs.some((line) => line.organisationId === broken.id && line.level === 50)).toBe(true);
  });

  it('serves the newest valid project override when the newest one is bad', async () => {
    const project = await projects.create(organisation.id, { name: 'Ledger' });
    const valid = await publishProject(project.id, { tools: { defaults: { changes: 'ask' } } });
    expect(valid.status).toBe(200);
    const bad = await insertRow(organisation.id, project.id, canonicalJson({ tools: { defaults: { changes: 'sometimes' } } }));

    const res = await getPolicy({ projectId: project.id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(effective(valid));
    expect(warningsAbout(bad)).toHaveLength(1);
    expect(warningsAbout(bad)[0]).toMatchObject({ projectId: project.id, field: 'override.tools.defaults.changes' });
  });

  it('lists publishes newest first with their validity, for owners and admins only', async () => {
    const res = await call(platform, 'get', '/policy/v1/organisation/revisions?limit=3', { host, headers: { Authorization: `Bearer ${await personToken('owner')}` } });
    expect(res.status).toBe(200);
    const numbers = (await storedRows()).filter((row) => row.projectId === null).map((row) => row.number).sort((a, b) => b - a);
    expect(res.body.revisions.map((revision: { number: number }) => revision.number)).toEqual(numbers.slice(0, 3));
    expect(res.body.revisions.map((revision: { valid: boolean }) => revision.valid)).toEqual([false, false, true]);
    expect(res.body.revisions[0].document).toEqual({});
    expect(res.body.revisions[1].document.dlp.onSecrets).toBe('vaporise');
    expect(res.body.revisions[2]).toMatchObject({ projectId: null, publishedAt: expect.any(String) });

    const member = await call(platform, 'get', '/policy/v1/organisation/revisions', { host, headers: { Authorization: `Bearer ${await personToken('member')}` } });
    expect(member.status).toBe(403);
  });

  it('pages the publishes with cursor, each once, and ends with nextCursor null', async () => {
    const owner = { Authorization: `Bearer ${await personToken('owner')}` };
    const numbers = (await storedRows()).filter((row) => row.projectId === null).map((row) => row.number).sort((a, b) => b - a);
    expect(numbers.length).toBeGreaterThan(2);
    const paged: number[] = [];
    let query = '?limit=2';
    for (let pages = 0; pages < 50; pages++) {
      const res = await call(platform, 'get', `/policy/v1/organisation/revisions${query}`, { host, headers: owner });
      expect(res.status).toBe(200);
      paged.push(...res.body.revisions.map((revision: { number: number }) => revision.number));
      if (res.body.nextCursor === null) break;
      query = `?limit=2&cursor=${res.body.nextCursor}`;
    }
    expect(paged).toEqual(numbers);
    const all = await call(platform, 'get', '/policy/v1/organisation/revisions?limit=100', { host, headers: owner });
    expect(all.body.nextCursor).toBeNull();
    const bad = await call(platform, 'get', '/policy/v1/organisation/revisions?cursor=abc', { host, headers: owner });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('query.cursor');
  });

  it("lists a project's overrides, and answers 404 for a project elsewhere", async () => {
    const admin = { Authorization: `Bearer ${await personToken('admin')}` };
    const project = await projects.create(organisation.id, { name: 'Audit trail' });
    expect((await publishProject(project.id, { git: { requirePullRequest: false } })).status).toBe(200);
    expect((await publishProject(project.id, {})).status).toBe(200);
    const res = await call(platform, 'get', `/policy/v1/projects/${project.id}/revisions`, { host, headers: admin });
    expect(res.status).toBe(200);
    expect(res.body.revisions.map((revision: { document: unknown }) => revision.document)).toEqual([{}, { git: { requirePullRequest: false } }]);
    expect(res.body.revisions.every((revision: { projectId: string; valid: boolean }) => revision.projectId === project.id && revision.valid)).toBe(true);

    const member = await call(platform, 'get', `/policy/v1/projects/${project.id}/revisions`, { host, headers: { Authorization: `Bearer ${await personToken('member')}` } });
    expect(member.status).toBe(403);
    expect(member.body.error).toBe('forbidden');

    const theirs = await projects.create(other.id, { name: 'Theirs too' });
    const elsewhere = await call(platform, 'get', `/policy/v1/projects/${theirs.id}/revisions`, { host, headers: admin });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.body.error).toBe('not_found');
  });
});

describe('other organisations', () => {
  it("never sees this organisation's policy through its own devices", async () => {
    const person = await createPerson(platform, other.id);
    const theirs = await enrolDevice(platform, { organisationId: other.id, personId: person.id });
    const res = await getPolicy({ as: theirs, at: otherHost });
    expect(res.status).toBe(200);
    expect(res.body.published).toBe(false);

    const wrongHost = await getPolicy({ as: theirs, at: host });
    expect(wrongHost.status).toBe(401);
  });
});

describe('publishes that keep losing the race for the next number', () => {
  it('answer 409 conflict after three attempts and store nothing, for the organisation and for a project', async () => {
    const project = await projects.create(organisation.id, { name: 'Raced' });
    expect((await publishOrganisation(organisationDocument({ agents: { sandbox: 'isolated' } }))).status).toBe(200);
    const before = (await storedRows()).length;
    // Another publisher always takes the number first: every insert collides on the unique index.
    const lost = jest.spyOn(PolicyStore.prototype, 'maxNumber').mockResolvedValue(0);
    try {
      const res = await publishOrganisation(organisationDocument({ agents: { sandbox: 'off' } }));
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('conflict');
      const projectRes = await publishProject(project.id, { git: { requirePullRequest: true } });
      expect(projectRes.status).toBe(409);
      expect(projectRes.body.error).toBe('conflict');
      expect(lost).toHaveBeenCalledTimes(6);
    } finally {
      lost.mockRestore();
    }
    expect((await storedRows()).length).toBe(before);
  });
});
