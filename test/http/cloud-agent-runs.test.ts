import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { IsNull } from 'typeorm';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { CloudAgentRunEntity } from '../../src/modules/cloud-agents/entities.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';

let platform: TestPlatform;
let organisation: OrganisationRecord;
let other: OrganisationRecord;
let host: string;
let otherHost: string;
let personId: string;
let workbench: EnrolledDevice;
let samePersonWorkbench: EnrolledDevice;
let colleagueWorkbench: EnrolledDevice;
let node: EnrolledDevice;
let otherWorkbench: EnrolledDevice;
let projectId: string;
let otherProjectId: string;

const TASK = 'Refactor the billing module so invoices are rounded per line (a secret plan)';

beforeAll(async () => {
  platform = await startPlatform();
  organisation = await createOrganisation(platform);
  other = await createOrganisation(platform);
  host = await hostOf(platform, organisation);
  otherHost = await hostOf(platform, other);
  const person = await createPerson(platform, organisation.id);
  personId = person.id;
  const colleague = await createPerson(platform, organisation.id);
  workbench = await enrolDevice(platform, { organisationId: organisation.id, personId });
  samePersonWorkbench = await enrolDevice(platform, { organisationId: organisation.id, personId, name: 'Second laptop' });
  colleagueWorkbench = await enrolDevice(platform, { organisationId: organisation.id, personId: colleague.id });
  node = await enrolDevice(platform, { organisationId: organisation.id, personId, kind: 'node' });
  const stranger = await createPerson(platform, other.id);
  otherWorkbench = await enrolDevice(platform, { organisationId: other.id, personId: stranger.id });
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Billing', owner: personId })).id;
  await platform.services.projects.setMemberRole(organisation.id, projectId, colleague.id, 'viewer');
  otherProjectId = (await platform.services.projects.create(other.id, { name: 'Theirs' })).id;
});
afterAll(() => platform.close());

function headers(device: EnrolledDevice): Record<string, string> {
  return { Authorization: `Bearer ${device.tokens.access_token}` };
}

async function register(device: EnrolledDevice, body: Record<string, unknown>, at = host) {
  return call(platform, 'post', '/cloud-agents/v1/runs', { host: at, headers: headers(device), body });
}

const full = () => ({ provider: 'codex', team: 'acme', member: 'ada', task: TASK, tools: ['tasks.create', 'tasks.read'], workspaceId: 'ws-1', projectId, startedBy: personId });

async function publish(cloudAgents: { allowed: boolean; maxConcurrent: number }): Promise<void> {
  await platform.services.policies.publishOrganisation(organisation.id, { kind: 'person', personId }, { ...structuredClone(DEFAULT_POLICY), cloudAgents });
}

async function endAllRuns(): Promise<void> {
  await platform.dataSource.getRepository(CloudAgentRunEntity).update({ endedAt: IsNull() }, { endedAt: platform.clock.now(), credentialHash: null });
}

describe('POST /cloud-agents/v1/runs', () => {
  it('registers a run of a workspace and tools, with an MCP endpoint and a run credential kept only as a hash', async () => {
    const res = await register(workbench, full());
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const { runId, mcp, expiresAt } = res.body;
    expect(runId).toMatch(/^run_[0-9a-z]{16}$/);
    expect(mcp.url).toBe(`http://${host}/cloud-agents/v1/runs/${runId}/mcp`);
    expect(mcp.token).toMatch(/^platform_cr_[A-Za-z0-9_-]{43}$/);
    const fourHours = new Date(platform.clock.now().getTime() + 4 * 3600 * 1000).toISOString();
    expect(mcp.expiresAt).toBe(fourHours);
    expect(expiresAt).toBe(fourHours);

    const row = await platform.dataSource.getRepository(CloudAgentRunEntity).findOneByOrFail({ id: runId });
    expect(row).toMatchObject({ organisationId: organisation.id, projectId, deviceId: workbench.device.id, personId, provider: 'codex', team: 'acme', member: 'ada', workspaceId: 'ws-1', endedAt: null });
    expect(JSON.parse(row.tools!)).toEqual(['tasks.create', 'tasks.read']);
    expect(row.credentialHash).toBe(createHash('sha256').update(mcp.token).digest('hex'));
    // Neither the task nor the credential is kept anywhere, nor written to a log.
    const stored = JSON.stringify(await platform.dataSource.query('SELECT * FROM cloud_agent_runs'));
    expect(stored).not.toContain('billing module');
    expect(stored).not.toContain(mcp.token);
    const logs = JSON.stringify(platform.logs);
    expect(logs).not.toContain('billing module');
    expect(logs).not.toContain(mcp.token);
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'cloud_agent_run.registered')).toBe(true);
  });

  it('gives no MCP endpoint or credential to a run that names no workspace, or no tools', async () => {
    for (const body of [{ provider: 'codex', projectId, tools: ['a'] }, { provider: 'codex', projectId, workspaceId: 'ws-1' }, { provider: 'codex', projectId, workspaceId: 'ws-1', tools: [] }]) {
      const res = await register(workbench, body);
      expect(res.status).toBe(201);
      expect(res.body.mcp).toBeUndefined();
      const row = await platform.dataSource.getRepository(CloudAgentRunEntity).findOneByOrFail({ id: res.body.runId });
      expect(row.credentialHash).toBeNull();
    }
    await endAllRuns();
  });

  it('stores the most and longest tool names allowed, in any script, and refuses one more', async () => {
    const tools = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, '0')}${'😀'.repeat(125)}`);
    const res = await register(workbench, { ...full(), tools });
    expect(res.status).toBe(201);
    const row = await platform.dataSource.getRepository(CloudAgentRunEntity).findOneByOrFail({ id: res.body.runId });
    expect(JSON.parse(row.tools!)).toEqual(tools);
    expect((await register(workbench, { ...full(), tools: [...tools, 'one-more'] })).body.field).toBe('body.tools');
    expect((await register(workbench, { ...full(), tools: [`x${'😀'.repeat(128)}`] })).body.field).toBe('body.tools[0]');
    await endAllRuns();
  });

  it('keeps a sooner requested expiry, cuts a later one to four hours, and refuses one in the past', async () => {
    const now = platform.clock.now().getTime();
    const sooner = new Date(now + 30 * 60 * 1000).toISOString();
    const res = await register(workbench, { ...full(), expiresAt: sooner });
    expect(res.status).toBe(201);
    expect(res.body.mcp.expiresAt).toBe(sooner);
    const later = await register(workbench, { ...full(), expiresAt: new Date(now + 9 * 3600 * 1000).toISOString() });
    expect(later.body.mcp.expiresAt).toBe(new Date(now + 4 * 3600 * 1000).toISOString());
    const past = await register(workbench, { ...full(), expiresAt: new Date(now - 1000).toISOString() });
    expect(past.status).toBe(400);
    expect(past.body).toMatchObject({ error: 'invalid_request', field: 'body.expiresAt' });
    await endAllRuns();
  });

  it('answers 404, not 500, when the project is deleted between the checks and the insert', async () => {
    const doomed = (await platform.services.projects.create(organisation.id, { name: 'Doomed', owner: personId })).id;
    const { policies, projects } = platform.services;
    const effective = policies.effective.bind(policies);
    // The project and policy checks pass; then the project goes before the run is inserted.
    policies.effective = async (organisationId: string, id?: string) => {
      const answer = await effective(organisationId, id);
      if (id === doomed) await projects.delete(organisationId, id, { force: true });
      return answer;
    };
    try {
      const res = await register(workbench, { ...full(), projectId: doomed });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
      expect(await platform.dataSource.getRepository(CloudAgentRunEntity).countBy({ projectId: doomed })).toBe(0);
    } finally {
      policies.effective = effective;
    }
  });

  it("refuses a startedBy that is not the device's own person (403 started_by_mismatch)", async () => {
    const colleague = colleagueWorkbench.device.personId;
    const res = await register(workbench, { ...full(), startedBy: colleague });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'started_by_mismatch', field: 'body.startedBy' });
  });

  it('answers 404 in a project the workbench\'s person holds no role in, as pictures do (and the projects API to the person); an organisation owner\'s workbench too', async () => {
    const outsider = await createPerson(platform, organisation.id);
    const owner = await createPerson(platform, organisation.id, 'owner');
    const devices = [await enrolDevice(platform, { organisationId: organisation.id, personId: outsider.id }), await enrolDevice(platform, { organisationId: organisation.id, personId: owner.id })];
    for (const device of devices) {
      const res = await register(device, { ...full(), startedBy: undefined });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
      // The same person, the same project, the same answer everywhere they would act.
      const pictures = `/projects/v1/${projectId}/pictures`;
      expect((await call(platform, 'get', pictures, { host, headers: await deviceHeaders(device, 'GET', `http://${host}${pictures}`) })).status).toBe(404);
    }
    expect(await platform.dataSource.getRepository(CloudAgentRunEntity).countBy({ deviceId: devices[0]!.device.id })).toBe(0);
    // A role in the project, any role, lets their workbench register there.
    await platform.services.projects.setMemberRole(organisation.id, projectId, outsider.id, 'viewer');
    expect((await register(devices[0]!, { ...full(), startedBy: undefined })).status).toBe(201);
    await endAllRuns();
  });

  it('leaves the project\'s policy readable by every device of the organisation: its stricter rules reach whoever works there', async () => {
    const strict = (await platform.services.projects.create(organisation.id, { name: 'Strict', owner: personId })).id;
    await platform.services.policies.publishProject(organisation.id, strict, { kind: 'person', personId }, { cloudAgents: { allowed: false } });
    const outsider = await createPerson(platform, organisation.id);
    const device = await enrolDevice(platform, { organisationId: organisation.id, personId: outsider.id });
    const path = `/policy/v1?projectId=${strict}`;
    for (const reader of [device, workbench]) {
      const res = await call(platform, 'get', path, { host, headers: await deviceHeaders(reader, 'GET', `http://${host}/policy/v1`) });
      expect(res.status).toBe(200);
      expect(res.body.policy.cloudAgents.allowed).toBe(false);
    }
    // Another organisation's device does not read it.
    expect((await call(platform, 'get', path, { host: otherHost, headers: await deviceHeaders(otherWorkbench, 'GET', `http://${otherHost}/policy/v1`) })).status).toBe(404);
  });

  it("answers 404 for another organisation's project, its own in capitals, or one that does not exist, alike, and stores no run", async () => {
    const runs = platform.dataSource.getRepository(CloudAgentRunEntity);
    const stored = await runs.countBy({ deviceId: workbench.device.id });
    const unknown = await register(workbench, { ...full(), projectId: 'prj_doesnotexist0000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    for (const id of [otherProjectId, projectId.toUpperCase()]) {
      const res = await register(workbench, { ...full(), projectId: id });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    expect(await runs.countBy({ deviceId: workbench.device.id })).toBe(stored);
  });

  it('refuses when the policy does not allow cloud agents (403 cloud_agents_disabled), for the organisation or one project', async () => {
    await publish({ allowed: false, maxConcurrent: 5 });
    const res = await register(workbench, full());
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('cloud_agents_disabled');

    await publish({ allowed: true, maxConcurrent: 5 });
    const closed = (await platform.services.projects.create(organisation.id, { name: 'Closed', owner: personId })).id;
    await platform.services.policies.publishProject(organisation.id, closed, { kind: 'person', personId }, { cloudAgents: { allowed: false } });
    expect((await register(workbench, { ...full(), projectId: closed })).body.error).toBe('cloud_agents_disabled');
    expect((await register(workbench, full())).status).toBe(201);
    await endAllRuns();
  });

  it('counts maxConcurrent per person over every workbench of theirs; ended and expired runs do not count', async () => {
    await publish({ allowed: true, maxConcurrent: 2 });
    const first = await register(workbench, full());
    expect((await register(samePersonWorkbench, full())).status).toBe(201);
    const third = await register(workbench, full());
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({ error: 'max_concurrent_runs', max: 2 });
    // Another person has slots of their own.
    expect((await register(colleagueWorkbench, { ...full(), startedBy: undefined })).status).toBe(201);
    // Ending a run frees a slot.
    await call(platform, 'post', `/cloud-agents/v1/runs/${first.body.runId}/end`, { host, headers: headers(workbench), body: {} });
    const fourth = await register(workbench, { ...full(), expiresAt: new Date(platform.clock.now().getTime() + 60_000).toISOString() });
    expect(fourth.status).toBe(201);
    expect((await register(workbench, full())).status).toBe(409);
    // A run whose credential expired no longer counts.
    platform.clock.advance(61_000);
    expect((await register(workbench, full())).status).toBe(201);
    await endAllRuns();
  });

  it('lets exactly one of several concurrent registrations at the limit through', async () => {
    await publish({ allowed: true, maxConcurrent: 1 });
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => register(i % 2 ? workbench : samePersonWorkbench, full())));
      expect(answers.filter((res) => res.status === 201)).toHaveLength(1);
      expect(answers.filter((res) => res.status === 409).map((res) => res.body.error)).toEqual(Array(7).fill('max_concurrent_runs'));
      expect(await platform.dataSource.getRepository(CloudAgentRunEntity).countBy({ personId, endedAt: IsNull() })).toBe(1);
      await endAllRuns();
    }
    await publish({ allowed: true, maxConcurrent: 5 });
  });

  it('refuses a node: without the scope (403 insufficient_scope), and explicitly even with it (403 workbench_required)', async () => {
    const res = await register(node, full());
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('insufficient_scope');
    await platform.dataSource.getRepository(DeviceEntity).update({ id: node.device.id }, { scope: `${node.device.scope} cloud-agents:write` });
    const forged = await register(node, full());
    expect(forged.status).toBe(403);
    expect(forged.body.error).toBe('workbench_required');
    expect(await platform.dataSource.getRepository(CloudAgentRunEntity).countBy({ deviceId: node.device.id })).toBe(0);
  });

  it('takes a DPoP-bound workbench with a proof, and refuses it without one', async () => {
    // Proofs are signed at the real time; the platform's clock was moved on by the tests above.
    platform.clock.set(Date.now());
    const bound = await enrolDevice(platform, { organisationId: organisation.id, personId, alg: 'ES256' });
    const url = `http://${host}/cloud-agents/v1/runs`;
    const res = await call(platform, 'post', '/cloud-agents/v1/runs', { host, headers: await deviceHeaders(bound, 'POST', url), body: full() });
    expect(res.status).toBe(201);
    const bearer = await call(platform, 'post', '/cloud-agents/v1/runs', { host, headers: headers(bound), body: full() });
    expect(bearer.status).toBe(401);
    expect(bearer.body.error).toBe('invalid_dpop_proof');
    await endAllRuns();
  });

  it.each([
    ['an unknown field', () => ({ ...full(), priority: 'high' }), 'body.priority'],
    ['no provider', () => ({ projectId }), 'body.provider'],
    ['no project', () => ({ provider: 'codex' }), 'body.projectId'],
    ['a tool name with a new line', () => ({ ...full(), tools: ['a\nb'] }), 'body.tools[0]'],
    ['a provider with edge white space', () => ({ ...full(), provider: ' codex' }), 'body.provider'],
    ['tools named twice', () => ({ ...full(), tools: ['a', 'a'] }), 'body.tools'],
    ['an expiry that is not a timestamp', () => ({ ...full(), expiresAt: 'tomorrow' }), 'body.expiresAt'],
  ])('refuses %s (400 invalid_request naming the field)', async (_what, body, field) => {
    const res = await register(workbench, body());
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });

  it('reads a task of up to 100,000 characters (past JSON_MAX_STRING_LENGTH), and refuses a longer one (400 json_too_complex naming it)', async () => {
    const longest = await register(workbench, { ...full(), task: 'x'.repeat(100_000) });
    expect(longest.status).toBe(201);
    const over = await register(workbench, { ...full(), task: 'x'.repeat(100_001) });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({ error: 'json_too_complex', field: 'body.task', limit: 'stringLength', max: 100_000 });
    await endAllRuns();
  });

  it('builds the MCP URL from the one trusted origin: PLATFORM_BASE_URL on Cloud, never the Host header', async () => {
    const cloud = await startPlatform({ env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' } });
    try {
      const id = (await createOrganisation(cloud)).id;
      const person = await createPerson(cloud, id);
      const device = await enrolDevice(cloud, { organisationId: id, personId: person.id });
      const project = (await cloud.services.projects.create(id, { name: 'p', owner: person.id })).id;
      const res = await call(cloud, 'post', '/cloud-agents/v1/runs', { host: 'evil.example', headers: headers(device), body: { provider: 'codex', projectId: project, workspaceId: 'w', tools: ['t'] } });
      expect(res.status).toBe(201);
      expect(res.body.mcp.url).toBe(`https://api.platform.test/cloud-agents/v1/runs/${res.body.runId}/mcp`);
    } finally {
      await cloud.close();
    }
  });

  it('refuses a Host whose port is not a port (self-hosted), before anything is stored', async () => {
    const before = await platform.dataSource.getRepository(CloudAgentRunEntity).count();
    const res = await register(workbench, full(), `${host}:99999`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(JSON.stringify(res.body)).not.toContain('99999');
    expect(await platform.dataSource.getRepository(CloudAgentRunEntity).count()).toBe(before);
  });

  it('refuses a request without a device token (401), and a run credential (401)', async () => {
    const anonymous = await call(platform, 'post', '/cloud-agents/v1/runs', { host, body: full() });
    expect(anonymous.status).toBe(401);
    const run = await register(workbench, full());
    const credential = await call(platform, 'post', '/cloud-agents/v1/runs', { host, headers: { Authorization: `Bearer ${run.body.mcp.token}` }, body: full() });
    expect(credential.status).toBe(401);
    expect(credential.body.error).toBe('unauthorized');
    await endAllRuns();
  });
});

describe('POST /cloud-agents/v1/runs/{runId}/events', () => {
  let runId: string;

  beforeAll(async () => {
    runId = (await register(workbench, full())).body.runId;
  });

  const events = (path: string, device: EnrolledDevice, body: unknown, at = host) => call(platform, 'post', `/cloud-agents/v1/runs/${path}/events`, { host: at, headers: headers(device), body });

  it('stores events of every kind from the registering workbench', async () => {
    const at = platform.clock.now().toISOString();
    const body = {
      events: [
        { at, kind: 'started', providerTaskId: 'task-42', pageUrl: 'https://agents.example/tasks/42' },
        { at, kind: 'progress', sentence: 'Tests pass; writing the pull request.' },
        { at, kind: 'pull_request_opened', pullRequestUrl: 'https://git.example/acme/billing/pull/7' },
        { at, kind: 'pull_request_updated', pullRequestUrl: 'https://git.example/acme/billing/pull/7' },
        { at, kind: 'completed' },
        { at, kind: 'failed' },
        { at, kind: 'cancelled' },
      ],
    };
    const res = await events(runId, workbench, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 7 });
    const rows = await platform.dataSource.query('SELECT kind, provider_task_id AS taskId, page_url AS page, pull_request_url AS pr, sentence FROM cloud_agent_run_events WHERE run_id = ? ORDER BY row_id', [runId]);
    expect(rows.map((row: { kind: string }) => row.kind)).toEqual(['started', 'progress', 'pull_request_opened', 'pull_request_updated', 'completed', 'failed', 'cancelled']);
    expect(rows[0]).toMatchObject({ taskId: 'task-42', page: 'https://agents.example/tasks/42' });
    expect(rows[1].sentence).toBe('Tests pass; writing the pull request.');
  });

  it('answers 404 to any other device: another workbench of the same person, a colleague, another organisation', async () => {
    const body = { events: [{ at: platform.clock.now().toISOString(), kind: 'progress' }] };
    const stored = async () => Number((await platform.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM cloud_agent_run_events WHERE run_id = ?', [runId]))[0]!.n);
    const before = await stored();
    for (const device of [samePersonWorkbench, colleagueWorkbench]) {
      const res = await events(runId, device, body);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const foreign = await events(runId, otherWorkbench, body, otherHost);
    expect(foreign.status).toBe(404);
    const unknown = await events('run_doesnotexist0000', workbench, body);
    expect(unknown.status).toBe(404);
    // Word for word the answer for a run that does not exist, and nothing stored.
    expect(foreign.body).toEqual(unknown.body);
    expect(await stored()).toBe(before);
    // …while the registering workbench's report is stored: the count above could have moved.
    expect((await events(runId, workbench, body)).status).toBe(200);
    expect(await stored()).toBe(before + 1);
  });

  it.each(['task', 'prompt', 'Text', 'task_text', 'instructions', 'description', 'message'])('refuses an event carrying task text in %s (400 task_text_not_allowed)', async (field) => {
    const res = await events(runId, workbench, { events: [{ at: platform.clock.now().toISOString(), kind: 'progress', [field]: TASK }] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'task_text_not_allowed', field: `body.events[0].${field}` });
    expect(JSON.stringify(res.body)).not.toContain('billing');
  });

  it.each([
    ['an unknown field', { kind: 'progress', colour: 'red' }, 'body.events[0].colour'],
    ['an unknown kind', { kind: 'exploded' }, 'body.events[0].kind'],
    ['no time', { kind: 'progress', at: undefined }, 'body.events[0].at'],
    ['a sentence over two lines', { kind: 'progress', sentence: 'one\ntwo' }, 'body.events[0].sentence'],
    ['a sentence over 300 characters', { kind: 'progress', sentence: 'x'.repeat(301) }, 'body.events[0].sentence'],
    ['a page that is not http(s)', { kind: 'started', pageUrl: 'javascript:alert(1)' }, 'body.events[0].pageUrl'],
    ['a time before the year 1000 (UTC)', { kind: 'started', at: '1000-01-01T00:00:00+14:00' }, 'body.events[0].at'],
    ['a time past the year 9999 (UTC)', { kind: 'started', at: '9999-12-31T23:59:59-12:00' }, 'body.events[0].at'],
    ['a pull request URL over 2048 characters', { kind: 'pull_request_opened', pullRequestUrl: `https://git.example/${'a'.repeat(2048)}` }, 'body.events[0].pullRequestUrl'],
  ])('refuses %s (400 invalid_request)', async (_what, event, field) => {
    const res = await events(runId, workbench, { events: [{ at: platform.clock.now().toISOString(), ...event }] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
  });

  it('refuses no events, and more than 100 in one report', async () => {
    expect((await events(runId, workbench, { events: [] })).status).toBe(400);
    const many = Array.from({ length: 101 }, () => ({ at: platform.clock.now().toISOString(), kind: 'progress' }));
    expect((await events(runId, workbench, { events: many })).body).toMatchObject({ error: 'invalid_request', field: 'body.events' });
  });

  it('keeps at most 1000 events a run (409 run_event_limit)', async () => {
    const fresh = (await register(workbench, full())).body.runId as string;
    const hundred = { events: Array.from({ length: 100 }, () => ({ at: platform.clock.now().toISOString(), kind: 'progress' })) };
    for (let i = 0; i < 10; i++) expect((await events(fresh, workbench, hundred)).status).toBe(200);
    const over = await events(fresh, workbench, { events: [{ at: platform.clock.now().toISOString(), kind: 'completed' }] });
    expect(over.status).toBe(409);
    expect(over.body).toMatchObject({ error: 'run_event_limit', max: 1000 });
  });

  it('refuses events after the run ended (409 run_ended)', async () => {
    const fresh = (await register(workbench, full())).body.runId as string;
    await call(platform, 'post', `/cloud-agents/v1/runs/${fresh}/end`, { host, headers: headers(workbench) });
    const res = await events(fresh, workbench, { events: [{ at: platform.clock.now().toISOString(), kind: 'completed' }] });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('run_ended');
  });

  it('refuses a node (403 insufficient_scope) and a malformed run id (400)', async () => {
    const fresh = await enrolDevice(platform, { organisationId: organisation.id, personId, kind: 'node' });
    expect((await events(runId, fresh, { events: [{ at: platform.clock.now().toISOString(), kind: 'progress' }] })).body.error).toBe('insufficient_scope');
    const res = await events('run-with-dashes', workbench, { events: [{ at: platform.clock.now().toISOString(), kind: 'progress' }] });
    expect(res.status).toBe(400);
    expect(res.body.field).toBe('params.runId');
  });
});

describe('POST /cloud-agents/v1/runs/{runId}/end', () => {
  const end = (runId: string, device: EnrolledDevice, body?: unknown, at = host) =>
    call(platform, 'post', `/cloud-agents/v1/runs/${runId}/end`, { host: at, headers: headers(device), ...(body === undefined ? {} : { body }) });

  it('ends the run once: a second end answers the first, and the credential is forgotten at once', async () => {
    const run = (await register(workbench, full())).body;
    const first = await end(run.runId, workbench, {});
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ runId: run.runId, endedAt: platform.clock.now().toISOString() });
    const row = await platform.dataSource.getRepository(CloudAgentRunEntity).findOneByOrFail({ id: run.runId });
    expect(row.credentialHash).toBeNull();
    expect(row.endedAt?.toISOString()).toBe(first.body.endedAt);

    platform.clock.advance(5_000);
    const second = await end(run.runId, workbench);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(platform.logs.filter((line) => (line.audit as { action?: string; target?: { runId?: string } } | undefined)?.target?.runId === run.runId && (line.audit as { action: string }).action === 'cloud_agent_run.ended')).toHaveLength(1);
  });

  it('answers 404 to any other device, and refuses a body that is not empty', async () => {
    const run = (await register(workbench, full())).body;
    const unknown = await end('run_doesnotexist0000', workbench, {});
    expect(unknown.status).toBe(404);
    for (const [device, at] of [[samePersonWorkbench, host], [colleagueWorkbench, host], [otherWorkbench, otherHost]] as const) {
      const res = await end(run.runId, device, {}, at);
      expect(res.status).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    // Nobody else's end ended it: the run is going and its credential still reaches the MCP endpoint.
    const row = await platform.dataSource.getRepository(CloudAgentRunEntity).findOneByOrFail({ id: run.runId });
    expect(row.endedAt).toBeNull();
    expect(row.credentialHash).toBe(createHash('sha256').update(run.mcp.token).digest('hex'));
    const filled = await end(run.runId, workbench, { reason: 'done' });
    expect(filled.status).toBe(400);
    expect(filled.body.error).toBe('invalid_request');
    expect((await end(run.runId, workbench, {})).status).toBe(200);
  });
});

describe('run credentials', () => {
  it('are refused on every route but their MCP endpoint', async () => {
    const run = (await register(workbench, full())).body;
    const bearer = { Authorization: `Bearer ${run.mcp.token}` };
    for (const [method, path] of [
      ['get', '/platform/v1/organisation'],
      ['get', '/policy/v1'],
      ['post', `/cloud-agents/v1/runs/${run.runId}/end`],
      ['post', `/cloud-agents/v1/runs/${run.runId}/events`],
    ] as const) {
      const res = await call(platform, method, path, { host, headers: bearer, ...(method === 'post' ? { body: {} } : {}) });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
    await endAllRuns();
  });
});
