import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, createTeam, emailSignIn, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { deviceHeaders, enrolDevice } from '../support/devices.js';
import { personHeaders, personIdFor, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

/**
 * The projects API (extension): every allowed and refused case with people of each organisation
 * role (owner, admin, member) and project role (owner, contributor, viewer), a member of the
 * organisation outside the project, a person of another team and a person of none (404). On
 * Cloud with sessions and X-Platform-Organisation; on self-hosted with person tokens.
 */

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10"/></svg>';

describe('on Cloud', () => {
  let platform: CloudPlatform;
  let team: OrganisationRecord;
  /** Organisation roles. */
  let owner: SignedIn;
  let admin: SignedIn;
  /** Organisation members: the project's owner, contributor and viewer, and one outside the project. */
  let lead: SignedIn;
  let contributor: SignedIn;
  let viewer: SignedIn;
  let bystander: SignedIn;
  /** Owner of another team; a person of no team. */
  let outsider: SignedIn;
  let loner: SignedIn;
  let outsiderTeam: OrganisationRecord;

  beforeAll(async () => {
    platform = await startCloud({ env: { AUTH_ACCESS_TOKEN_TTL_SECONDS: '86400' } });
    const people = await Promise.all(['owner', 'admin', 'lead', 'contributor', 'viewer', 'bystander', 'outsider', 'loner'].map((name) => emailSignIn(platform, `${name}@example.test`)));
    [owner, admin, lead, contributor, viewer, bystander, outsider, loner] = people as [SignedIn, SignedIn, SignedIn, SignedIn, SignedIn, SignedIn, SignedIn, SignedIn];
    team = await createTeam(platform, 'Works', [
      [owner.personId, 'owner'],
      [admin.personId, 'admin'],
      [lead.personId, 'member'],
      [contributor.personId, 'member'],
      [viewer.personId, 'member'],
      [bystander.personId, 'member'],
    ]);
    outsiderTeam = await createTeam(platform, 'Elsewhere', [[outsider.personId, 'owner']]);
  });
  afterAll(() => platform.close());

  const as = (person: SignedIn, organisationId: string = team.id) => ({ headers: bearer(person.access_token, organisationId) });
  const create = async (by: SignedIn, name: string) => {
    const res = await call(platform, 'post', '/platform/v1/projects', { ...as(by), body: { name } });
    expect(res.status).toBe(201);
    return res.body as { id: string; name: string; role: string };
  };
  const put = (by: SignedIn, projectId: string, personId: string, role: string) =>
    call(platform, 'put', `/platform/v1/projects/${projectId}/members/${personId}`, { ...as(by), body: { role } });

  /** A project of `lead`, with `contributor` and `viewer` in it. */
  async function staffed(name: string) {
    const project = await create(lead, name);
    platform.clock.advance(1000);
    expect((await put(lead, project.id, contributor.personId, 'contributor')).status).toBe(201);
    platform.clock.advance(1000);
    expect((await put(lead, project.id, viewer.personId, 'viewer')).status).toBe(201);
    return project;
  }

  describe('creating', () => {
    it('is open to every member of the organisation, who becomes the project\'s owner', async () => {
      for (const who of [owner, admin, bystander]) {
        const res = await call(platform, 'post', '/platform/v1/projects', { ...as(who), body: { name: ` By ${who.personId} ` } });
        expect(res.status).toBe(201);
        expect(res.body).toEqual({ id: expect.stringMatching(/^prj_/), name: `By ${who.personId}`, createdAt: expect.any(String), role: 'owner' });
        const members = await call(platform, 'get', `/platform/v1/projects/${res.body.id}/members`, as(who));
        expect(members.body).toEqual({ members: [{ userId: who.personId, name: expect.any(String), email: expect.any(String), role: 'owner', addedAt: expect.any(String) }], nextCursor: null });
      }
      expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'project.created')).toBe(true);
    });

    it('refuses a person of another team or of none in this team (404), a bad name (400), no token (401)', async () => {
      for (const who of [outsider, loner]) {
        const res = await call(platform, 'post', '/platform/v1/projects', { ...as(who), body: { name: 'Sneaky' } });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
      for (const body of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 7 }]) {
        const res = await call(platform, 'post', '/platform/v1/projects', { ...as(owner), body });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_request');
      }
      expect((await call(platform, 'post', '/platform/v1/projects', { body: { name: 'x' } })).status).toBe(401);
    });

    it('in a person\'s own organisation, without the header', async () => {
      const res = await call(platform, 'post', '/platform/v1/projects', { headers: bearer(loner.access_token), body: { name: 'Mine' } });
      expect(res.status).toBe(201);
      expect((await call(platform, 'get', `/platform/v1/projects/${res.body.id}`, as(loner, loner.personalOrganisationId))).body.role).toBe('owner');
      expect((await call(platform, 'get', `/platform/v1/projects/${res.body.id}`, as(owner))).status).toBe(404);
    });
  });

  describe('reading', () => {
    let project: { id: string };
    beforeAll(async () => {
      project = await staffed('Readable');
    });

    it('shows the project to its members with their role, and to organisation owners and admins with none', async () => {
      for (const [who, role] of [[lead, 'owner'], [contributor, 'contributor'], [viewer, 'viewer'], [owner, null], [admin, null]] as const) {
        const res = await call(platform, 'get', `/platform/v1/projects/${project.id}`, as(who));
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ id: project.id, name: 'Readable', createdAt: expect.any(String), role });
        expect((await call(platform, 'get', `/platform/v1/projects/${project.id}/members`, as(who))).body.members).toHaveLength(3);
      }
    });

    it('hides it (404) from a member outside it, a person of another team (with either team\'s header) and a person of none', async () => {
      const attempts: [SignedIn, string][] = [[bystander, team.id], [outsider, outsiderTeam.id], [outsider, team.id], [loner, loner.personalOrganisationId], [loner, team.id]];
      for (const [who, organisationId] of attempts) {
        for (const path of [`/platform/v1/projects/${project.id}`, `/platform/v1/projects/${project.id}/members`]) {
          const res = await call(platform, 'get', path, as(who, organisationId));
          expect(res.status).toBe(404);
          expect(res.body.error).toBe('not_found');
        }
      }
    });

    it('takes the project\'s id exactly: the same id in capitals names no project (404), on either database', async () => {
      const shouting = project.id.toUpperCase();
      const unknown = await call(platform, 'get', '/platform/v1/projects/prj_nosuchproject000', as(owner));
      for (const [method, path, body] of [
        ['get', `/platform/v1/projects/${shouting}`, undefined],
        ['get', `/platform/v1/projects/${shouting}/members`, undefined],
        ['patch', `/platform/v1/projects/${shouting}`, { name: 'Shouted' }],
        ['put', `/platform/v1/projects/${shouting}/members/${bystander.personId}`, { role: 'viewer' }],
        ['delete', `/platform/v1/projects/${shouting}/members/${viewer.personId}`, undefined],
        ['delete', `/platform/v1/projects/${shouting}`, undefined],
      ] as const) {
        const res = await call(platform, method, path, { ...as(owner), ...(body ? { body } : {}) });
        expect(res.status).toBe(404);
        expect(res.body).toEqual(unknown.body);
      }
      const kept = await call(platform, 'get', `/platform/v1/projects/${project.id}/members`, as(owner));
      expect(kept.body.members.map((m: { userId: string }) => m.userId)).toEqual([lead.personId, contributor.personId, viewer.personId]);
      expect((await call(platform, 'get', `/platform/v1/projects/${project.id}`, as(owner))).body.name).toBe('Readable');
    });

    it('lists every project to owners and admins, and their own to everyone else, a page at a time', async () => {
      const all = await call(platform, 'get', '/platform/v1/projects?limit=200', as(admin));
      expect(all.body.projects.map((p: { id: string }) => p.id)).toContain(project.id);
      expect(all.body.nextCursor).toBeNull();
      for (const who of [contributor, viewer]) {
        const own = await call(platform, 'get', '/platform/v1/projects', as(who));
        expect(own.body.projects.map((p: { id: string }) => p.id)).toContain(project.id);
        expect(own.body.projects.every((p: { role: string | null }) => p.role !== null)).toBe(true);
      }
      const none = await call(platform, 'get', '/platform/v1/projects', as(bystander));
      expect(none.body.projects.map((p: { id: string }) => p.id)).not.toContain(project.id);
      const first = await call(platform, 'get', '/platform/v1/projects?limit=1', as(owner));
      expect(first.body.projects).toHaveLength(1);
      const second = await call(platform, 'get', `/platform/v1/projects?limit=1&cursor=${first.body.nextCursor}`, as(owner));
      expect(second.body.projects[0].id).not.toBe(first.body.projects[0].id);
      expect((await call(platform, 'get', '/platform/v1/projects?cursor=bogus', as(owner))).status).toBe(400);
      expect((await call(platform, 'get', '/platform/v1/projects', as(outsider, team.id))).status).toBe(404);
    });

    it('never reaches a device token (401)', async () => {
      const device = await enrolDevice(platform, { organisationId: team.id, personId: lead.personId });
      const res = await call(platform, 'get', '/platform/v1/projects', { headers: await deviceHeaders(device, 'GET', '/platform/v1/projects') });
      expect(res.status).toBe(401);
    });
  });

  describe('renaming', () => {
    it('is for the project\'s owners and the organisation\'s owners and admins; contributors and viewers get 403', async () => {
      const project = await staffed('Old name');
      for (const who of [lead, admin, owner]) {
        const res = await call(platform, 'patch', `/platform/v1/projects/${project.id}`, { ...as(who), body: { name: `Named by ${who.personId}` } });
        expect(res.status).toBe(200);
        expect(res.body.name).toBe(`Named by ${who.personId}`);
      }
      for (const who of [contributor, viewer]) {
        const res = await call(platform, 'patch', `/platform/v1/projects/${project.id}`, { ...as(who), body: { name: 'Mine' } });
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('forbidden');
      }
      for (const [who, organisationId] of [[bystander, team.id], [outsider, outsiderTeam.id]] as const) {
        const res = await call(platform, 'patch', `/platform/v1/projects/${project.id}`, { ...as(who, organisationId), body: { name: 'x' } });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
      // No refused rename changed the name.
      expect((await call(platform, 'get', `/platform/v1/projects/${project.id}`, as(lead))).body.name).toBe(`Named by ${owner.personId}`);
      expect((await call(platform, 'patch', `/platform/v1/projects/${project.id}`, { ...as(lead), body: { name: '' } })).status).toBe(400);
    });
  });

  describe('members', () => {
    it('are added and changed by the project\'s owner and organisation admins: 201 added, 200 changed', async () => {
      const project = await staffed('Team roles');
      const changed = await put(lead, project.id, viewer.personId, 'contributor');
      expect(changed.status).toBe(200);
      expect(changed.body).toEqual({ userId: viewer.personId, name: 'viewer@example.test', email: 'viewer@example.test', role: 'contributor', addedAt: expect.any(String) });
      expect((await put(admin, project.id, bystander.personId, 'viewer')).status).toBe(201);
      expect((await put(owner, project.id, bystander.personId, 'viewer')).status).toBe(200);
      const listed = await call(platform, 'get', `/platform/v1/projects/${project.id}/members?limit=2`, as(viewer));
      expect(listed.body.members.map((m: { userId: string }) => m.userId)).toEqual([lead.personId, contributor.personId]);
      expect(listed.body.nextCursor).toEqual(expect.any(String));
    });

    it('are not managed by contributors or viewers (403), nor by anyone who cannot see the project (404)', async () => {
      const project = await staffed('Managed');
      for (const who of [contributor, viewer]) {
        const res = await put(who, project.id, bystander.personId, 'viewer');
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('forbidden');
        const removal = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${lead.personId}`, as(who));
        expect(removal.status).toBe(403);
      }
      expect((await put(bystander, project.id, bystander.personId, 'owner')).status).toBe(404);
      expect((await put(outsider, project.id, outsider.personId, 'owner')).status).toBe(404);
    });

    it('are removed by nobody who cannot see the project (404) and by no contributor or viewer but themselves (403); every refused change leaves the members as they were', async () => {
      const project = await staffed('Kept members');
      const members = async () => (await call(platform, 'get', `/platform/v1/projects/${project.id}/members`, as(owner))).body.members.map((m: { userId: string; role: string }) => [m.userId, m.role]);
      const before = await members();
      expect(before).toEqual([[lead.personId, 'owner'], [contributor.personId, 'contributor'], [viewer.personId, 'viewer']]);
      // As if the project did not exist: the answer for an id no project has, word for word.
      const unknown = await call(platform, 'delete', `/platform/v1/projects/prj_nosuchproject000/members/${lead.personId}`, as(bystander));
      expect(unknown.status).toBe(404);
      for (const [who, organisationId] of [[bystander, team.id], [outsider, outsiderTeam.id], [loner, loner.personalOrganisationId]] as const) {
        for (const target of [lead, viewer, who]) {
          const res = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${target.personId}`, as(who, organisationId));
          expect(res.status).toBe(404);
          expect(res.body).toEqual(unknown.body);
        }
      }
      // Naming this team without being in it is refused by tenancy, before the project is looked at.
      const header = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${lead.personId}`, as(outsider, team.id));
      expect(header.status).toBe(404);
      expect(header.body.error).toBe('not_found');
      for (const [who, target] of [[contributor, lead], [viewer, contributor], [viewer, lead]] as const) {
        const res = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${target.personId}`, as(who));
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'forbidden', message: expect.any(String) });
      }
      for (const who of [contributor, viewer]) {
        const res = await put(who, project.id, who.personId, 'owner');
        expect(res.status).toBe(403);
        expect(res.body.error).toBe('forbidden');
      }
      expect(await members()).toEqual(before);
    });

    it('must be members of the organisation (404 otherwise); a role must be one of owner, contributor, viewer (400)', async () => {
      const project = await staffed('Members only');
      for (const personId of [loner.personId, outsider.personId, 'usr_nosuchperson000', 'not-an-id']) {
        const res = await put(lead, project.id, personId, 'viewer');
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
      expect((await put(lead, project.id, bystander.personId, 'admin')).status).toBe(400);
    });

    it('leave by themselves, are removed by owners, and the last owner stays (409 last_owner)', async () => {
      const project = await staffed('Leaving');
      expect((await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${viewer.personId}`, as(viewer))).status).toBe(204);
      expect((await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${contributor.personId}`, as(lead))).status).toBe(204);
      const leaving = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${lead.personId}`, as(lead));
      expect(leaving.status).toBe(409);
      expect(leaving.body.error).toBe('last_owner');
      const demoting = await put(admin, project.id, lead.personId, 'viewer');
      expect(demoting.status).toBe(409);
      expect(demoting.body.error).toBe('last_owner');
      const gone = await call(platform, 'delete', `/platform/v1/projects/${project.id}/members/${viewer.personId}`, as(lead));
      expect(gone.status).toBe(404);
      expect(gone.body.error).toBe('not_found');
    });

    it('are added once when two managers add the same person at once', async () => {
      const project = await staffed('Added twice');
      const answers = await Promise.all([put(lead, project.id, bystander.personId, 'viewer'), put(admin, project.id, bystander.personId, 'contributor')]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 201]);
      const members = (await call(platform, 'get', `/platform/v1/projects/${project.id}/members`, as(owner))).body.members.filter((m: { userId: string }) => m.userId === bystander.personId);
      expect(members).toHaveLength(1);
    });

    it('keep an owner when two owners demote each other at once', async () => {
      const project = await staffed('Racing owners');
      await put(lead, project.id, contributor.personId, 'owner');
      const answers = await Promise.all([put(lead, project.id, contributor.personId, 'viewer'), put(contributor, project.id, lead.personId, 'viewer')]);
      const owners = (await call(platform, 'get', `/platform/v1/projects/${project.id}/members`, as(owner))).body.members.filter((m: { role: string }) => m.role === 'owner');
      expect(owners.length).toBeGreaterThanOrEqual(1);
      expect(answers.some((answer) => answer.status === 200)).toBe(true);
    });
  });

  describe('deleting', () => {
    const remove = (by: SignedIn, projectId: string, query = '') => call(platform, 'delete', `/platform/v1/projects/${projectId}${query}`, as(by));

    it('is for the project\'s owners and the organisation\'s owners and admins', async () => {
      for (const who of [lead, admin, owner]) {
        const project = await staffed(`Doomed by ${who.personId}`);
        for (const refused of [contributor, viewer]) {
          const res = await remove(refused, project.id);
          expect(res.status).toBe(403);
          expect(res.body.error).toBe('forbidden');
        }
        expect((await remove(bystander, project.id)).status).toBe(404);
        expect((await call(platform, 'delete', `/platform/v1/projects/${project.id}`, as(outsider, outsiderTeam.id))).status).toBe(404);
        expect((await remove(who, project.id)).status).toBe(204);
        expect((await call(platform, 'get', `/platform/v1/projects/${project.id}`, as(owner))).status).toBe(404);
      }
    });

    it('refuses a project with cloud agent runs (409 project_not_empty) unless force=true; the runs, their events and credential go with it', async () => {
      const project = await staffed('Agents');
      const device = await enrolDevice(platform, { organisationId: team.id, personId: lead.personId });
      const runs = '/cloud-agents/v1/runs';
      const registered = await call(platform, 'post', runs, {
        headers: await deviceHeaders(device, 'POST', runs),
        body: { provider: 'codex', projectId: project.id, workspaceId: 'w1', tools: ['read'] },
      });
      expect(registered.status).toBe(201);
      const eventsPath = `${runs}/${registered.body.runId}/events`;
      const reported = await call(platform, 'post', eventsPath, {
        headers: await deviceHeaders(device, 'POST', eventsPath),
        body: { events: [{ at: new Date(platform.clock.now().getTime()).toISOString(), kind: 'started' }] },
      });
      expect(reported.status).toBe(200);

      const refused = await remove(lead, project.id);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toBe('project_not_empty');
      expect(refused.body.message).toContain('1 cloud agent run(s)');
      expect((await remove(lead, project.id, '?force=true')).status).toBe(204);
      const left = await platform.dataSource.query<{ n: number | string }[]>(
        'SELECT (SELECT COUNT(*) FROM cloud_agent_runs WHERE project_id = ?) + (SELECT COUNT(*) FROM cloud_agent_run_events WHERE run_id = ?) AS n',
        [project.id, registered.body.runId],
      );
      expect(Number(left[0]!.n)).toBe(0);
      // The run's credential stopped with it.
      const mcp = `${runs}/${registered.body.runId}/mcp`;
      const stopped = await call(platform, 'post', mcp, {
        headers: { Authorization: `Bearer ${registered.body.mcp.token}`, Accept: 'application/json, text/event-stream' },
        body: { jsonrpc: '2.0', id: 1, method: 'ping' },
      });
      expect(stopped.status).toBe(401);
    });

    it('refuses a project with pictures or ingested data (409 project_not_empty) unless force=true, and then leaves nothing naming it', async () => {
      const project = await staffed('Full');
      const device = await enrolDevice(platform, { organisationId: team.id, personId: lead.personId });
      const picturePath = `/projects/v1/${project.id}/pictures/plan`;
      const saved = await call(platform, 'put', picturePath, {
        headers: { ...(await deviceHeaders(device, 'PUT', picturePath)), 'If-None-Match': '*' },
        body: { spec: { version: 1, kind: 'diagram', meta: { title: 'Plan' } }, svg: SVG },
      });
      expect(saved.status).toBe(201);
      const published = await call(platform, 'put', `/policy/v1/projects/${project.id}`, { ...as(owner), body: { agents: { sandbox: 'off' } } });
      expect(published.status).toBe(200);

      const refused = await remove(lead, project.id);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toBe('project_not_empty');
      expect((await remove(lead, project.id, '?force=banana')).status).toBe(400);
      expect((await remove(lead, project.id, '?force=false')).status).toBe(409);
      expect((await remove(lead, project.id, '?force=true')).status).toBe(204);

      for (const table of ['projects', 'project_members', 'pictures', 'policy_revisions', 'ingest_events', 'ingest_usage', 'ingest_audit', 'ingest_tasks']) {
        const column = table === 'projects' ? 'id' : 'project_id';
        const rows = await platform.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${column} = ?`, [project.id]);
        expect(`${table}: ${Number(rows[0]!.n)}`).toBe(`${table}: 0`);
      }
      expect(platform.logs.some((line) => (line.audit as { action?: string; target?: { projectId?: string } } | undefined)?.action === 'project.deleted')).toBe(true);
    });

    it('refuses a project with ingested data only, and force deletes the items', async () => {
      const project = await staffed('Busy');
      const device = await enrolDevice(platform, { organisationId: team.id, personId: lead.personId });
      const body = {
        schemaVersion: 1,
        projectId: project.id,
        workspaceId: 'ws-1',
        sentAt: platform.clock.now().toISOString(),
        cursors: { events: -1 },
        events: [{ seq: 1, id: 'e1', at: '2026-01-01T00:00:00.000Z', kind: 'note', data: {} }],
        usage: [{ id: 'u1', at: '2026-01-01T00:00:00.000Z', provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 }],
        audit: [{ id: 'a1', at: '2026-01-01T00:00:00.000Z', actor: 'agent', action: 'file.read', label: 'read' }],
        tasks: [{ id: 't1', title: 'Task', status: 'pending', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' }],
      };
      const uploaded = await call(platform, 'post', '/ingest/v1', { headers: await deviceHeaders(device, 'POST', '/ingest/v1'), body });
      expect(uploaded.status).toBe(200);
      expect((await remove(lead, project.id)).body.error).toBe('project_not_empty');
      expect((await remove(lead, project.id, '?force=true')).status).toBe(204);
      const rows = await platform.dataSource.query<{ n: number | string }[]>(
        'SELECT (SELECT COUNT(*) FROM ingest_events WHERE project_id = ?) + (SELECT COUNT(*) FROM ingest_usage WHERE project_id = ?) + (SELECT COUNT(*) FROM ingest_audit WHERE project_id = ?) + (SELECT COUNT(*) FROM ingest_tasks WHERE project_id = ?) AS n',
        [project.id, project.id, project.id, project.id],
      );
      expect(Number(rows[0]!.n)).toBe(0);
      // An upload for the deleted project is refused; nothing is stored for it.
      const late = await call(platform, 'post', '/ingest/v1', { headers: await deviceHeaders(device, 'POST', '/ingest/v1'), body: { ...body, events: [{ ...body.events[0], seq: 2 }] } });
      expect(late.status).toBe(404);
    });

    it('deletes a project while uploads for it run, leaving no item naming it', async () => {
      const project = await staffed('Raced');
      const device = await enrolDevice(platform, { organisationId: team.id, personId: lead.personId });
      const upload = async (seq: number) =>
        call(platform, 'post', '/ingest/v1', {
          headers: await deviceHeaders(device, 'POST', '/ingest/v1'),
          body: { schemaVersion: 1, projectId: project.id, workspaceId: `ws-${seq}`, sentAt: platform.clock.now().toISOString(), cursors: { events: -1 }, events: [{ seq, id: `e${seq}`, at: '2026-01-01T00:00:00.000Z', kind: 'note', data: {} }] },
        });
      const answers = await Promise.all([upload(1), upload(2), remove(lead, project.id, '?force=true'), upload(3), upload(4)]);
      expect(answers[2].status).toBe(204);
      for (const answer of [answers[0], answers[1], answers[3], answers[4]]) expect([200, 404]).toContain(answer.status);
      const rows = await platform.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM ingest_events WHERE project_id = ?', [project.id]);
      expect(Number(rows[0]!.n)).toBe(0);
    });
  });
});

describe('on a self-hosted deployment, with person tokens', () => {
  let platform: TestPlatform;
  let orgs: TwoOrganisations;

  beforeAll(async () => {
    platform = await startPlatform();
    orgs = await twoOrganisations(platform, platform.clock, ['Acme', 'Other']);
  });
  afterAll(async () => {
    await Promise.all([orgs.idp.close(), orgs.otherIdp.close()]);
    await platform.close();
  });

  const as = async (role: 'owner' | 'admin' | 'member', sub?: string, idp = orgs.idp) => ({ host: idp === orgs.idp ? orgs.host : orgs.otherHost, headers: await personHeaders(idp, role, sub) });

  it('lets an administrator create projects, give people roles, rename and delete', async () => {
    // People exist once they have called the API.
    for (const sub of ['alice', 'bob']) expect((await call(platform, 'get', '/platform/v1/organisation', await as('member', sub))).status).toBe(200);
    const alice = await personIdFor(platform, orgs.idp, 'alice');
    const bob = await personIdFor(platform, orgs.idp, 'bob');

    const created = await call(platform, 'post', '/platform/v1/projects', { ...(await as('admin')), body: { name: 'Website' } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await call(platform, 'put', `/platform/v1/projects/${id}/members/${alice}`, { ...(await as('admin')), body: { role: 'owner' } })).status).toBe(201);
    expect((await call(platform, 'put', `/platform/v1/projects/${id}/members/${bob}`, { ...(await as('member', 'alice')), body: { role: 'viewer' } })).status).toBe(201);
    expect((await call(platform, 'get', `/platform/v1/projects/${id}`, await as('member', 'bob'))).body.role).toBe('viewer');
    expect((await call(platform, 'patch', `/platform/v1/projects/${id}`, { ...(await as('member', 'bob')), body: { name: 'Mine' } })).status).toBe(403);
    expect((await call(platform, 'get', `/platform/v1/projects/${id}`, await as('member', 'carol'))).status).toBe(404);
    const listed = await call(platform, 'get', '/platform/v1/projects', await as('admin'));
    expect(listed.body.projects.map((p: { id: string }) => p.id)).toEqual([id]);
    expect((await call(platform, 'patch', `/platform/v1/projects/${id}`, { ...(await as('admin')), body: { name: 'Web site' } })).body.name).toBe('Web site');
    expect((await call(platform, 'delete', `/platform/v1/projects/${id}`, await as('admin'))).status).toBe(204);
  });

  it('shows nothing of another organisation\'s projects, even to its administrator (404)', async () => {
    const created = await call(platform, 'post', '/platform/v1/projects', { ...(await as('admin')), body: { name: 'Private' } });
    const otherAdmin = await as('admin', 'admin', orgs.otherIdp);
    expect((await call(platform, 'get', `/platform/v1/projects/${created.body.id}`, otherAdmin)).status).toBe(404);
    expect((await call(platform, 'delete', `/platform/v1/projects/${created.body.id}`, otherAdmin)).status).toBe(404);
    expect((await call(platform, 'get', '/platform/v1/projects', otherAdmin)).body.projects).toEqual([]);
    // A token of the other organisation at this organisation's host name is refused.
    expect((await call(platform, 'get', '/platform/v1/projects', { host: orgs.host, headers: otherAdmin.headers })).status).toBe(401);
  });

  it('keeps the command line working beside it', async () => {
    const created = await platform.services.projects.create(orgs.organisation.id, { name: 'From the CLI' });
    const listed = await call(platform, 'get', '/platform/v1/projects', await as('owner'));
    expect(listed.body.projects.map((p: { name: string }) => p.name)).toContain('From the CLI');
    expect((await platform.services.projects.list(orgs.organisation.id)).map((p) => p.id)).toContain(created.id);
  });
});
