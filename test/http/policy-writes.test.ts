import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Response } from 'supertest';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { PersonIdentityEntity, type OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PolicyRevisionEntity } from '../../src/modules/policy/entities.js';
import { canonicalJson, mergeOverride } from '../../src/modules/policy/merge.js';
import { PolicyStore } from '../../src/modules/policy/store.js';
import type { PolicyDocument } from '../../src/modules/policy/schemas.js';
import { newId } from '../../src/util/ids.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Policy writes that cannot race: `If-Match` on publish and restore (412, and 428 where the
 * deployment requires it), publishes identical to what applies store nothing and say so,
 * restores make an earlier publish current as a new one, and every change writes one audit line.
 * Runs on SQLite (`npm test`) and on MariaDB (`npm run test:services`), where the two concurrent
 * publishers really run in two transactions at once.
 */

const ROLE_CLAIM = 'platform_role';

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;
let other: OrganisationRecord;

beforeAll(async () => {
  platform = await startPlatform();
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { name: 'Writes Org', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  other = await createOrganisation(platform, { name: 'Other Org' });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});

afterAll(async () => {
  await idp?.close();
  await platform?.close();
});

const token = (role: 'owner' | 'admin' | 'member', sub = `writes-${role}`) => idp.mint({ sub, claims: { [ROLE_CLAIM]: role } });

async function as(role: 'owner' | 'admin' | 'member', headers: Record<string, string> = {}): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await token(role)}`, ...headers };
}

function document(changes: Record<string, unknown> = {}): PolicyDocument {
  return mergeOverride(DEFAULT_POLICY, changes);
}

async function read(projectId?: string, target = platform): Promise<Response> {
  const path = projectId ? `/policy/v1?projectId=${projectId}` : '/policy/v1';
  return call(target, 'get', path, { host, headers: await as('member') });
}

async function publish(body: unknown, headers: Record<string, string> = {}, projectId?: string, target = platform): Promise<Response> {
  const path = projectId ? `/policy/v1/projects/${projectId}` : '/policy/v1/organisation';
  return call(target, 'put', path, { host, headers: await as('admin', headers), body });
}

async function restore(number: number, headers: Record<string, string> = {}, projectId?: string, role: 'admin' | 'member' = 'admin'): Promise<Response> {
  const path = projectId ? `/policy/v1/projects/${projectId}/revisions/${number}/restore` : `/policy/v1/organisation/revisions/${number}/restore`;
  return call(platform, 'post', path, { host, headers: await as(role, headers) });
}

const rows = async (organisationId = organisation.id) =>
  (await platform.dataSource.getRepository(PolicyRevisionEntity).findBy({ organisationId })).sort((a, b) => a.number - b.number);

const auditLines = (action: string) =>
  platform.logs.filter((line) => (line.audit as { action?: string } | undefined)?.action === action && (line.audit as { organisationId: string }).organisationId === organisation.id);

async function personIdOf(subject: string): Promise<string> {
  return (await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: idp.issuer, subject })).personId;
}

describe('If-Match on publish', () => {
  // First in the file: nothing is published yet.
  it('publishes the defaults over the ETag of the defaults: a change, since the policy becomes published', async () => {
    const defaults = await read();
    expect(defaults.body.published).toBe(false);
    const res = await publish(DEFAULT_POLICY, { 'If-Match': defaults.headers.etag! });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: true, published: true, number: 1 });
    expect(res.body.revision).not.toBe(defaults.body.revision);
  });

  it('publishes over the ETag of the current policy, and answers the new one', async () => {
    const current = await read();
    const res = await publish(document({ agents: { sandbox: 'isolated' } }), { 'If-Match': current.headers.etag! });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: true, published: true, number: expect.any(Number) });
    expect(res.headers.etag).toBe(`"${res.body.revision}"`);
    expect((await read()).headers.etag).toBe(res.headers.etag);
    // The answer's ETag is what the next change names.
    const next = await publish(document({ agents: { sandbox: 'off' } }), { 'If-Match': res.headers.etag! });
    expect(next.status).toBe(200);
    expect(next.body.policy.agents.sandbox).toBe('off');
  });

  it.each([
    ['a stale ETag', (_etag: string) => '"stale-revision"'],
    ['the weak form of the current ETag (If-Match compares strongly)', (etag: string) => `W/${etag}`],
    ['the revision without its quotes', (etag: string) => etag.slice(1, -1)],
  ])('refuses %s with 412 precondition_failed, names the current ETag, and stores nothing', async (_case, header) => {
    const current = await read();
    const before = await rows();
    const res = await publish(document({ agents: { sandbox: 'workspace' }, git: { protectedBranches: ['x'], requirePullRequest: false } }), {
      'If-Match': header(current.headers.etag!),
    });
    expect(res.status).toBe(412);
    expect(res.body.error).toBe('precondition_failed');
    expect(res.body.message).toMatch(/changed since the ETag given in If-Match/);
    expect(res.headers.etag).toBe(current.headers.etag);
    expect(await rows()).toHaveLength(before.length);
    expect((await read()).body).toEqual(current.body);
  });

  it('accepts * and a list that holds the current ETag', async () => {
    const current = await read();
    const listed = await publish(document({ cloudAgents: { allowed: true, maxConcurrent: 3 } }), { 'If-Match': `"older", ${current.headers.etag!}` });
    expect(listed.status).toBe(200);
    expect(listed.body.changed).toBe(true);
    const any = await publish(document({ cloudAgents: { allowed: true, maxConcurrent: 4 } }), { 'If-Match': '*' });
    expect(any.status).toBe(200);
    expect(any.body.policy.cloudAgents.maxConcurrent).toBe(4);
  });

  it('checks a project publish against the ETag of the project\'s effective policy, which the organisation\'s policy moves too', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'If-Match project' });
    const seen = await read(project.id);
    const first = await publish({ dlp: { onPii: 'block' } }, { 'If-Match': seen.headers.etag! }, project.id);
    expect(first.status).toBe(200);
    expect(first.body.policy.source).toBe('project');

    // The organisation's policy changes under the project: the project's ETag changes with it.
    const organisationNow = await read();
    expect((await publish(document({ agents: { sandbox: 'isolated' } }), { 'If-Match': organisationNow.headers.etag! })).status).toBe(200);
    const stale = await publish({ dlp: { onPii: 'warn' } }, { 'If-Match': first.headers.etag! }, project.id);
    expect(stale.status).toBe(412);
    expect(stale.headers.etag).toBe((await read(project.id)).headers.etag);
    const fresh = await publish({ dlp: { onPii: 'warn' } }, { 'If-Match': stale.headers.etag! }, project.id);
    expect(fresh.status).toBe(200);
    expect(fresh.body.policy.dlp.onPii).toBe('warn');
  });

  it('lets publishers without If-Match publish as before (the deployment does not require it)', async () => {
    const res = await publish(document({ agents: { sandbox: 'workspace' } }));
    expect(res.status).toBe(200);
    expect(res.body.changed).toBe(true);
  });
});

describe('two publishers at the same moment', () => {
  it('with the same If-Match: exactly one wins, the other gets 412, and one publish is stored', async () => {
    for (let round = 0; round < 4; round += 1) {
      const current = await read();
      const before = await rows();
      const contenders = [
        document({ pullRequests: { ...DEFAULT_POLICY.pullRequests, requiredApprovals: 2 + round } }),
        document({ pullRequests: { ...DEFAULT_POLICY.pullRequests, requiredApprovals: 6 + round } }),
      ];
      const answers = await Promise.all(contenders.map((body) => publish(body, { 'If-Match': current.headers.etag! })));
      expect(answers.map((res) => res.status).sort()).toEqual([200, 412]);
      const winner = answers.find((res) => res.status === 200)!;
      const loser = answers.find((res) => res.status === 412)!;
      expect(loser.body.error).toBe('precondition_failed');
      expect(loser.headers.etag).toBe(winner.headers.etag);
      const after = await rows();
      expect(after).toHaveLength(before.length + 1);
      expect(after.at(-1)!.number).toBe(winner.body.number);
      expect((await read()).headers.etag).toBe(winner.headers.etag);
    }
  });

  it('of a project override too', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Raced project' });
    const current = await read(project.id);
    const answers = await Promise.all(
      ['allow', 'block'].map((onPii) => publish({ dlp: { onPii } }, { 'If-Match': current.headers.etag! }, project.id)),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([200, 412]);
    expect((await rows()).filter((row) => row.projectId === project.id)).toHaveLength(1);
  });
});

describe('publishing what already applies', () => {
  it('stores nothing and says so: changed false, the number that still applies, the same ETag', async () => {
    const current = await publish(document({ agents: { sandbox: 'isolated' }, git: { protectedBranches: ['main'], requirePullRequest: true } }));
    expect(current.body.changed).toBe(true);
    const before = await rows();
    const lines = auditLines('policy.published').length;
    const reordered = Object.fromEntries(Object.entries(document({ agents: { sandbox: 'isolated' }, git: { protectedBranches: ['main'], requirePullRequest: true } })).reverse());
    const again = await publish(reordered, { 'If-Match': current.headers.etag! });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...current.body, changed: false, number: current.body.number });
    expect(again.headers.etag).toBe(current.headers.etag);
    expect(await rows()).toHaveLength(before.length);
    expect(auditLines('policy.published')).toHaveLength(lines);
  });

  it('a project: the same override, or {} where none applies', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Unchanged project' });
    const empty = await publish({}, {}, project.id);
    expect(empty.body).toMatchObject({ changed: false, number: null });
    expect((await rows()).filter((row) => row.projectId === project.id)).toHaveLength(0);

    const first = await publish({ remote: { idleTimeoutMinutes: 10 } }, {}, project.id);
    expect(first.body.changed).toBe(true);
    const same = await publish({ remote: { idleTimeoutMinutes: 10 } }, {}, project.id);
    expect(same.body).toMatchObject({ changed: false, number: first.body.number, revision: first.body.revision });
    expect((await rows()).filter((row) => row.projectId === project.id)).toHaveLength(1);
  });
});

describe('restoring an earlier publish', () => {
  it('makes it current again as a new publish, keeps the history, and writes a policy.restored line', async () => {
    const first = await publish(document({ network: { ...DEFAULT_POLICY.network, denyHosts: ['one.example.test'] } }));
    const second = await publish(document({ network: { ...DEFAULT_POLICY.network, denyHosts: ['two.example.test'] } }));
    expect(second.body.number).toBeGreaterThan(first.body.number);
    const before = await rows();

    const res = await restore(first.body.number, { 'If-Match': second.headers.etag! });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: true, revision: first.body.revision, policy: first.body.policy });
    expect(res.body.number).toBeGreaterThan(second.body.number);
    expect(res.headers.etag).toBe(first.headers.etag);
    const after = await rows();
    expect(after).toHaveLength(before.length + 1);
    expect(after.at(-1)).toMatchObject({ number: res.body.number, projectId: null, document: after.find((row) => row.number === first.body.number)!.document });
    expect((await read()).body.policy.network.denyHosts).toEqual(['one.example.test']);

    const [line] = auditLines('policy.restored').slice(-1);
    expect(line).toMatchObject({
      level: 30,
      msg: 'audit policy.restored',
      audit: {
        action: 'policy.restored',
        organisationId: organisation.id,
        actor: { kind: 'person', personId: await personIdOf('writes-admin') },
        target: { projectId: null, number: res.body.number, revision: res.body.revision, restoredFrom: first.body.number },
      },
    });
  });

  it('restoring what already applies stores nothing', async () => {
    const current = await read();
    const newest = (await rows()).filter((row) => row.projectId === null).at(-1)!;
    const res = await restore(newest.number);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: false, number: newest.number, revision: current.body.revision });
  });

  it('honours If-Match: 412 over a stale ETag', async () => {
    const [first] = (await rows()).filter((row) => row.projectId === null);
    const before = await rows();
    const res = await restore(first!.number, { 'If-Match': '"stale"' });
    expect(res.status).toBe(412);
    expect(res.body.error).toBe('precondition_failed');
    expect(await rows()).toHaveLength(before.length);
  });

  it('answers 404 for a number that is not a publish of this scope, here or elsewhere', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Restore scope' });
    const override = await publish({ agents: { sandbox: 'off' } }, {}, project.id);
    expect(override.status).toBe(200);
    // A project's publish is not the organisation's, and the other way round.
    const notOrganisation = await restore(override.body.number);
    expect(notOrganisation.status).toBe(404);
    expect(notOrganisation.body.error).toBe('not_found');
    const organisationNumber = (await rows()).find((row) => row.projectId === null)!.number;
    expect((await restore(organisationNumber, {}, project.id)).status).toBe(404);
    expect((await restore(999_999)).status).toBe(404);
    // Another organisation's project: 404, as for every other operation.
    const theirs = await platform.services.projects.create(other.id, { name: 'Theirs' });
    expect((await restore(1, {}, theirs.id)).status).toBe(404);
  });

  it('refuses a publish that no longer validates with 409 invalid_revision, and keeps the policy', async () => {
    const repository = platform.dataSource.getRepository(PolicyRevisionEntity);
    const number = (await rows()).at(-1)!.number + 1;
    await repository.insert({
      id: newId('pol'),
      organisationId: organisation.id,
      projectId: null,
      number,
      document: canonicalJson(document({ dlp: { onSecrets: 'vaporise' } })),
      publishedBy: null,
      createdAt: platform.clock.now(),
    });
    const current = await read();
    const res = await restore(number);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'invalid_revision', number });
    expect(res.body.message).toMatch(/policy\.dlp\.onSecrets/);
    expect((await read()).body).toEqual(current.body);
  });

  it("restores a project's override, checked over the organisation's current policy", async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Restored project' });
    const first = await publish({ tools: { defaults: { changes: 'ask' } } }, {}, project.id);
    const second = await publish({ tools: { defaults: { changes: 'deny' } } }, {}, project.id);
    expect(second.body.policy.tools.defaults.changes).toBe('deny');
    const res = await restore(first.body.number, { 'If-Match': second.headers.etag! }, project.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ changed: true, revision: first.body.revision });
    expect((await read(project.id)).body.policy.tools.defaults.changes).toBe('ask');
    expect(auditLines('policy.restored').at(-1)).toMatchObject({ audit: { target: { projectId: project.id, restoredFrom: first.body.number } } });
  });

  it('refuses a member with 403, for the organisation and for a project', async () => {
    const [first] = (await rows()).filter((row) => row.projectId === null);
    const res = await restore(first!.number, {}, undefined, 'member');
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    const project = await platform.services.projects.create(organisation.id, { name: 'Member restore' });
    const override = await publish({ agents: { sandbox: 'off' } }, {}, project.id);
    const projectRes = await restore(override.body.number, {}, project.id, 'member');
    expect(projectRes.status).toBe(403);
    expect(projectRes.body.error).toBe('forbidden');
  });

  it("honours If-Match on a project's restore: 412 over a stale ETag", async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Stale restore' });
    const first = await publish({ agents: { sandbox: 'off' } }, {}, project.id);
    expect((await publish({ agents: { sandbox: 'workspace' } }, {}, project.id)).status).toBe(200);
    const res = await restore(first.body.number, { 'If-Match': first.headers.etag! }, project.id);
    expect(res.status).toBe(412);
    expect(res.body.error).toBe('precondition_failed');
  });

  it("refuses a project's publish that no longer validates with 409 invalid_revision", async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Invalid restore' });
    const number = (await rows()).at(-1)!.number + 1;
    await platform.dataSource.getRepository(PolicyRevisionEntity).insert({
      id: newId('pol'),
      organisationId: organisation.id,
      projectId: project.id,
      number,
      document: canonicalJson({ dlp: { onSecrets: 'vaporise' } }),
      publishedBy: null,
      createdAt: platform.clock.now(),
    });
    const res = await restore(number, {}, project.id);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'invalid_revision', number });
  });

  it('answers 409 conflict when every attempt loses the race for the next number, and stores nothing', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Raced restore' });
    const organisationFirst = await publish(document({ agents: { sandbox: 'isolated' } }));
    expect((await publish(document({ agents: { sandbox: 'off' } }))).status).toBe(200);
    const projectFirst = await publish({ git: { requirePullRequest: true } }, {}, project.id);
    expect((await publish({ git: { requirePullRequest: false } }, {}, project.id)).status).toBe(200);
    const before = (await rows()).length;
    // Another publisher always takes the number first: every insert collides on the unique index.
    const lost = jest.spyOn(PolicyStore.prototype, 'maxNumber').mockResolvedValue(0);
    try {
      for (const res of [await restore(organisationFirst.body.number), await restore(projectFirst.body.number, {}, project.id)]) {
        expect(res.status).toBe(409);
        expect(res.body.error).toBe('conflict');
      }
    } finally {
      lost.mockRestore();
    }
    expect(await rows()).toHaveLength(before);
  });

  it('refuses a body, and a number that is not one', async () => {
    const withBody = await call(platform, 'post', '/policy/v1/organisation/revisions/1/restore', { host, headers: await as('admin'), body: { number: 2 } });
    expect(withBody.status).toBe(400);
    expect(withBody.body.error).toBe('invalid_request');
    const notNumber = await call(platform, 'post', '/policy/v1/organisation/revisions/first/restore', { host, headers: await as('admin') });
    expect(notNumber.status).toBe(400);
    expect(notNumber.body).toMatchObject({ error: 'invalid_request', field: 'params.number' });
  });
});

describe('audit lines', () => {
  it('one info line per publish that changes something, naming who, the organisation, the project and the number', async () => {
    const project = await platform.services.projects.create(organisation.id, { name: 'Audited project' });
    const before = auditLines('policy.published').length;
    const organisationPublish = await publish(document({ agents: { sandbox: 'off' }, teams: { allowGranted: false, allowPersonal: true, granted: [] } }));
    const projectPublish = await publish({ agents: { sandbox: 'isolated' } }, {}, project.id);
    const lines = auditLines('policy.published').slice(before);
    expect(lines).toHaveLength(2);
    const personId = await personIdOf('writes-admin');
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'audit policy.published',
      audit: { organisationId: organisation.id, actor: { kind: 'person', personId }, target: { projectId: null, number: organisationPublish.body.number, revision: organisationPublish.body.revision } },
    });
    expect(lines[1]).toMatchObject({ audit: { target: { projectId: project.id, number: projectPublish.body.number } } });
    // Ids and numbers only: never the document.
    expect(JSON.stringify(lines)).not.toContain('isolated');
  });
});

describe('a deployment that requires If-Match (POLICY_REQUIRE_IF_MATCH=true)', () => {
  let strict: TestPlatform;
  let strictHost: string;

  beforeAll(async () => {
    strict = await startPlatform({ env: { POLICY_REQUIRE_IF_MATCH: 'true' } });
    const created = await createOrganisation(strict, { name: 'Strict Org', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
    strictHost = (await strict.services.organisations.hostsOf(created.id))[0]!;
  });
  afterAll(() => strict.close());

  it('refuses a publish and a restore without If-Match with 428 precondition_required, and takes them with it', async () => {
    const headers = await as('admin');
    const missing = await call(strict, 'put', '/policy/v1/organisation', { host: strictHost, headers, body: document({ agents: { sandbox: 'off' } }) });
    expect(missing.status).toBe(428);
    expect(missing.body.error).toBe('precondition_required');
    const projectMissing = await call(strict, 'put', '/policy/v1/projects/prj_whatever', { host: strictHost, headers, body: {} });
    expect(projectMissing.status).toBe(428);

    const current = await call(strict, 'get', '/policy/v1', { host: strictHost, headers });
    const published = await call(strict, 'put', '/policy/v1/organisation', {
      host: strictHost,
      headers: { ...headers, 'If-Match': current.headers.etag! },
      body: document({ agents: { sandbox: 'off' } }),
    });
    expect(published.status).toBe(200);
    const restoreMissing = await call(strict, 'post', `/policy/v1/organisation/revisions/${published.body.number}/restore`, { host: strictHost, headers });
    expect(restoreMissing.status).toBe(428);
    const restored = await call(strict, 'post', `/policy/v1/organisation/revisions/${published.body.number}/restore`, {
      host: strictHost,
      headers: { ...headers, 'If-Match': published.headers.etag! },
    });
    expect(restored.status).toBe(200);
    expect(restored.body.changed).toBe(false);
  });

  it('declares 428 in its OpenAPI document, where the default deployment does not', async () => {
    const operations = ['put /policy/v1/organisation', 'put /policy/v1/projects/{projectId}', 'post /policy/v1/organisation/revisions/{number}/restore', 'post /policy/v1/projects/{projectId}/revisions/{number}/restore'];
    const strictDocument = (await call(strict, 'get', '/openapi.json')).body;
    const defaultDocument = (await call(platform, 'get', '/openapi.json')).body;
    for (const operation of operations) {
      const [method, path] = operation.split(' ') as [string, string];
      const strictOperation = strictDocument.paths[path][method];
      const defaultOperation = defaultDocument.paths[path][method];
      expect(strictOperation.responses['428'].description).toMatch(/precondition_required/);
      expect(defaultOperation.responses['428']).toBeUndefined();
      for (const op of [strictOperation, defaultOperation]) {
        expect(op.responses['412'].description).toMatch(/precondition_failed/);
        expect(op.responses['412'].headers.ETag).toBeDefined();
        expect(op.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/PolicyPublishAnswer' });
      }
      expect(strictOperation.parameters.find((p: { name: string }) => p.name === 'If-Match')).toMatchObject({ in: 'header', required: true });
      expect(defaultOperation.parameters.find((p: { name: string }) => p.name === 'If-Match')).toMatchObject({ in: 'header', required: false });
    }
  });
});
