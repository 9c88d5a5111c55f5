import { auditRowsDuring } from '../support/audit-rows.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { bearer, buildTeam, emailSignIn, inviteTo, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * The stored audit trail on Cloud (docs/api/audit-trail.md): teams, members, invitations, sign-in
 * methods and account deletion leave one row each, in the change's transaction; a team's owners
 * and admins read the team's rows with `X-Platform-Organisation`, and no one else does.
 */

let platform: CloudPlatform;
let owner: SignedIn;
let teamId: string;

beforeAll(async () => {
  platform = await startCloud();
  owner = await emailSignIn(platform, 'owner@audit.test');
});
afterAll(() => platform.close());

/** The rows written while `change` ran, in the fields these tests compare. */
async function rowsDuring(change: () => Promise<unknown>) {
  const rows = await auditRowsDuring(platform.dataSource, change);
  return rows.map(({ organisationId, actorKind, actorPersonId, action, target, requestId }) => ({ organisationId, actorKind, actorPersonId, action, target, requestId }));
}

const by = (person: SignedIn, organisationId: string, action: string, target: Record<string, unknown>) => ({
  organisationId,
  actorKind: 'cloud-session',
  actorPersonId: person.personId,
  action,
  target,
  requestId: expect.any(String),
});

describe('every Cloud administrative change leaves exactly one row', () => {
  it('team created and renamed', async () => {
    const created = await rowsDuring(async () => {
      teamId = (await buildTeam(platform, owner, 'Audited team')).id;
    });
    expect(created).toEqual([by(owner, teamId, 'team.created', { organisationId: teamId })]);
    const renamed = await rowsDuring(async () => {
      expect((await call(platform, 'patch', `/cloud/v1/organisations/${teamId}`, { headers: bearer(owner.access_token), body: { name: 'Audited, renamed' } })).status).toBe(200);
    });
    expect(renamed).toEqual([by(owner, teamId, 'organisation.renamed', { organisationId: teamId })]);
  });

  it('invitation created, withdrawn and accepted; member role changed, removed, and left', async () => {
    let invitationId = '';
    const invited = await rowsDuring(async () => {
      const res = await call(platform, 'post', `/cloud/v1/organisations/${teamId}/invitations`, { headers: bearer(owner.access_token), body: { email: 'withdrawn@audit.test' } });
      expect(res.status).toBe(201);
      invitationId = res.body.invitation?.id ?? res.body.id;
    });
    expect(invited).toEqual([by(owner, teamId, 'invitation.created', { invitationId: expect.stringMatching(/^inv_/), role: 'member' })]);
    invitationId = invited[0]!.target.invitationId as string;
    // The invitation's token is in no row.
    expect(JSON.stringify(invited)).not.toContain('platform_iv_');
    const withdrawn = await rowsDuring(async () => {
      expect((await call(platform, 'delete', `/cloud/v1/organisations/${teamId}/invitations/${invitationId}`, { headers: bearer(owner.access_token) })).status).toBe(204);
    });
    expect(withdrawn).toEqual([by(owner, teamId, 'invitation.withdrawn', { invitationId })]);

    const member = await emailSignIn(platform, 'member@audit.test');
    const token = await inviteTo(platform, owner, teamId, 'member@audit.test');
    const accepted = await rowsDuring(async () => {
      expect((await call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, { headers: bearer(member.access_token) })).status).toBe(200);
    });
    expect(accepted).toEqual([by(member, teamId, 'invitation.accepted', { invitationId: expect.stringMatching(/^inv_/), personId: member.personId, role: 'member' })]);

    const promoted = await rowsDuring(async () => {
      expect((await call(platform, 'patch', `/cloud/v1/organisations/${teamId}/members/${member.personId}`, { headers: bearer(owner.access_token), body: { role: 'admin' } })).status).toBe(200);
    });
    expect(promoted).toEqual([by(owner, teamId, 'person.role_changed', { personId: member.personId, from: 'member', to: 'admin' })]);
    // The role it has already: nothing changed, no row.
    expect(await rowsDuring(() => call(platform, 'patch', `/cloud/v1/organisations/${teamId}/members/${member.personId}`, { headers: bearer(owner.access_token), body: { role: 'admin' } }))).toEqual([]);

    const removed = await rowsDuring(async () => {
      expect((await call(platform, 'delete', `/cloud/v1/organisations/${teamId}/members/${member.personId}`, { headers: bearer(owner.access_token) })).status).toBe(204);
    });
    expect(removed).toEqual([by(owner, teamId, 'person.removed', { personId: member.personId })]);

    const leaver = await emailSignIn(platform, 'leaver@audit.test');
    const leaverToken = await inviteTo(platform, owner, teamId, 'leaver@audit.test');
    expect((await call(platform, 'post', `/cloud/v1/invitations/${leaverToken}/accept`, { headers: bearer(leaver.access_token) })).status).toBe(200);
    const left = await rowsDuring(async () => {
      expect((await call(platform, 'delete', `/cloud/v1/organisations/${teamId}/members/${leaver.personId}`, { headers: bearer(leaver.access_token) })).status).toBe(204);
    });
    expect(left).toEqual([by(leaver, teamId, 'person.left', { personId: leaver.personId })]);
  });

  it('sign-in method added and removed; person renamed; account deleted', async () => {
    const person = await emailSignIn(platform, 'methods@audit.test');
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(person.access_token) });
    expect(ticket.status).toBe(200);
    const added = await rowsDuring(() => emailSignIn(platform, 'second@audit.test', { link: ticket.body.ticket, session: person.access_token }));
    expect(added).toEqual([
      { ...by(person, person.personalOrganisationId, 'sign_in_method.added', { personId: person.personId, signInMethodId: expect.stringMatching(/^sim_/), provider: 'email' }), requestId: expect.any(String) },
    ]);
    const methodId = added[0]!.target.signInMethodId as string;
    const renamed = await rowsDuring(async () => {
      expect((await call(platform, 'patch', '/cloud/v1/me', { headers: bearer(person.access_token), body: { name: 'Renamed person' } })).status).toBe(200);
    });
    expect(renamed).toEqual([by(person, person.personalOrganisationId, 'person.renamed', { personId: person.personId })]);
    const removed = await rowsDuring(async () => {
      expect((await call(platform, 'delete', `/cloud/v1/me/sign-in-methods/${methodId}`, { headers: bearer(person.access_token) })).status).toBe(204);
    });
    expect(removed).toEqual([by(person, person.personalOrganisationId, 'sign_in_method.removed', { personId: person.personId, signInMethodId: methodId })]);
    const deleted = await rowsDuring(async () => {
      expect((await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(person.access_token), body: { confirm: 'methods@audit.test' } })).status).toBe(204);
    });
    expect(deleted).toEqual([by(person, person.personalOrganisationId, 'person.deleted', { personId: person.personId, organisationsDeleted: person.personalOrganisationId })]);
  });

  it('a refused change leaves no row', async () => {
    const stranger = await emailSignIn(platform, 'stranger@audit.test');
    expect(
      await rowsDuring(async () => {
        expect((await call(platform, 'patch', `/cloud/v1/organisations/${teamId}`, { headers: bearer(stranger.access_token), body: { name: 'Taken over' } })).status).toBe(404);
        expect((await call(platform, 'post', `/cloud/v1/organisations/${teamId}/invitations`, { headers: bearer(stranger.access_token), body: { email: 'x@audit.test' } })).status).toBe(404);
      }),
    ).toEqual([]);
  });
});

describe('GET /platform/v1/audit-log on Cloud', () => {
  it("a team's owners and admins read the team's rows with X-Platform-Organisation; members do not; strangers find no team", async () => {
    const res = await call(platform, 'get', '/platform/v1/audit-log?limit=200', { headers: bearer(owner.access_token, teamId) });
    expect(res.status).toBe(200);
    expect(res.body.entries.length).toBeGreaterThan(5);
    expect(res.body.entries.every((entry: { organisationId: string }) => entry.organisationId === teamId)).toBe(true);
    expect(res.body.entries.at(-1)).toMatchObject({ action: 'team.created', actor: { kind: 'cloud-session', personId: owner.personId, deviceId: null } });

    const member = await emailSignIn(platform, 'reader@audit.test');
    const token = await inviteTo(platform, owner, teamId, 'reader@audit.test');
    expect((await call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, { headers: bearer(member.access_token) })).status).toBe(200);
    expect((await call(platform, 'get', '/platform/v1/audit-log', { headers: bearer(member.access_token, teamId) })).status).toBe(403);
    expect((await call(platform, 'get', '/platform/v1/audit-log/export', { headers: bearer(member.access_token, teamId) })).status).toBe(403);

    // Another team's owner: their own team's rows only, whatever the filter; this team's id is no team of theirs.
    const other = await emailSignIn(platform, 'other-owner@audit.test');
    const otherTeam = await buildTeam(platform, other, 'Other team');
    for (const query of ['', `?target=${teamId}`, `?actor=${owner.personId}`, '?action=team.created']) {
      const theirs = await call(platform, 'get', `/platform/v1/audit-log${query}`, { headers: bearer(other.access_token, otherTeam.id) });
      expect(theirs.status).toBe(200);
      expect(JSON.stringify(theirs.body)).not.toContain(teamId);
    }
    expect((await call(platform, 'get', '/platform/v1/audit-log', { headers: bearer(other.access_token, teamId) })).status).toBe(404);

    // The export, and malformed queries, on Cloud too.
    const exported = await call(platform, 'get', '/platform/v1/audit-log/export?since=2000-01-01T00:00:00Z', { headers: bearer(owner.access_token, teamId) });
    expect(exported.status).toBe(200);
    expect(exported.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const last = JSON.parse(exported.text.trim().split('\n').at(-1)!) as { end: boolean };
    expect(last.end).toBe(true);
    expect(exported.text).not.toContain(otherTeam.id);
    for (const path of ['/platform/v1/audit-log?since=soon', '/platform/v1/audit-log/export?cursor=%20']) {
      const refused = await call(platform, 'get', path, { headers: bearer(owner.access_token, teamId) });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }
  });
});
