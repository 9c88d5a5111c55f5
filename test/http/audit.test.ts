import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import { personHeaders, personIdFor, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Every administrative change made through the API writes one `info` audit line naming who
 * (the actor), what (the action and its target, ids only) and which organisation; a refused
 * change writes none. (The command line's lines are tested with it: test/cli/cli.test.ts.)
 */

let platform: TestPlatform;
let orgs: TwoOrganisations;
let owner: Record<string, string>;
let ownerId: string;

beforeAll(async () => {
  platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false' } });
  orgs = await twoOrganisations(platform, platform.clock);
  owner = await personHeaders(orgs.idp, 'owner');
  // The person exists once they have signed in.
  expect((await call(platform, 'get', '/platform/v1/organisation', { host: orgs.host, headers: owner })).status).toBe(200);
  ownerId = await personIdFor(platform, orgs.idp, 'owner');
});
afterAll(async () => {
  await Promise.all([orgs.idp.close(), orgs.otherIdp.close()]);
  await platform.close();
});

/** The audit lines written while `change` ran. */
async function auditsDuring(change: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const from = platform.logs.length;
  await change();
  return platform.logs.slice(from).filter((line) => line.audit !== undefined);
}

function expectOneAudit(lines: Record<string, unknown>[], action: string, target: Record<string, unknown>): void {
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 30, msg: `audit ${action}` });
  expect(lines[0]!.audit).toEqual({ action, organisationId: orgs.organisation.id, actor: { kind: 'person', personId: ownerId }, target });
}

describe('audit lines of administrative changes made through the API', () => {
  it('join key created and revoked: the id, never the key', async () => {
    let created: { key: string; joinKey: { id: string; expiresAt: string } } | undefined;
    const creation = await auditsDuring(async () => {
      const res = await call(platform, 'post', '/platform/v1/join-keys', { host: orgs.host, headers: owner, body: { description: 'Audited rack' } });
      expect(res.status).toBe(201);
      created = res.body;
    });
    expectOneAudit(creation, 'join_key.created', { joinKeyId: created!.joinKey.id, reusable: false, expiresAt: created!.joinKey.expiresAt });
    expect(JSON.stringify(creation)).not.toContain(created!.key.slice('platform_jk_'.length));
    const revocation = await auditsDuring(async () => {
      expect((await call(platform, 'delete', `/platform/v1/join-keys/${created!.joinKey.id}`, { host: orgs.host, headers: owner })).status).toBe(204);
    });
    expectOneAudit(revocation, 'join_key.revoked', { joinKeyId: created!.joinKey.id });
  });

  it('device revoked', async () => {
    const person = await createPerson(platform, orgs.organisation.id);
    const { device } = await enrolDevice(platform, { organisationId: orgs.organisation.id, personId: person.id });
    const lines = await auditsDuring(async () => {
      expect((await call(platform, 'delete', `/platform/v1/devices/${device.id}`, { host: orgs.host, headers: owner })).status).toBe(204);
    });
    expectOneAudit(lines, 'device.revoked', { deviceId: device.id, kind: 'workbench' });
  });

  it("policy published, the organisation's and a project's: one line per change, none for a publish that changes nothing", async () => {
    const document = { ...DEFAULT_POLICY, agents: { sandbox: 'off' } };
    let published: { revision: string; number: number } | undefined;
    const organisationLines = await auditsDuring(async () => {
      const res = await call(platform, 'put', '/policy/v1/organisation', { host: orgs.host, headers: owner, body: document });
      expect(res.status).toBe(200);
      published = res.body;
    });
    expectOneAudit(organisationLines, 'policy.published', { projectId: null, number: published!.number, revision: published!.revision });
    const first = published!.number;
    const again = await auditsDuring(async () => {
      const res = await call(platform, 'put', '/policy/v1/organisation', { host: orgs.host, headers: owner, body: document });
      expect(res.body.changed).toBe(false);
    });
    expect(again).toEqual([]);
    const project = await platform.services.projects.create(orgs.organisation.id, { name: 'Audited' });
    const projectLines = await auditsDuring(async () => {
      const res = await call(platform, 'put', `/policy/v1/projects/${project.id}`, { host: orgs.host, headers: owner, body: { git: { requirePullRequest: true } } });
      expect(res.status).toBe(200);
      published = res.body;
    });
    expectOneAudit(projectLines, 'policy.published', { projectId: project.id, number: published!.number, revision: published!.revision });
    expect((await call(platform, 'put', '/policy/v1/organisation', { host: orgs.host, headers: owner, body: DEFAULT_POLICY })).status).toBe(200);
    const restored = await auditsDuring(async () => {
      const res = await call(platform, 'post', `/policy/v1/organisation/revisions/${first}/restore`, { host: orgs.host, headers: owner });
      expect(res.status).toBe(200);
      published = res.body;
    });
    expectOneAudit(restored, 'policy.restored', { projectId: null, number: published!.number, revision: published!.revision, restoredFrom: first });
  });

  it.each([
    ['approve', 'device.approved'],
    ['deny', 'device.denied'],
  ])('device enrolment decided (%s): the device, never the code', async (decision, action) => {
    const code = await call(platform, 'post', '/relay/v1/device/code', { host: orgs.host, body: { workspaceId: 'ws-audit', name: 'Audited laptop' } });
    expect(code.status).toBe(200);
    expect((await call(platform, 'post', '/platform/v1/device-approvals/look-up', { host: orgs.host, headers: owner, body: { userCode: code.body.user_code } })).status).toBe(200);
    const lines = await auditsDuring(async () => {
      const res = await call(platform, 'post', `/platform/v1/device-approvals/${decision}`, { host: orgs.host, headers: owner, body: { userCode: code.body.user_code } });
      expect(res.status).toBe(200);
    });
    expectOneAudit(lines, action, { kind: 'workbench', name: 'Audited laptop' });
    expect(JSON.stringify(lines)).not.toContain(code.body.user_code.replace('-', ''));
  });

  it('writes no audit line for a refused change', async () => {
    const member = await personHeaders(orgs.idp, 'member');
    const lines = await auditsDuring(async () => {
      expect((await call(platform, 'post', '/platform/v1/join-keys', { host: orgs.host, headers: member, body: { description: 'Not allowed' } })).status).toBe(403);
      expect((await call(platform, 'delete', '/platform/v1/devices/dev_nothing', { host: orgs.host, headers: owner })).status).toBe(404);
    });
    expect(lines).toEqual([]);
  });
});
