import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, createTeam, emailSignIn, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { askForCode, deviceHeaders, enrolDevice, pollForTokens } from '../support/devices.js';
import { call } from '../support/platform.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

/**
 * Cloud sessions in every layer (spec 4.2, 4.10, 5): `X-Platform-Organisation` chooses the
 * organisation a request acts for, membership is checked on every request (not a member: 404),
 * and what a self-hosted person token reaches, a Cloud session reaches by the same roles:
 * the organisation and its edition, policy, join keys, devices, and device approval.
 */

let platform: CloudPlatform;
let owner: SignedIn;
let member: SignedIn;
let stranger: SignedIn;
let team: OrganisationRecord;

beforeAll(async () => {
  platform = await startCloud();
  owner = await emailSignIn(platform, 'owner@example.test');
  member = await emailSignIn(platform, 'member@example.test');
  stranger = await emailSignIn(platform, 'stranger@example.test');
  team = await createTeam(platform, 'Skunk Works', [[owner.personId, 'owner'], [member.personId, 'member']]);
});
afterAll(() => platform.close());

describe('X-Platform-Organisation', () => {
  it('chooses the organisation: a team answers edition teams, the personal organisation free (also without the header)', async () => {
    const asTeam = await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(member.access_token, team.id) });
    expect(asTeam.status).toBe(200);
    expect(asTeam.body).toEqual({ id: team.id, name: 'Skunk Works', kind: 'team', plan: 'teams', edition: 'teams', role: 'member' });
    const personal = await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(member.access_token, member.personalOrganisationId) });
    expect(personal.body).toMatchObject({ id: member.personalOrganisationId, kind: 'personal', plan: 'free', edition: 'free', role: 'owner' });
    const implicit = await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(member.access_token) });
    expect(implicit.body.id).toBe(member.personalOrganisationId);
  });

  it.each([
    ['an organisation the person does not belong to', () => team.id, () => stranger.access_token],
    ["another person's personal organisation", () => owner.personalOrganisationId, () => stranger.access_token],
    ['an organisation that does not exist', () => 'org_doesnotexist00000', () => member.access_token],
    ['a value that cannot be an organisation id', () => "org_x' OR 1=1", () => member.access_token],
    ['an empty value', () => '', () => member.access_token],
  ])('answers %s with 404 not_found', async (_case, organisation, token) => {
    for (const path of ['/platform/v1/organisation', '/policy/v1', '/cloud/v1/me']) {
      const res = await call(platform, 'get', path, { headers: { Authorization: `Bearer ${token()}`, 'X-Platform-Organisation': organisation() } });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it('is checked on every request: a person removed from a team loses it at their next request', async () => {
    const leaving = await emailSignIn(platform, 'leaving@example.test');
    const squad = await createTeam(platform, 'Squad', [[owner.personId, 'owner'], [leaving.personId, 'member']]);
    expect((await call(platform, 'get', '/policy/v1', { headers: bearer(leaving.access_token, squad.id) })).status).toBe(200);
    await platform.services.organisations.removeMember(squad.id, leaving.personId);
    expect((await call(platform, 'get', '/policy/v1', { headers: bearer(leaving.access_token, squad.id) })).status).toBe(404);
  });

  it('follows role changes at once', async () => {
    const climber = await emailSignIn(platform, 'climber@example.test');
    const crew = await createTeam(platform, 'Crew', [[owner.personId, 'owner'], [climber.personId, 'member']]);
    expect((await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(climber.access_token, crew.id) })).body.role).toBe('member');
    await platform.services.organisations.setRole(crew.id, climber.personId, 'admin');
    expect((await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(climber.access_token, crew.id) })).body.role).toBe('admin');
  });
});

describe('policy', () => {
  it('any member reads the team\'s policy; owners publish it, members may not', async () => {
    const read = await call(platform, 'get', '/policy/v1', { headers: bearer(member.access_token, team.id) });
    expect(read.status).toBe(200);
    expect(read.body.published).toBe(false);
    const document = { ...read.body.policy, allowedProviders: ['anthropic'] };
    delete document.source;
    const refused = await call(platform, 'put', '/policy/v1/organisation', { headers: bearer(member.access_token, team.id), body: document });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    const published = await call(platform, 'put', '/policy/v1/organisation', { headers: bearer(owner.access_token, team.id), body: document });
    expect(published.status).toBe(200);
    const after = await call(platform, 'get', '/policy/v1', { headers: bearer(member.access_token, team.id) });
    expect(after.body).toMatchObject({ published: true, policy: { allowedProviders: ['anthropic'], source: 'organisation' } });
    // The member's personal organisation keeps its own policy.
    expect((await call(platform, 'get', '/policy/v1', { headers: bearer(member.access_token) })).body.published).toBe(false);
  });

  it('reads a project\'s effective policy with projectId, and refuses another organisation\'s project with 404', async () => {
    const project = await platform.services.projects.create(team.id, { name: 'Rocket' });
    expect((await call(platform, 'get', `/policy/v1?projectId=${project.id}`, { headers: bearer(member.access_token, team.id) })).status).toBe(200);
    expect((await call(platform, 'get', `/policy/v1?projectId=${project.id}`, { headers: bearer(member.access_token) })).status).toBe(404);
  });
});

describe('activity', () => {
  it('owners read what the team\'s workbenches uploaded; members are refused with 403', async () => {
    const events = await call(platform, 'get', '/platform/v1/ingest/events', { headers: bearer(owner.access_token, team.id) });
    expect(events.status).toBe(200);
    expect((await call(platform, 'get', '/platform/v1/ingest/usage/summary', { headers: bearer(owner.access_token, team.id) })).status).toBe(200);
    expect((await call(platform, 'get', '/platform/v1/ingest/events', { headers: bearer(member.access_token, team.id) })).status).toBe(403);
    expect((await call(platform, 'get', '/platform/v1/ingest/events', { headers: bearer(stranger.access_token, team.id) })).status).toBe(404);
  });
});

describe('join keys and devices', () => {
  it('owners create, list and revoke join keys; members are refused with 403', async () => {
    const created = await call(platform, 'post', '/platform/v1/join-keys', { headers: bearer(owner.access_token, team.id), body: { description: 'rack 1' } });
    expect(created.status).toBe(201);
    const listed = await call(platform, 'get', '/platform/v1/join-keys', { headers: bearer(owner.access_token, team.id) });
    expect(listed.body.joinKeys.map((key: { id: string }) => key.id)).toContain(created.body.joinKey.id);
    expect((await call(platform, 'get', '/platform/v1/join-keys', { headers: bearer(member.access_token, team.id) })).status).toBe(403);
    expect((await call(platform, 'post', '/platform/v1/join-keys', { headers: bearer(member.access_token, team.id), body: { description: 'x' } })).status).toBe(403);
    // Join keys of the owner's personal organisation are not the team's.
    expect((await call(platform, 'get', '/platform/v1/join-keys', { headers: bearer(owner.access_token) })).body.joinKeys).toEqual([]);
    expect((await call(platform, 'delete', `/platform/v1/join-keys/${created.body.joinKey.id}`, { headers: bearer(owner.access_token, team.id) })).status).toBe(204);
  });

  it('owners list and revoke the team\'s devices', async () => {
    const device = await enrolDevice(platform, { organisationId: team.id, personId: member.personId });
    const listed = await call(platform, 'get', '/platform/v1/devices', { headers: bearer(owner.access_token, team.id) });
    expect(listed.body.devices.map((entry: { id: string }) => entry.id)).toContain(device.device.id);
    expect((await call(platform, 'get', '/platform/v1/devices', { headers: bearer(member.access_token, team.id) })).status).toBe(403);
    expect((await call(platform, 'delete', `/platform/v1/devices/${device.device.id}`, { headers: bearer(owner.access_token, team.id) })).status).toBe(204);
    expect((await call(platform, 'get', '/policy/v1', { headers: await deviceHeaders(device, 'GET', '/policy/v1') })).status).toBe(401);
  });
});

describe('device approval on Cloud', () => {
  async function codeFor(kind: 'workbench' | 'node' = 'workbench') {
    const asked = await askForCode(platform, { body: { workspaceId: 'ws-1', name: `A ${kind}`, kind } });
    expect(asked.verification_uri).toBe('https://platform.test/device');
    return asked;
  }

  const approvals = (action: 'look-up' | 'approve' | 'deny', person: SignedIn, userCode: string, organisation?: string) =>
    call(platform, 'post', `/platform/v1/device-approvals/${action}`, { headers: bearer(person.access_token, organisation), body: { userCode } });

  const poll = (deviceCode: string) => pollForTokens(platform, deviceCode);

  it('a code belongs to no organisation until approved; the approval names the team, and the device then belongs to it', async () => {
    const asked = await codeFor();
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
    expect((await approvals('look-up', member, asked.user_code, team.id)).status).toBe(200);
    const approved = await approvals('approve', member, asked.user_code, team.id);
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe('approved');
    platform.clock.advance(asked.interval * 1000);
    const tokens = await poll(asked.device_code);
    expect(tokens.status).toBe(200);
    const organisation = await call(platform, 'get', '/platform/v1/organisation', { headers: { Authorization: `Bearer ${tokens.body.access_token}` } });
    expect(organisation.body).toMatchObject({ id: team.id, edition: 'teams' });
  });

  it('without the header the device joins the personal organisation', async () => {
    const asked = await codeFor();
    expect((await approvals('approve', stranger, asked.user_code)).status).toBe(200);
    platform.clock.advance(asked.interval * 1000);
    const tokens = await poll(asked.device_code);
    const organisation = await call(platform, 'get', '/platform/v1/organisation', { headers: { Authorization: `Bearer ${tokens.body.access_token}` } });
    expect(organisation.body).toMatchObject({ id: stranger.personalOrganisationId, edition: 'free' });
  });

  it('the approver must be allowed to approve there: a member may not approve a node for the team (403), but may for their own organisation', async () => {
    const node = await codeFor('node');
    const refused = await approvals('look-up', member, node.user_code, team.id);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    expect((await approvals('approve', owner, node.user_code, team.id)).status).toBe(200);
    const own = await codeFor('node');
    expect((await approvals('approve', member, own.user_code, member.personalOrganisationId)).status).toBe(200);
  });

  it('refuses an organisation the approver does not belong to with 404, and a denied code is access_denied', async () => {
    const asked = await codeFor();
    expect((await approvals('approve', stranger, asked.user_code, team.id)).status).toBe(404);
    expect((await approvals('deny', member, asked.user_code, team.id)).body.status).toBe('denied');
    platform.clock.advance(asked.interval * 1000);
    expect((await poll(asked.device_code)).body.error).toBe('access_denied');
  });
});
