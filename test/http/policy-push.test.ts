import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import { call, createOrganisation, listen, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { runCliCapturing } from '../support/cli.js';
import { TestIdentityProvider } from '../support/idp.js';
import { personHeaders } from '../support/organisations.js';
import { TestWorkbench, type Notification } from '../support/workbench.js';

/**
 * Policy pushed over the control channel (docs/api/policy-push.md), one process: the hello that
 * opens every socket, `policy.changed` after a publish or restore has committed, only to the
 * devices the scope applies to, at most once per publish per connection, never the document.
 * Runs on SQLite (`npm test`) and on MariaDB (the services project).
 */

let platform: TestPlatform;
let server: Awaited<ReturnType<typeof listen>>;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
const host = '127.0.0.1';
let projectId: string;
let member: EnrolledDevice;
let outsider: EnrolledDevice;
let node: EnrolledDevice;
const open: TestWorkbench[] = [];

beforeAll(async () => {
  platform = await startPlatform();
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { hosts: [host], oidc: idp.settings({ roleClaim: 'platform_role' }) });
  server = await listen(platform);
  const inProject = (await createPerson(platform, organisation.id)).id;
  const notInProject = (await createPerson(platform, organisation.id)).id;
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Pushed', owner: inProject })).id;
  member = await enrolDevice(platform, { organisationId: organisation.id, personId: inProject, name: 'Member workbench' });
  outsider = await enrolDevice(platform, { organisationId: organisation.id, personId: notInProject, name: 'Outsider workbench' });
  // A node of the project member's own person: nodes belong to no project.
  node = await enrolDevice(platform, { organisationId: organisation.id, personId: inProject, kind: 'node', name: 'Node' });
});

afterAll(async () => {
  for (const workbench of open) workbench.close();
  await server?.close();
  await idp?.close();
  await platform?.close();
});

async function connect(device: EnrolledDevice): Promise<TestWorkbench> {
  const workbench = await TestWorkbench.connect(server.origin, device, platform.clock);
  open.push(workbench);
  return workbench;
}

/** What `GET /policy/v1` answers the device now (its ETag, unquoted). */
async function etagOf(device: EnrolledDevice, project?: string): Promise<string> {
  const res = await call(platform, 'get', project ? `/policy/v1?projectId=${project}` : '/policy/v1', { host, headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
  expect(res.status).toBe(200);
  return JSON.parse(res.headers.etag as string) as string;
}

let edits = 0;
/** A document that differs from every earlier one of this file. */
function freshDocument(): unknown {
  edits += 1;
  return mergeOverride(DEFAULT_POLICY, { remote: { idleTimeoutMinutes: 10 + edits } });
}

async function publishOrganisation(headers: Record<string, string> = {}) {
  return call(platform, 'put', '/policy/v1/organisation', { host, headers: { ...(await personHeaders(idp, 'admin')), ...headers }, body: freshDocument() });
}

async function publishProject(override: unknown = { remote: { killSwitchLockedOn: edits++ % 2 === 0 } }) {
  return call(platform, 'put', `/policy/v1/projects/${projectId}`, { host, headers: await personHeaders(idp, 'admin'), body: override });
}

/** The one shape of a `policy.changed` frame: nothing beside scope, project, number and revision. */
function expectChangedFrame(notification: Notification, params: Record<string, unknown>): void {
  expect(JSON.parse(notification.text)).toEqual({ jsonrpc: '2.0', method: 'policy.changed', params });
}

describe('the hello', () => {
  it('is the first frame on every socket and names the current revision of each scope that applies', async () => {
    const [memberBench, outsiderBench, nodeBench] = [await connect(member), await connect(outsider), await connect(node)];
    const defaults = await etagOf(member);
    const projectDefaults = await etagOf(member, projectId);
    for (const bench of [memberBench, outsiderBench, nodeBench]) expect(bench.methods[0]).toBe('hello');
    expect(JSON.parse(memberBench.notifications[0]!.text)).toEqual({
      jsonrpc: '2.0',
      method: 'hello',
      params: { policy: { organisation: { number: null, revision: defaults }, projects: [{ projectId, number: null, revision: projectDefaults }] } },
    });
    // Not in the project: the hello does not name it. A node belongs to no project.
    expect(outsiderBench.notifications[0]!.params).toEqual({ policy: { organisation: { number: null, revision: defaults }, projects: [] } });
    expect(nodeBench.notifications[0]!.params).toEqual({ policy: { organisation: { number: null, revision: defaults }, projects: [] } });
    for (const bench of [memberBench, outsiderBench, nodeBench]) bench.close();
  });
});

describe('policy.changed', () => {
  let memberBench: TestWorkbench;
  let outsiderBench: TestWorkbench;
  let nodeBench: TestWorkbench;

  beforeAll(async () => {
    [memberBench, outsiderBench, nodeBench] = [await connect(member), await connect(outsider), await connect(node)];
  });

  it('reaches every device of the organisation after a publish of its policy, naming the number and the ETag GET /policy/v1 answers next', async () => {
    const published = await publishOrganisation();
    expect(published.status).toBe(200);
    const number = published.body.number as number;
    const revision = JSON.parse(published.headers.etag as string) as string;
    for (const bench of [memberBench, outsiderBench, nodeBench]) {
      const [changed] = await bench.waitFor('policy.changed', 1);
      expectChangedFrame(changed!, { scope: 'organisation', number, revision });
    }
    expect(await etagOf(member)).toBe(revision);
    expect(await etagOf(node)).toBe(revision);
  });

  it('carries no policy text: the published values appear in no frame', async () => {
    for (const bench of [memberBench, outsiderBench, nodeBench]) {
      for (const notification of bench.received('policy.changed')) {
        expect(notification.text).not.toMatch(/idleTimeoutMinutes|remote|killSwitch|"policy"/);
      }
    }
  });

  it('reaches them after a restore, as the new publish it is', async () => {
    const first = memberBench.received('policy.changed')[0]!.params.number as number;
    const before = memberBench.received('policy.changed').length + 1;
    await publishOrganisation();
    for (const bench of [memberBench, outsiderBench, nodeBench]) await bench.waitFor('policy.changed', before);
    const restored = await call(platform, 'post', `/policy/v1/organisation/revisions/${first}/restore`, { host, headers: await personHeaders(idp, 'admin') });
    expect(restored.status).toBe(200);
    expect(restored.body.changed).toBe(true);
    const revision = JSON.parse(restored.headers.etag as string) as string;
    for (const bench of [memberBench, outsiderBench, nodeBench]) {
      const all = await bench.waitFor('policy.changed', before + 1);
      expectChangedFrame(all.at(-1)!, { scope: 'organisation', number: restored.body.number as number, revision });
    }
    expect(await etagOf(outsider)).toBe(revision);
  });

  it("reaches only the workbenches of the project's members after a publish of its override; the others never hear of the project", async () => {
    const counts = [memberBench, outsiderBench, nodeBench].map((bench) => bench.received('policy.changed').length);
    const published = await publishProject();
    expect(published.status).toBe(200);
    const revision = JSON.parse(published.headers.etag as string) as string;
    const all = await memberBench.waitFor('policy.changed', counts[0]! + 1);
    expectChangedFrame(all.at(-1)!, { scope: 'project', projectId, number: published.body.number as number, revision });
    expect(await etagOf(member, projectId)).toBe(revision);
    // The member's notification was sent; whatever the others would get was sent with it, before
    // this publish of the organisation's policy, which reaches everyone after it.
    const next = await publishOrganisation();
    for (const [index, bench] of [outsiderBench, nodeBench].entries()) {
      const received = await bench.waitFor('policy.changed', counts[index + 1]! + 1);
      expect(received.slice(counts[index + 1])).toHaveLength(1);
      expect(received.at(-1)!.params).toMatchObject({ scope: 'organisation', number: next.body.number as number });
      for (const notification of bench.notifications) expect(notification.text).not.toContain(projectId);
    }
    await memberBench.waitFor('policy.changed', counts[0]! + 2);
  });

  it('is sent only after the publish committed: a refused publish (412, rolled back) and an unchanged one send nothing', async () => {
    const counts = [memberBench, outsiderBench].map((bench) => bench.received('policy.changed').length);
    expect((await publishOrganisation({ 'If-Match': '"not-the-current-revision"' })).status).toBe(412);
    const same = (await call(platform, 'get', '/policy/v1', { host, headers: await personHeaders(idp, 'admin') })).body.policy as Record<string, unknown>;
    const { source: _source, ...document } = same;
    const unchanged = await call(platform, 'put', '/policy/v1/organisation', { host, headers: await personHeaders(idp, 'admin'), body: document });
    expect(unchanged.body.changed).toBe(false);
    const published = await publishOrganisation();
    for (const [index, bench] of [memberBench, outsiderBench].entries()) {
      const received = await bench.waitFor('policy.changed', counts[index]! + 1);
      expect(received.slice(counts[index]).map((notification) => notification.params.number)).toEqual([published.body.number]);
    }
  });

  it('is sent at most once per publish per connection, and never for an older one; never to another organisation', async () => {
    const count = memberBench.received('policy.changed').length;
    const last = memberBench.received('policy.changed').at(-1)!.params as { number: number; revision: string };
    // The same change again (another replica's copy arriving late), an older one, another organisation's.
    platform.services.relay.policyChanged({ organisationId: organisation.id, projectId: null, number: last.number, revision: last.revision });
    platform.services.relay.policyChanged({ organisationId: organisation.id, projectId: null, number: last.number - 1, revision: 'older' });
    platform.services.relay.policyChanged({ organisationId: 'org_someone_else', projectId: null, number: last.number + 50, revision: 'theirs' });
    // A marker after them: once it has arrived, anything sent before it has too.
    platform.services.relay.policyChanged({ organisationId: organisation.id, projectId: null, number: last.number + 100, revision: 'marker' });
    const received = await memberBench.waitFor('policy.changed', count + 1);
    expect(received.slice(count).map((notification) => notification.params.revision)).toEqual(['marker']);
  });

  it('a reconnecting workbench gets the current revisions in its hello, and nothing again for them', async () => {
    memberBench.close();
    const again = await connect(member);
    const hello = again.notifications[0]!;
    expect(hello.method).toBe('hello');
    const policy = hello.params.policy as { organisation: { number: number; revision: string }; projects: { projectId: string; number: number; revision: string }[] };
    expect(policy.organisation.revision).toBe(await etagOf(member));
    expect(policy.projects).toEqual([{ projectId, number: expect.any(Number), revision: await etagOf(member, projectId) }]);
    // The current publish again (late from another replica): already named in the hello.
    platform.services.relay.policyChanged({ organisationId: organisation.id, projectId: null, number: policy.organisation.number, revision: policy.organisation.revision });
    platform.services.relay.policyChanged({ organisationId: organisation.id, projectId, number: policy.projects[0]!.number, revision: policy.projects[0]!.revision });
    const next = await publishOrganisation();
    const received = await again.waitFor('policy.changed', 1);
    expect(received.map((notification) => notification.params.number)).toEqual([next.body.number]);
  });
});

describe('a publish by the command line', () => {
  it('is stored and answered even when Redis cannot be reached to tell the workbenches: a warning says they read it at their next poll', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'policy-push-cli-'));
    try {
      const file = join(dir, 'policy.json');
      writeFileSync(file, JSON.stringify(freshDocument()));
      const outcome = await runCliCapturing(['policy', 'publish', '--org', organisation.id, '--file', file, '--json'], {
        env: { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: platform.database.url, REDIS_URL: 'redis://127.0.0.1:1' },
        clock: platform.clock,
        dataSource: platform.dataSource,
      });
      expect(outcome.code).toBe(0);
      const published = JSON.parse(outcome.stdout) as { number: number; revision: string };
      expect(outcome.stderr).toContain(`platform: warning: the connected workbenches were not told of revision ${published.number}`);
      expect(outcome.stderr).toContain('they read it at their next poll');
      expect(await etagOf(outsider)).toBe(published.revision);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
