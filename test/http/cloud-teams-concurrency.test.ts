import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IsNull } from 'typeorm';
import { bearer, buildTeam, emailSignIn, inviteTo, joinTeam, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { call } from '../support/platform.js';
import { MembershipEntity } from '../../src/modules/organisation/entities.js';
import { InvitationEntity } from '../../src/modules/teams/entities.js';

/**
 * The rules of teams under truly concurrent requests (run on SQLite by `npm test` and on MariaDB,
 * where each request has its own connection, by `npm run test:services`): a team always keeps an
 * owner whatever mix of demotions, removals, departures and account deletions races, and an
 * invitation is used once.
 */

let platform: CloudPlatform;
let counter = 0;
const ROUNDS = 4;

beforeAll(async () => {
  platform = await startCloud({ env: { AUTH_ACCESS_TOKEN_TTL_SECONDS: '86400' } });
});
afterAll(() => platform.close());

const as = (person: SignedIn) => ({ headers: bearer(person.access_token) });

/** A team with two owners and a member. */
async function twoOwners(): Promise<{ id: string; a: SignedIn; b: SignedIn; m: SignedIn; emails: string[] }> {
  counter += 1;
  const emails = [`a${counter}@example.test`, `b${counter}@example.test`, `m${counter}@example.test`];
  const [a, b, m] = await Promise.all(emails.map((email) => emailSignIn(platform, email)));
  const team = await buildTeam(platform, a!, `Race ${counter}`);
  await joinTeam(platform, a!, team.id, b!, emails[1]!, 'owner');
  await joinTeam(platform, a!, team.id, m!, emails[2]!);
  return { id: team.id, a: a!, b: b!, m: m!, emails };
}

async function owners(teamId: string): Promise<string[]> {
  const rows = await platform.dataSource.getRepository(MembershipEntity).findBy({ organisationId: teamId, role: 'owner', removedAt: IsNull() });
  return rows.map((row) => row.personId);
}

const statuses = (...answers: { status: number }[]) => answers.map((answer) => answer.status).sort();

describe('a team keeps an owner under concurrent changes', () => {
  it('when two owners demote each other at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const [ab, ba] = await Promise.all([
        call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.b.personId}`, { ...as(team.a), body: { role: 'member' } }),
        call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.a.personId}`, { ...as(team.b), body: { role: 'member' } }),
      ]);
      // The second runs with the role the first left its caller: a member may not demote (403).
      expect(statuses(ab, ba)).toEqual([200, 403]);
      expect(await owners(team.id)).toHaveLength(1);
    }
  });

  it('when both owners leave at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const answers = await Promise.all([
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.a.personId}`, as(team.a)),
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.b.personId}`, as(team.b)),
      ]);
      expect(statuses(...answers)).toEqual([204, 409]);
      expect(answers.find((answer) => answer.status === 409)!.body.error).toBe('last_owner');
      expect(await owners(team.id)).toHaveLength(1);
    }
  });

  it('when each owner removes the other at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const answers = await Promise.all([
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.b.personId}`, as(team.a)),
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.a.personId}`, as(team.b)),
      ]);
      // The second finds its caller removed: not a member any more (404).
      expect(statuses(...answers)).toEqual([204, 404]);
      expect(await owners(team.id)).toHaveLength(1);
    }
  });

  it('when an owner deletes their account while the other owner leaves', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const [deletion, leaving] = await Promise.all([
        call(platform, 'delete', '/cloud/v1/me', { ...as(team.a), body: { confirm: team.emails[0] } }),
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/members/${team.b.personId}`, as(team.b)),
      ]);
      expect(statuses(deletion, leaving)).toEqual([204, 409]);
      if (deletion.status === 204) expect(leaving.body.error).toBe('last_owner');
      else expect(deletion.body).toMatchObject({ error: 'sole_owner', organisations: [team.id] });
      expect(await owners(team.id)).toHaveLength(1);
    }
  });

  it('when an owner deletes their account while the other owner demotes themselves', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const [deletion, demotion] = await Promise.all([
        call(platform, 'delete', '/cloud/v1/me', { ...as(team.a), body: { confirm: team.emails[0] } }),
        call(platform, 'patch', `/cloud/v1/organisations/${team.id}/members/${team.b.personId}`, { ...as(team.b), body: { role: 'admin' } }),
      ]);
      expect([deletion.status, demotion.status].filter((status) => status === 409)).toHaveLength(1);
      expect(await owners(team.id)).toHaveLength(1);
    }
  });
});

describe('an invitation is used once under concurrent requests', () => {
  it('when the invited person accepts from two sessions at once', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const email = `joiner${counter}@example.test`;
      const token = await inviteTo(platform, team.a, team.id, email);
      // Two sessions of one person (signed in one after the other: a new code replaces the last).
      const first = await emailSignIn(platform, email);
      const second = await emailSignIn(platform, email);
      const answers = await Promise.all([first, second].map((session) => call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, as(session))));
      expect(statuses(...answers)).toEqual([200, 404]);
      expect(await platform.dataSource.getRepository(MembershipEntity).countBy({ organisationId: team.id, personId: first.personId })).toBe(1);
    }
  });

  it('when it is accepted and withdrawn at once: one of them wins', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const email = `contested${counter}@example.test`;
      const token = await inviteTo(platform, team.a, team.id, email);
      const joiner = await emailSignIn(platform, email);
      const [invitation] = (await call(platform, 'get', `/cloud/v1/organisations/${team.id}/invitations`, as(team.a))).body.invitations;
      const [accepted, withdrawn] = await Promise.all([
        call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, as(joiner)),
        call(platform, 'delete', `/cloud/v1/organisations/${team.id}/invitations/${invitation.id}`, as(team.b)),
      ]);
      expect([accepted.status, withdrawn.status].sort()).toEqual(accepted.status === 200 ? [200, 404] : [204, 404]);
      const joined = await platform.dataSource.getRepository(MembershipEntity).countBy({ organisationId: team.id, personId: joiner.personId, removedAt: IsNull() });
      expect(joined).toBe(accepted.status === 200 ? 1 : 0);
    }
  });

  it('when two owners invite the same address at once: one invitation stays open', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const team = await twoOwners();
      const email = `twice${counter}@example.test`;
      const answers = await Promise.all([team.a, team.b].map((by) => call(platform, 'post', `/cloud/v1/organisations/${team.id}/invitations`, { ...as(by), body: { email } })));
      expect(statuses(...answers)).toEqual([201, 201]);
      expect(await platform.dataSource.getRepository(InvitationEntity).countBy({ organisationId: team.id, openEmail: email })).toBe(1);
    }
  });
});
