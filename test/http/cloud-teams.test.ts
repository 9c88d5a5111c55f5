import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { IsNull, Not } from 'typeorm';
import { bearer, buildTeam, emailSignIn, inviteTo, joinTeam, lastMailTo, outboxMails, startCloud, tokenOf, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { deviceHeaders, enrolDevice } from '../support/devices.js';
import { call } from '../support/platform.js';
import { InvitationEntity } from '../../src/modules/teams/entities.js';
import { JoinKeyEntity } from '../../src/modules/devices/entities.js';
import { MembershipEntity } from '../../src/modules/organisation/entities.js';
import { OrganisationStore } from '../../src/modules/organisation/store.js';
import { SignInMethodEntity } from '../../src/modules/signin/entities.js';
import { ProjectMemberEntity } from '../../src/modules/projects/entities.js';
import { newId } from '../../src/util/ids.js';

/**
 * Cloud teams (spec 2.4, 2.7-2.9, 3, 4.5): teams, members and roles, invitations by email, every
 * rule with people of each role, a person of another team and a person of no team.
 */

let platform: CloudPlatform;
let counter = 0;

beforeAll(async () => {
  platform = await startCloud({ env: { AUTH_ACCESS_TOKEN_TTL_SECONDS: '86400' } });
});
afterAll(() => platform.close());

interface Crew {
  id: string;
  owner: SignedIn;
  admin: SignedIn;
  member: SignedIn;
  /** Owner of another team. */
  outsider: SignedIn;
  /** Belongs to no team. */
  loner: SignedIn;
  emails: Record<'owner' | 'admin' | 'member' | 'outsider' | 'loner', string>;
}

/** A team with an owner, an admin and a member (all joined through invitations), beside another team and a loner. */
async function crew(name = 'Crew'): Promise<Crew> {
  counter += 1;
  const emails = {
    owner: `owner${counter}@example.test`,
    admin: `admin${counter}@example.test`,
    member: `member${counter}@example.test`,
    outsider: `outsider${counter}@example.test`,
    loner: `loner${counter}@example.test`,
  };
  const [owner, admin, member, outsider, loner] = await Promise.all(Object.values(emails).map((email) => emailSignIn(platform, email)));
  const team = await buildTeam(platform, owner!, `${name} ${counter}`);
  // A second apart, so that the order they joined in is plain.
  platform.clock.advance(1000);
  await joinTeam(platform, owner!, team.id, admin!, emails.admin, 'admin');
  platform.clock.advance(1000);
  await joinTeam(platform, owner!, team.id, member!, emails.member);
  await buildTeam(platform, outsider!, `Elsewhere ${counter}`);
  return { id: team.id, owner: owner!, admin: admin!, member: member!, outsider: outsider!, loner: loner!, emails };
}

const as = (person: SignedIn, organisationId?: string) => ({ headers: bearer(person.access_token, organisationId) });

async function rolesIn(teamId: string, viewer: SignedIn): Promise<Record<string, string>> {
  const res = await call(platform, 'get', `/cloud/v1/organisations/${teamId}/members`, as(viewer));
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.members.map((member: { userId: string; role: string }) => [member.userId, member.role]));
}

describe('creating a team', () => {
  it('makes the caller its owner: kind team, plan teams, edition teams, listed among their organisations', async () => {
    const ana = await emailSignIn(platform, 'ana.create@example.test');
    const res = await call(platform, 'post', '/cloud/v1/organisations', { ...as(ana), body: { name: '  Skunk Works  ' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^org_/), name: 'Skunk Works', kind: 'team', plan: 'teams', role: 'owner' });
    const me = await call(platform, 'get', '/cloud/v1/me', as(ana));
    expect(me.body.organisations.map((o: { kind: string }) => o.kind)).toEqual(['personal', 'team']);
    const organisation = await call(platform, 'get', '/platform/v1/organisation', as(ana, res.body.id));
    expect(organisation.body).toMatchObject({ id: res.body.id, kind: 'team', plan: 'teams', edition: 'teams', role: 'owner' });
    expect((await call(platform, 'get', '/platform/v1/organisation', as(ana))).body.edition).toBe('free');
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'team.created')).toBe(true);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['a name of spaces', { name: '   ' }],
    ['a name of 101 characters', { name: 'x'.repeat(101) }],
    ['a name with a line break', { name: 'Evil\r\nBcc: victim@example.test' }],
    ['a name that is not a string', { name: 42 }],
  ])('refuses %s with 400 invalid_request', async (_case, body) => {
    counter += 1;
    const ana = await emailSignIn(platform, `ana.refused${counter}@example.test`);
    const res = await call(platform, 'post', '/cloud/v1/organisations', { ...as(ana), body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('needs a signed-in person (401)', async () => {
    const res = await call(platform, 'post', '/cloud/v1/organisations', { body: { name: 'Nobody' } });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it('takes its plan from CLOUD_TEAM_PLAN', async () => {
    const other = await startCloud({ env: { CLOUD_TEAM_PLAN: 'enterprise' } });
    try {
      const ana = await emailSignIn(other, 'ana.plan@example.test');
      const res = await call(other, 'post', '/cloud/v1/organisations', { ...as(ana), body: { name: 'Big' } });
      expect(res.body).toMatchObject({ kind: 'team', plan: 'enterprise' });
      expect((await call(other, 'get', '/platform/v1/organisation', as(ana, res.body.id))).body.edition).toBe('teams');
    } finally {
      await other.close();
    }
  });
});

describe('renaming a team', () => {
  let team: Crew;
  beforeAll(async () => {
    team = await crew('Rename');
  });

  it('is for owners and admins (200); a member is refused with 403', async () => {
    expect((await call(platform, 'patch', `/cloud/v1/organisations/${team.id}`, { ...as(team.owner), body: { name: 'Renamed by owner' } })).body).toEqual({ ok: true });
    expect((await call(platform, 'patch', `/cloud/v1/organisations/${team.id}`, { ...as(team.admin), body: { name: 'Renamed by admin' } })).status).toBe(200);
    const refused = await call(platform, 'patch', `/cloud/v1/organisations/${team.id}`, { ...as(team.member), body: { name: 'Mine now' } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.member, team.id))).body.name).toBe('Renamed by admin');
  });

  it('answers 404 to a person of another team and to a person of none, and for an unknown id', async () => {
    for (const who of [team.outsider, team.loner]) {
      const res = await call(platform, 'patch', `/cloud/v1/organisations/${team.id}`, { ...as(who), body: { name: 'Taken' } });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    expect((await call(platform, 'patch', '/cloud/v1/organisations/org_nosuchthing0000', { ...as(team.owner), body: { name: 'x' } })).status).toBe(404);
  });

  it('takes the team\'s id exactly: the same id in capitals names no organisation (404) on every team route, on either database, and nothing is changed or stored', async () => {
    const shouting = team.id.toUpperCase();
    const invitations = platform.dataSource.getRepository(InvitationEntity);
    const stored = await invitations.countBy({});
    const unknown = await call(platform, 'patch', '/cloud/v1/organisations/org_nosuchthing0000', { ...as(team.owner), body: { name: 'x' } });
    for (const [method, path, body] of [
      ['patch', `/cloud/v1/organisations/${shouting}`, { name: 'Shouted' }],
      ['get', `/cloud/v1/organisations/${shouting}/members`, undefined],
      ['patch', `/cloud/v1/organisations/${shouting}/members/${team.member.personId}`, { role: 'admin' }],
      ['delete', `/cloud/v1/organisations/${shouting}/members/${team.member.personId}`, undefined],
      ['get', `/cloud/v1/organisations/${shouting}/invitations`, undefined],
      ['post', `/cloud/v1/organisations/${shouting}/invitations`, { email: `shouted${counter}@example.test` }],
      ['delete', `/cloud/v1/organisations/${shouting}/invitations/inv_nosuchthing000`, undefined],
    ] as const) {
      const res = await call(platform, method, path, { ...as(team.owner), ...(body ? { body } : {}) });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    expect(await invitations.countBy({})).toBe(stored);
    expect(await rolesIn(team.id, team.owner)).toMatchObject({ [team.member.personId]: 'member' });
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.member, team.id))).body.name).not.toBe('Shouted');
  });

  it('refuses a personal organisation with 400 personal_organisation, and a bad name with 400 invalid_request', async () => {
    const personal = await call(platform, 'patch', `/cloud/v1/organisations/${team.owner.personalOrganisationId}`, { ...as(team.owner), body: { name: 'A team now' } });
    expect(personal.status).toBe(400);
    expect(personal.body.error).toBe('personal_organisation');
    const bad = await call(platform, 'patch', `/cloud/v1/organisations/${team.id}`, { ...as(team.owner), body: { name: '\u0000' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
  });
});

describe('members', () => {
  let team: Crew;
  beforeAll(async () => {
    team = await crew('Members');
  });

  it('are listed to every member (spec 2.7), in the order they joined', async () => {
    for (const who of [team.owner, team.admin, team.member]) {
      const res = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members`, as(who));
      expect(res.status).toBe(200);
      expect(res.body.nextCursor).toBeNull();
      expect(res.body.members).toEqual([
        { userId: team.owner.personId, name: team.emails.owner, email: team.emails.owner, role: 'owner', joinedAt: expect.any(String) },
        { userId: team.admin.personId, name: team.emails.admin, email: team.emails.admin, role: 'admin', joinedAt: expect.any(String) },
        { userId: team.member.personId, name: team.emails.member, email: team.emails.member, role: 'member', joinedAt: expect.any(String) },
      ]);
    }
  });

  it('are listed a page at a time; nextCursor is null on the last page; a cursor not given out is 400', async () => {
    const first = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members?limit=2`, as(team.member));
    expect(first.body.members).toHaveLength(2);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members?limit=2&cursor=${first.body.nextCursor}`, as(team.member));
    expect(second.body.members.map((m: { userId: string }) => m.userId)).toEqual([team.member.personId]);
    expect(second.body.nextCursor).toBeNull();
    const bad = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members?cursor=nonsense`, as(team.member));
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
  });

  it('are not shown to a person of another team or of none (404)', async () => {
    for (const who of [team.outsider, team.loner]) {
      const res = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members`, as(who));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it('of a personal organisation are its owner alone', async () => {
    const res = await call(platform, 'get', `/cloud/v1/organisations/${team.loner.personalOrganisationId}/members`, as(team.loner));
    expect(res.body.members).toEqual([expect.objectContaining({ userId: team.loner.personId, role: 'owner' })]);
  });
});

describe('changing roles', () => {
  const change = (team: Crew, by: SignedIn, personId: string, role: string) =>
    call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${personId}`, { ...as(by), body: { role } });

  it('owners make and unmake owners and admins; the change applies at the member\'s next request', async () => {
    const team = await crew('Owners change');
    expect((await change(team, team.owner, team.member.personId, 'admin')).body).toEqual({ ok: true });
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.member, team.id))).body.role).toBe('admin');
    expect((await change(team, team.owner, team.admin.personId, 'owner')).status).toBe(200);
    expect((await change(team, team.owner, team.owner.personId, 'member')).status).toBe(200);
    expect(await rolesIn(team.id, team.owner)).toEqual({ [team.owner.personId]: 'member', [team.admin.personId]: 'owner', [team.member.personId]: 'admin' });
    expect(platform.logs.some((line) => (line.audit as { action?: string; target?: { to?: string } } | undefined)?.action === 'person.role_changed')).toBe(true);
  });

  it('admins change roles among admins and members, but never make, unmake or touch an owner (403)', async () => {
    const team = await crew('Admins change');
    expect((await change(team, team.admin, team.member.personId, 'admin')).status).toBe(200);
    expect((await change(team, team.admin, team.member.personId, 'member')).status).toBe(200);
    for (const [personId, role] of [[team.member.personId, 'owner'], [team.owner.personId, 'admin'], [team.admin.personId, 'owner']] as const) {
      const refused = await change(team, team.admin, personId, role);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('forbidden');
    }
    expect((await change(team, team.admin, team.admin.personId, 'member')).status).toBe(200);
    expect(await rolesIn(team.id, team.owner)).toEqual({ [team.owner.personId]: 'owner', [team.admin.personId]: 'member', [team.member.personId]: 'member' });
  });

  it('members change nothing, not even their own role (403)', async () => {
    const team = await crew('Members change');
    for (const [personId, role] of [[team.member.personId, 'admin'], [team.admin.personId, 'member']] as const) {
      const res = await change(team, team.member, personId, role);
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
  });

  it('keeps the last owner (409 last_owner), and setting the role a member has changes nothing', async () => {
    const team = await crew('Last owner');
    const refused = await change(team, team.owner, team.owner.personId, 'admin');
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('last_owner');
    expect((await change(team, team.owner, team.owner.personId, 'owner')).body).toEqual({ ok: true });
    expect((await rolesIn(team.id, team.owner))[team.owner.personId]).toBe('owner');
  });

  it('answers 404 for a person not in the team, a stranger, and another team\'s person; 400 for an unknown role or a personal organisation', async () => {
    const team = await crew('Change refusals');
    for (const personId of [team.loner.personId, 'usr_nosuchperson000', "usr_x' OR 1=1"]) {
      const res = await change(team, team.owner, personId, 'admin');
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    for (const who of [team.outsider, team.loner]) expect((await change(team, who, team.member.personId, 'admin')).status).toBe(404);
    const role = await change(team, team.owner, team.member.personId, 'superuser');
    expect(role.status).toBe(400);
    expect(role.body.error).toBe('invalid_request');
    const personal = await call(platform, 'patch', `/cloud/v1/organisations/${team.loner.personalOrganisationId}/members/${team.loner.personId}`, { ...as(team.loner), body: { role: 'admin' } });
    expect(personal.status).toBe(400);
    expect(personal.body.error).toBe('personal_organisation');
  });
});

describe('removing members and leaving', () => {
  const remove = (team: Crew, by: SignedIn, personId: string) => call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${personId}`, as(by));

  it('owners remove anyone, owners too; admins admins and members; members only themselves', async () => {
    const team = await crew('Removals');
    const second = await emailSignIn(platform, `second.owner${counter}@example.test`);
    await joinTeam(platform, team.owner, team.id, second, `second.owner${counter}@example.test`, 'owner');
    const extra = await emailSignIn(platform, `extra${counter}@example.test`);
    await joinTeam(platform, team.owner, team.id, extra, `extra${counter}@example.test`);

    const memberRefused = await remove(team, team.member, extra.personId);
    expect(memberRefused.status).toBe(403);
    expect(memberRefused.body.error).toBe('forbidden');
    const adminRefused = await remove(team, team.admin, second.personId);
    expect(adminRefused.status).toBe(403);
    expect(adminRefused.body.error).toBe('forbidden');

    expect((await remove(team, team.admin, extra.personId)).status).toBe(204);
    expect((await remove(team, team.owner, second.personId)).status).toBe(204);
    expect((await remove(team, team.member, team.member.personId)).status).toBe(204);
    expect((await remove(team, team.owner, team.admin.personId)).status).toBe(204);
    expect(await rolesIn(team.id, team.owner)).toEqual({ [team.owner.personId]: 'owner' });
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'person.left')).toBe(true);
  });

  it('an admin removes another admin and leaves', async () => {
    const team = await crew('Admin removes');
    await call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.member.personId}`, { ...as(team.owner), body: { role: 'admin' } });
    expect((await remove(team, team.admin, team.member.personId)).status).toBe(204);
    expect((await remove(team, team.admin, team.admin.personId)).status).toBe(204);
  });

  it('keeps the last owner: the only owner cannot leave (409 last_owner), an owner can once another exists', async () => {
    const team = await crew('Leaving owner');
    const refused = await remove(team, team.owner, team.owner.personId);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('last_owner');
    await call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.admin.personId}`, { ...as(team.owner), body: { role: 'owner' } });
    expect((await remove(team, team.owner, team.owner.personId)).status).toBe(204);
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.owner, team.id))).status).toBe(404);
  });

  it('cuts the removed person off at once: sessions lose the team, their devices and join keys stop, their invitations and project roles go', async () => {
    const team = await crew('Cut off');
    await call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.admin.personId}`, { ...as(team.owner), body: { role: 'admin' } });
    const device = await enrolDevice(platform, { organisationId: team.id, personId: team.admin.personId });
    expect((await call(platform, 'get', '/policy/v1', { headers: await deviceHeaders(device, 'GET', '/policy/v1') })).status).toBe(200);
    const key = await call(platform, 'post', '/platform/v1/join-keys', { ...as(team.admin, team.id), body: { description: 'rack' } });
    expect(key.status).toBe(201);
    const invitation = await inviteTo(platform, team.admin, team.id, `invited.by.admin${counter}@example.test`);
    const project = await call(platform, 'post', '/platform/v1/projects', { ...as(team.admin, team.id), body: { name: 'Admin project' } });
    expect(project.status).toBe(201);

    expect((await remove(team, team.owner, team.admin.personId)).status).toBe(204);

    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.admin, team.id))).status).toBe(404);
    expect((await call(platform, 'get', `/cloud/v1/organisations/${team.id}/members`, as(team.admin))).status).toBe(404);
    expect((await call(platform, 'get', '/policy/v1', { headers: await deviceHeaders(device, 'GET', '/policy/v1') })).status).toBe(401);
    expect((await platform.dataSource.getRepository(JoinKeyEntity).findOneByOrFail({ id: key.body.joinKey.id })).revokedAt).not.toBeNull();
    expect((await call(platform, 'get', `/cloud/v1/invitations/${invitation}`)).status).toBe(404);
    expect(await platform.dataSource.getRepository(ProjectMemberEntity).countBy({ projectId: project.body.id })).toBe(0);
    // Their personal organisation is theirs still.
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.admin))).status).toBe(200);
  });

  it('answers 404 for someone not in the team, to strangers, and 400 for a personal organisation', async () => {
    const team = await crew('Remove refusals');
    expect((await remove(team, team.owner, team.loner.personId)).status).toBe(404);
    expect((await remove(team, team.owner, 'usr_nosuchperson000')).status).toBe(404);
    for (const who of [team.outsider, team.loner]) {
      const res = await remove(team, who, team.member.personId);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const personal = await call(platform, 'delete', `/cloud/v1/organisations/${team.loner.personalOrganisationId}/members/${team.loner.personId}`, as(team.loner));
    expect(personal.status).toBe(400);
    expect(personal.body.error).toBe('personal_organisation');
  });
});

describe('invitations', () => {
  const invite = (team: Crew, by: SignedIn, body: object) => call(platform, 'post', `/cloud/v1/organisations/${team.id}/invitations`, { ...as(by), body });

  it('are made by owners (spec 2.8): the link is answered once, mailed, and works seven days; the token is stored only as a hash', async () => {
    const team = await crew('Inviting');
    const res = await invite(team, team.owner, { email: `New.Person${counter}@Example.TEST` });
    expect(res.status).toBe(201);
    const email = `new.person${counter}@example.test`;
    expect(res.body).toEqual({
      id: expect.stringMatching(/^inv_/),
      email,
      role: 'member',
      invitedBy: team.owner.personId,
      invitedByName: team.emails.owner,
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
      link: expect.stringMatching(/^https:\/\/platform\.test\/cloud\/v1\/invitations\/platform_iv_[A-Za-z0-9_-]{43}$/),
    });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Date.parse(res.body.expiresAt) - Date.parse(res.body.createdAt)).toBe(7 * 86_400_000);
    const mail = await lastMailTo(platform.outbox, email);
    expect(mail.subject).toBe(`${team.emails.owner} invited you to Inviting ${counter} on Platform`);
    expect(mail.text).toContain(res.body.link);
    expect(mail.text).toContain('as a member');
    const token = tokenOf(res.body.link);
    const stored = await platform.dataSource.getRepository(InvitationEntity).findOneByOrFail({ id: res.body.id });
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    // The list never shows the link again.
    const listed = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.owner));
    expect(listed.body).toEqual({ invitations: [{ ...res.body, link: undefined }].map(({ link: _link, ...rest }) => rest), nextCursor: null });
  });

  it('are made by admins as admin or member; only an owner invites an owner; members invite nobody (403)', async () => {
    const team = await crew('Who invites');
    expect((await invite(team, team.admin, { email: `a${counter}@example.test`, role: 'admin' })).status).toBe(201);
    expect((await invite(team, team.owner, { email: `o${counter}@example.test`, role: 'owner' })).status).toBe(201);
    for (const [by, role] of [[team.admin, 'owner'], [team.member, 'member']] as const) {
      const res = await invite(team, by, { email: `x${counter}@example.test`, role });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
  });

  it('refuse an address a member signs in with, in any case (409 already_member)', async () => {
    const team = await crew('Already');
    const res = await invite(team, team.owner, { email: team.emails.member.toUpperCase() });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('already_member');
  });

  it('replace the open invitation of the same address: the earlier link stops working', async () => {
    const team = await crew('Again');
    const email = `again${counter}@example.test`;
    const first = await inviteTo(platform, team.owner, team.id, email);
    const second = await inviteTo(platform, team.admin, team.id, email.toUpperCase(), 'admin');
    expect((await call(platform, 'get', `/cloud/v1/invitations/${first}`)).status).toBe(404);
    expect((await call(platform, 'get', `/cloud/v1/invitations/${second}`)).body).toMatchObject({ email, role: 'admin' });
    const listed = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.owner));
    expect(listed.body.invitations.filter((i: { email: string }) => i.email === email)).toHaveLength(1);
  });

  it('refuse a personal organisation (400 personal_organisation), a bad address (400), strangers (404)', async () => {
    const team = await crew('Invite refusals');
    const personal = await call(platform, 'post', `/cloud/v1/organisations/${team.loner.personalOrganisationId}/invitations`, { ...as(team.loner), body: { email: 'friend@example.test' } });
    expect(personal.status).toBe(400);
    expect(personal.body.error).toBe('personal_organisation');
    for (const body of [{ email: 'not an address' }, {}, { email: 'a@example.test', role: 'superuser' }, { email: 'a@example.test', extra: 1 }]) {
      const res = await invite(team, team.owner, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    for (const who of [team.outsider, team.loner]) {
      const res = await invite(team, who, { email: `x${counter}@example.test` });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it('are listed to owners and admins only (403 for members, 404 for strangers), a page at a time', async () => {
    const team = await crew('Listing');
    await inviteTo(platform, team.owner, team.id, `l1.${counter}@example.test`);
    platform.clock.advance(1000);
    await inviteTo(platform, team.owner, team.id, `l2.${counter}@example.test`);
    const page = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations?limit=1`, as(team.admin));
    expect(page.body.invitations).toHaveLength(1);
    const rest = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations?limit=1&cursor=${page.body.nextCursor}`, as(team.admin));
    expect(rest.body.invitations.map((i: { email: string }) => i.email)).toEqual([`l2.${counter}@example.test`]);
    expect(rest.body.nextCursor).toBeNull();
    const refused = await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.member));
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    for (const who of [team.outsider, team.loner]) expect((await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(who))).status).toBe(404);
    expect((await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations?cursor=%%%`, as(team.owner))).status).toBe(400);
  });

  it('are withdrawn by owners and admins: the link stops at once; only an owner withdraws an owner\'s invitation; twice is 404', async () => {
    const team = await crew('Withdraw');
    const listedIds = async () => (await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.owner))).body.invitations.map((i: { id: string; role: string }) => [i.id, i.role]);
    const ownerToken = await inviteTo(platform, team.owner, team.id, `future.owner${counter}@example.test`, 'owner');
    const memberToken = await inviteTo(platform, team.owner, team.id, `future.member${counter}@example.test`);
    const ids = Object.fromEntries((await listedIds()).map(([id, role]: [string, string]) => [role, id]));
    const withdraw = (by: SignedIn, id: string) => call(platform, 'delete', `/cloud/v1/organisations/${team.id}/invitations/${id}`, as(by));
    expect((await withdraw(team.member, ids.member)).status).toBe(403);
    // A member, who cannot list the invitations, learns nothing of which ids exist: the same 403.
    const unknown = await withdraw(team.member, 'inv_nosuchthing000');
    expect([unknown.status, unknown.body.error]).toEqual([403, 'forbidden']);
    expect((await withdraw(team.admin, ids.owner)).status).toBe(403);
    for (const who of [team.outsider, team.loner]) expect((await withdraw(who, ids.member)).status).toBe(404);
    expect((await withdraw(team.admin, ids.member)).status).toBe(204);
    expect((await call(platform, 'get', `/cloud/v1/invitations/${memberToken}`)).status).toBe(404);
    expect((await withdraw(team.owner, ids.owner)).status).toBe(204);
    expect((await call(platform, 'get', `/cloud/v1/invitations/${ownerToken}`)).status).toBe(404);
    const twice = await withdraw(team.owner, ids.owner);
    expect(twice.status).toBe(404);
    expect(twice.body.error).toBe('not_found');
    expect((await withdraw(team.owner, 'inv_nosuchthing000')).status).toBe(404);
    expect(await listedIds()).toEqual([]);
  });

  it('cannot be withdrawn in another team with its id (404)', async () => {
    const team = await crew('Withdraw elsewhere');
    await inviteTo(platform, team.owner, team.id, `target${counter}@example.test`);
    const [invitation] = (await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.owner))).body.invitations;
    const elsewhere = (await call(platform, 'get', '/cloud/v1/me', as(team.outsider))).body.organisations.find((o: { kind: string }) => o.kind === 'team').id;
    expect((await call(platform, 'delete', `/cloud/v1/organisations/${elsewhere}/invitations/${invitation.id}`, as(team.outsider))).status).toBe(404);
  });
});

describe('the public preview (spec 2.9)', () => {
  it('says no more than organisation, invitedBy, email, role and expiresAt, to anyone with the link', async () => {
    const team = await crew('Preview');
    const token = await inviteTo(platform, team.admin, team.id, `preview${counter}@example.test`, 'admin');
    const res = await call(platform, 'get', `/cloud/v1/invitations/${token}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ organisation: `Preview ${counter}`, invitedBy: team.emails.admin, email: `preview${counter}@example.test`, role: 'admin', expiresAt: expect.any(String) });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it.each([
    ['an unknown token', `platform_iv_${'A'.repeat(43)}`],
    ['a malformed token', 'not-a-token'],
    ['a token of another kind', `platform_lt_${'A'.repeat(43)}`],
  ])('answers 404 for %s', async (_case, token) => {
    const res = await call(platform, 'get', `/cloud/v1/invitations/${token}`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it('stops when the inviter may no longer invite with its role: demoted or removed', async () => {
    const team = await crew('Inviter');
    const token = await inviteTo(platform, team.admin, team.id, `by.admin${counter}@example.test`);
    await call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.admin.personId}`, { ...as(team.owner), body: { role: 'member' } });
    expect((await call(platform, 'get', `/cloud/v1/invitations/${token}`)).status).toBe(404);
    await call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.admin.personId}`, { ...as(team.owner), body: { role: 'admin' } });
    expect((await call(platform, 'get', `/cloud/v1/invitations/${token}`)).status).toBe(200);
  });

  it('never writes the token to the logs', async () => {
    const team = await crew('Logs');
    const token = await inviteTo(platform, team.owner, team.id, `logs${counter}@example.test`);
    await call(platform, 'get', `/cloud/v1/invitations/${token}`);
    expect(JSON.stringify(platform.logs)).not.toContain(token.slice('platform_iv_'.length));
  });
});

describe('accepting', () => {
  const accept = (person: SignedIn, token: string) => call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, as(person));

  it('makes a person whose sign-in vouches for the address a member with the role, once; the summary is answered', async () => {
    const team = await crew('Accept');
    const email = `Joiner${counter}@Example.test`;
    const token = await inviteTo(platform, team.owner, team.id, email, 'admin');
    const joiner = await emailSignIn(platform, email.toLowerCase());
    const res = await accept(joiner, token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: team.id, name: `Accept ${counter}`, kind: 'team', plan: 'teams', role: 'admin' });
    expect((await call(platform, 'get', '/cloud/v1/me', as(joiner))).body.organisations.map((o: { id: string }) => o.id)).toContain(team.id);
    const again = await accept(joiner, token);
    expect(again.status).toBe(404);
    expect(again.body.error).toBe('not_found');
    expect((await call(platform, 'get', `/cloud/v1/invitations/${token}`)).status).toBe(404);
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'invitation.accepted')).toBe(true);
  });

  it('refuses a person whose sign-in methods do not vouch for the address (403 email_mismatch), an unverified address too', async () => {
    const team = await crew('Mismatch');
    const email = `intended${counter}@example.test`;
    const token = await inviteTo(platform, team.owner, team.id, email);
    const res = await accept(team.loner, token);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('email_mismatch');
    // A provider's unverified word on the address is not enough.
    await platform.dataSource.getRepository(SignInMethodEntity).insert({
      id: newId('sim'),
      personId: team.loner.personId,
      provider: 'github',
      subject: `gh-${counter}`,
      email,
      emailVerified: false,
      createdAt: platform.clock.now(),
      lastUsedAt: platform.clock.now(),
    });
    expect((await accept(team.loner, token)).body.error).toBe('email_mismatch');
    // It stays open for the right person.
    expect((await accept(await emailSignIn(platform, email), token)).status).toBe(200);
  });

  it('refuses someone already a member (409 already_member), and leaves the invitation open', async () => {
    const team = await crew('Twice');
    const email = `second.address${counter}@example.test`;
    const token = await inviteTo(platform, team.owner, team.id, email);
    // The member adds the invited address to their account.
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', as(team.member));
    await emailSignIn(platform, email, { link: ticket.body.ticket, session: team.member.access_token });
    const res = await accept(team.member, token);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('already_member');
    expect((await call(platform, 'get', `/cloud/v1/invitations/${token}`)).status).toBe(200);
  });

  it('lets a removed person join again through a new invitation', async () => {
    const team = await crew('Return');
    await call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.member.personId}`, as(team.owner));
    const token = await inviteTo(platform, team.owner, team.id, team.emails.member, 'admin');
    expect((await accept(team.member, token)).body.role).toBe('admin');
    expect((await call(platform, 'get', '/platform/v1/organisation', as(team.member, team.id))).body.role).toBe('admin');
  });

  it('needs a session (401); an unknown token is 404', async () => {
    const team = await crew('Session');
    const token = await inviteTo(platform, team.owner, team.id, `anyone${counter}@example.test`);
    expect((await call(platform, 'post', `/cloud/v1/invitations/${token}/accept`)).status).toBe(401);
    expect((await accept(team.loner, `platform_iv_${'B'.repeat(43)}`)).status).toBe(404);
  });

  it('is undone when adding the member fails: the invitation stays open and works afterwards', async () => {
    const team = await crew('Undone');
    const email = `undone${counter}@example.test`;
    const token = await inviteTo(platform, team.owner, team.id, email);
    const joiner = await emailSignIn(platform, email);
    const failing = jest.spyOn(OrganisationStore.prototype, 'insertMembership').mockRejectedValueOnce(new Error('the disk is full'));
    try {
      expect((await accept(joiner, token)).status).toBe(500);
    } finally {
      failing.mockRestore();
    }
    const stored = await platform.dataSource.getRepository(InvitationEntity).findOneByOrFail({ email });
    expect(stored).toMatchObject({ usedAt: null, usedBy: null, openEmail: email });
    expect(await platform.dataSource.getRepository(MembershipEntity).countBy({ organisationId: team.id, personId: joiner.personId })).toBe(0);
    expect((await accept(joiner, token)).status).toBe(200);
  });
});

describe('expiry', () => {
  it('ends an invitation after CLOUD_INVITATION_TTL_SECONDS: preview and acceptance 404, no longer listed', async () => {
    const short = await startCloud({ env: { CLOUD_INVITATION_TTL_SECONDS: '3600', AUTH_ACCESS_TOKEN_TTL_SECONDS: '86400' } });
    try {
      const owner = await emailSignIn(short, 'owner.expiry@example.test');
      const team = await call(short, 'post', '/cloud/v1/organisations', { ...as(owner), body: { name: 'Short' } });
      const invited = await call(short, 'post', `/cloud/v1/organisations/${team.body.id}/invitations`, { ...as(owner), body: { email: 'late@example.test' } });
      expect(Date.parse(invited.body.expiresAt) - Date.parse(invited.body.createdAt)).toBe(3_600_000);
      const late = await emailSignIn(short, 'late@example.test');
      short.clock.advance(3_600_000);
      const token = tokenOf(invited.body.link);
      expect((await call(short, 'get', `/cloud/v1/invitations/${token}`)).status).toBe(404);
      expect((await call(short, 'post', `/cloud/v1/invitations/${token}/accept`, as(late))).status).toBe(404);
      expect((await call(short, 'get', `/cloud/v1/organisations/${team.body.id}/invitations`, as(owner))).body.invitations).toEqual([]);
      // A new invitation of the address replaces the expired one.
      expect((await call(short, 'post', `/cloud/v1/organisations/${team.body.id}/invitations`, { ...as(owner), body: { email: 'late@example.test' } })).status).toBe(201);
    } finally {
      await short.close();
    }
  });
});

describe('the link', () => {
  it('is the console\'s page when CLOUD_INVITATION_URL is set', async () => {
    const consoled = await startCloud({ env: { CLOUD_INVITATION_URL: 'https://console.platform.test/join#{token}' } });
    try {
      const owner = await emailSignIn(consoled, 'owner.link@example.test');
      const team = await call(consoled, 'post', '/cloud/v1/organisations', { ...as(owner), body: { name: 'Linked' } });
      const invited = await call(consoled, 'post', `/cloud/v1/organisations/${team.body.id}/invitations`, { ...as(owner), body: { email: 'linked@example.test' } });
      expect(invited.body.link).toMatch(/^https:\/\/console\.platform\.test\/join#platform_iv_[A-Za-z0-9_-]{43}$/);
      expect((await lastMailTo(consoled.outbox, 'linked@example.test')).text).toContain(invited.body.link);
    } finally {
      await consoled.close();
    }
  });

  it('is not built from the request\'s host', async () => {
    const team = await crew('Host');
    const res = await call(platform, 'post', `/cloud/v1/organisations/${team.id}/invitations`, { ...as(team.owner), host: 'evil.example', body: { email: `host${counter}@example.test` } });
    expect(res.body.link.startsWith('https://platform.test/')).toBe(true);
    const mails = await outboxMails(platform.outbox);
    expect(mails.some((mail) => mail.text.includes('evil.example'))).toBe(false);
  });
});

describe('rate limits', () => {
  it('limit invitations per person per hour and per network address per minute, and previews per address (429 too_many_requests)', async () => {
    const limited = await startCloud({ env: { RATE_LIMITS_ENABLED: 'true', CLOUD_INVITATIONS_PER_HOUR: '2', AUTH_RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'loopback' } });
    try {
      const from = (address: string) => ({ 'X-Forwarded-For': address });
      const owner = await emailSignIn(limited, 'owner.limits@example.test');
      const second = await emailSignIn(limited, 'second.limits@example.test');
      const third = await emailSignIn(limited, 'third.limits@example.test');
      const team = await call(limited, 'post', '/cloud/v1/organisations', { ...as(owner), body: { name: 'Limited' } });
      for (const [person, email, address] of [[second, 'second.limits@example.test', '10.9.0.1'], [third, 'third.limits@example.test', '10.9.0.6']] as const) {
        const invited = await call(limited, 'post', `/cloud/v1/organisations/${team.body.id}/invitations`, { headers: { ...as(owner).headers, ...from(address) }, body: { email, role: 'admin' } });
        expect(invited.status).toBe(201);
        expect((await call(limited, 'post', `/cloud/v1/invitations/${tokenOf(invited.body.link)}/accept`, { headers: { ...as(person).headers, ...from('10.9.0.9') } })).status).toBe(200);
      }
      const invite = (by: SignedIn, n: number, address: string) =>
        call(limited, 'post', `/cloud/v1/organisations/${team.body.id}/invitations`, { headers: { ...as(by).headers, ...from(address) }, body: { email: `n${n}@example.test` } });
      // The owner has sent two invitations this hour: the most one person may (2).
      const overPerson = await invite(owner, 2, '10.9.0.3');
      expect(overPerson.status).toBe(429);
      expect(overPerson.body.error).toBe('too_many_requests');
      expect(overPerson.headers['retry-after']).toBeDefined();
      // Others may still invite, but no more than one address may send in a minute (3).
      const last = await invite(second, 3, '10.9.0.4');
      expect(last.status).toBe(201);
      expect((await invite(second, 4, '10.9.0.4')).status).toBe(201);
      expect((await invite(third, 5, '10.9.0.4')).status).toBe(201);
      const overAddress = await invite(third, 6, '10.9.0.4');
      expect(overAddress.status).toBe(429);
      expect(overAddress.body.error).toBe('too_many_requests');
      expect((await invite(third, 7, '10.9.0.7')).status).toBe(201);
      const token = tokenOf(last.body.link);
      for (let n = 0; n < 3; n++) expect((await call(limited, 'get', `/cloud/v1/invitations/${token}`, { headers: from('10.9.0.5') })).status).toBe(200);
      const refused = await call(limited, 'get', `/cloud/v1/invitations/${token}`, { headers: from('10.9.0.5') });
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_requests');
    } finally {
      await limited.close();
    }
  });
});

describe('on a self-hosted deployment', () => {
  it('the Cloud organisation operations do not exist (404)', async () => {
    const { startPlatform } = await import('../support/platform.js');
    const selfHosted = await startPlatform();
    try {
      for (const [method, path] of [['post', '/cloud/v1/organisations'], ['get', '/cloud/v1/invitations/x'], ['get', '/cloud/v1/organisations/org_x/members']] as const) {
        const res = await call(selfHosted, method, path, { body: method === 'post' ? { name: 'x' } : undefined });
        expect(res.status).toBe(404);
      }
    } finally {
      await selfHosted.close();
    }
  });
});

describe('stored rows', () => {
  it('keep used and withdrawn invitations out of the open set', async () => {
    const repository = platform.dataSource.getRepository(InvitationEntity);
    expect(await repository.countBy({ usedAt: Not(IsNull()), openEmail: Not(IsNull()) })).toBe(0);
    expect(await repository.countBy({ withdrawnAt: Not(IsNull()), openEmail: Not(IsNull()) })).toBe(0);
  });
});
