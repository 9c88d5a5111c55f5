import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DeviceEntity, JoinKeyEntity } from '../../src/modules/devices/entities.js';
import { MembershipEntity, OrganisationEntity, PersonEntity } from '../../src/modules/organisation/entities.js';
import { CloudSessionEntity, SignInMethodEntity } from '../../src/modules/signin/entities.js';
import { PolicyRevisionEntity } from '../../src/modules/policy/entities.js';
import { newId } from '../../src/util/ids.js';
import { bearer, createTeam, emailSignIn, startCloud, type CloudPlatform } from '../support/cloud.js';
import { deviceHeaders, enrolDevice } from '../support/devices.js';
import { call } from '../support/platform.js';

/** The signed-in person's account (spec 4.4, 2.5, 2.6): profile, sign-in methods, deletion. */

let platform: CloudPlatform;
let count = 0;
const address = (name = 'person') => `${name}${++count}@example.test`;

beforeAll(async () => {
  platform = await startCloud();
});
afterAll(() => platform.close());

const me = (token: string) => call(platform, 'get', '/cloud/v1/me', { headers: bearer(token) });
const linkTicket = async (token: string) => (await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(token) })).body.ticket as string;

/** A person whose only sign-in method brings no email address (a GitHub account without a verified one). */
async function personWithoutEmail() {
  const { personId, methodId } = await platform.services.signIn.accounts.resolvePerson('github', { subject: `gh-${++count}`, email: undefined, emailVerified: false, name: 'No Mail' });
  const tokens = await platform.dataSource.transaction((manager) =>
    platform.services.sessions.start(manager, { id: newId('ses'), personId, client: 'console', signInMethodId: methodId }),
  );
  return { personId, ...tokens };
}

describe('GET /cloud/v1/me', () => {
  it('answers the person with their organisations (personal first, then teams by name) and sign-in methods', async () => {
    const ada = await emailSignIn(platform, address('ada'));
    const other = await emailSignIn(platform, address('other'));
    const zeta = await createTeam(platform, 'Zeta works', [[ada.personId, 'member'], [other.personId, 'owner']]);
    const alpha = await createTeam(platform, 'alpha labs', [[ada.personId, 'admin']]);
    const beta = await createTeam(platform, 'Beta', [[ada.personId, 'owner']]);
    const gone = await createTeam(platform, 'Aardvarks', [[ada.personId, 'member']]);
    await platform.services.organisations.removeMember(gone.id, ada.personId);
    const res = await me(ada.access_token);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.organisations).toEqual([
      { id: ada.personalOrganisationId, name: expect.any(String), kind: 'personal', plan: 'free', role: 'owner' },
      { id: alpha.id, name: 'alpha labs', kind: 'team', plan: 'teams', role: 'admin' },
      { id: beta.id, name: 'Beta', kind: 'team', plan: 'teams', role: 'owner' },
      { id: zeta.id, name: 'Zeta works', kind: 'team', plan: 'teams', role: 'member' },
    ]);
    expect(res.body.signInMethods).toEqual([
      { id: expect.stringMatching(/^sim_/), provider: 'email', email: expect.any(String), emailVerified: true, createdAt: expect.any(String), lastUsedAt: expect.any(String) },
    ]);
  });

  it('answers email null for a person no method vouches an address for', async () => {
    const person = await personWithoutEmail();
    const res = await me(person.access_token);
    expect(res.body).toMatchObject({ name: 'No Mail', email: null, signInMethods: [{ provider: 'github', email: null, emailVerified: false }] });
  });

  it('needs a Cloud session: 401 unauthorized without one, or with a refresh token', async () => {
    const ada = await emailSignIn(platform, address());
    const none = await call(platform, 'get', '/cloud/v1/me');
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('unauthorized');
    expect((await call(platform, 'get', '/cloud/v1/me', { headers: bearer(ada.refresh_token) })).status).toBe(401);
    expect((await call(platform, 'get', '/cloud/v1/me', { headers: { Authorization: `DPoP ${ada.access_token}` } })).status).toBe(401);
    for (const [method, path] of [['post', '/cloud/v1/me/sign-in-methods/link'], ['delete', '/cloud/v1/me/sign-in-methods/sim_x'], ['delete', '/cloud/v1/me']] as const) {
      const res = await call(platform, method, path, method === 'delete' && path === '/cloud/v1/me' ? { body: { confirm: 'delete' } } : {});
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
  });
});

describe('PATCH /cloud/v1/me', () => {
  it('renames the person (1 to 100 characters, counted as characters)', async () => {
    const ada = await emailSignIn(platform, address());
    const res = await call(platform, 'patch', '/cloud/v1/me', { headers: bearer(ada.access_token), body: { name: '  Ada Lovelace ' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect((await me(ada.access_token)).body.name).toBe('Ada Lovelace');
    const emoji = '🦊'.repeat(100);
    expect((await call(platform, 'patch', '/cloud/v1/me', { headers: bearer(ada.access_token), body: { name: emoji } })).status).toBe(200);
    expect((await me(ada.access_token)).body.name).toBe(emoji);
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'person.renamed')).toBe(true);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '' }],
    ['only spaces', { name: '    ' }],
    ['101 characters', { name: 'x'.repeat(101) }],
    ['a name that is not a string', { name: 42 }],
    ['another field', { name: 'Ada', email: 'x@example.test' }],
  ])('refuses %s with 400 invalid_request', async (_case, body) => {
    const ada = await emailSignIn(platform, address());
    const res = await call(platform, 'patch', '/cloud/v1/me', { headers: bearer(ada.access_token), body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect((await call(platform, 'patch', '/cloud/v1/me', { body: { name: 'x' } })).status).toBe(401);
  });
});

describe('sign-in methods', () => {
  it('refuses to remove the only one: 409 last_sign_in_method', async () => {
    const ada = await emailSignIn(platform, address());
    const [method] = (await me(ada.access_token)).body.signInMethods;
    const res = await call(platform, 'delete', `/cloud/v1/me/sign-in-methods/${method.id}`, { headers: bearer(ada.access_token) });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('last_sign_in_method');
  });

  it('answers 404 for a method that is not the caller\'s, or does not exist', async () => {
    const ada = await emailSignIn(platform, address());
    const bob = await emailSignIn(platform, address());
    const [bobs] = (await me(bob.access_token)).body.signInMethods;
    for (const id of [bobs.id, 'sim_nope', 'x'.repeat(100)]) {
      const res = await call(platform, 'delete', `/cloud/v1/me/sign-in-methods/${id}`, { headers: bearer(ada.access_token) });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    expect((await me(bob.access_token)).body.signInMethods).toHaveLength(1);
  });

  it('removes one of two; the sessions it signed in end, the caller\'s own stays, and the account\'s address follows the methods left', async () => {
    const first = address('first');
    const second = address('second');
    const viaFirst = await emailSignIn(platform, first);
    platform.clock.advance(1000);
    await emailSignIn(platform, second, { link: await linkTicket(viaFirst.access_token), session: viaFirst.access_token });
    const viaSecond = await emailSignIn(platform, second);
    const anotherViaFirst = await emailSignIn(platform, first);
    expect(viaSecond.personId).toBe(viaFirst.personId);
    const methods = (await me(viaFirst.access_token)).body.signInMethods as { id: string; email: string }[];
    const firstMethod = methods.find((method) => method.email === first)!;
    const res = await call(platform, 'delete', `/cloud/v1/me/sign-in-methods/${firstMethod.id}`, { headers: bearer(viaFirst.access_token) });
    expect(res.status).toBe(204);
    expect((await me(viaFirst.access_token)).status).toBe(200);
    expect((await me(anotherViaFirst.access_token)).status).toBe(401);
    const after = await me(viaSecond.access_token);
    expect(after.body.signInMethods.map((method: { email: string }) => method.email)).toEqual([second]);
    expect(after.body.email).toBe(second);
    // Signing in with the removed address is a new person now.
    expect((await emailSignIn(platform, first)).personId).not.toBe(viaFirst.personId);
  });
});

describe('DELETE /cloud/v1/me', () => {
  it('refuses a confirmation that does not match: 400 confirm', async () => {
    const ada = await emailSignIn(platform, address());
    for (const confirm of ['delete', 'someone@example.test', '']) {
      const res = await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(ada.access_token), body: { confirm } });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('confirm');
    }
    expect((await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(ada.access_token), body: {} })).body.error).toBe('invalid_request');
    expect((await me(ada.access_token)).status).toBe(200);
  });

  it('takes the word delete when the account has no email address', async () => {
    const person = await personWithoutEmail();
    expect((await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(person.access_token), body: { confirm: 'someone@example.test' } })).body.error).toBe('confirm');
    expect((await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(person.access_token), body: { confirm: 'DELETE' } })).status).toBe(204);
    expect(await platform.dataSource.getRepository(PersonEntity).countBy({ id: person.personId })).toBe(0);
  });

  it('refuses the only owner of teams that have other people: 409 sole_owner listing them', async () => {
    const owner = await emailSignIn(platform, address('owner'));
    const member = await emailSignIn(platform, address('member'));
    const coOwner = await emailSignIn(platform, address('coowner'));
    const alone = await createTeam(platform, 'Alone with a member', [[owner.personId, 'owner'], [member.personId, 'admin']]);
    const another = await createTeam(platform, 'Another', [[owner.personId, 'owner'], [member.personId, 'member']]);
    await createTeam(platform, 'Shared ownership', [[owner.personId, 'owner'], [coOwner.personId, 'owner']]);
    const email = (await me(owner.access_token)).body.email as string;
    const res = await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(owner.access_token), body: { confirm: email.toUpperCase() } });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('sole_owner');
    expect([...res.body.organisations].sort()).toEqual([alone.id, another.id].sort());
    expect((await me(owner.access_token)).status).toBe(200);
  });

  it('removes the person, their methods, sessions, devices and solo organisations with their contents; they leave shared teams', async () => {
    const leaver = await emailSignIn(platform, address('leaver'));
    const stayer = await emailSignIn(platform, address('stayer'));
    const solo = await createTeam(platform, 'Solo', [[leaver.personId, 'owner']]);
    const shared = await createTeam(platform, 'Shared', [[leaver.personId, 'admin'], [stayer.personId, 'owner']]);
    const soloProject = await platform.services.projects.create(solo.id, { name: 'Solo project' });
    const published = await call(platform, 'put', `/policy/v1/projects/${soloProject.id}`, { headers: bearer(leaver.access_token, solo.id), body: {} });
    expect(published.status).toBe(200);
    const device = await enrolDevice(platform, { organisationId: shared.id, personId: leaver.personId });
    const personalDevice = await enrolDevice(platform, { organisationId: leaver.personalOrganisationId, personId: leaver.personId });
    const key = await call(platform, 'post', '/platform/v1/join-keys', { headers: bearer(leaver.access_token, shared.id), body: { description: 'rack' } });
    expect(key.status).toBe(201);
    const deviceOrganisation = () =>
      call(platform, 'get', '/platform/v1/organisation', { headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
    expect((await deviceOrganisation()).status).toBe(200);

    const email = (await me(leaver.access_token)).body.email as string;
    const res = await call(platform, 'delete', '/cloud/v1/me', { headers: bearer(leaver.access_token), body: { confirm: email } });
    expect(res.status).toBe(204);

    const db = platform.dataSource;
    expect(await db.getRepository(PersonEntity).countBy({ id: leaver.personId })).toBe(0);
    expect(await db.getRepository(SignInMethodEntity).countBy({ personId: leaver.personId })).toBe(0);
    expect(await db.getRepository(CloudSessionEntity).countBy({ personId: leaver.personId })).toBe(0);
    expect(await db.getRepository(OrganisationEntity).countBy({ id: solo.id })).toBe(0);
    expect(await db.getRepository(OrganisationEntity).countBy({ id: leaver.personalOrganisationId })).toBe(0);
    expect(await db.getRepository(PolicyRevisionEntity).countBy({ organisationId: solo.id })).toBe(0);
    expect(await db.getRepository(OrganisationEntity).countBy({ id: shared.id })).toBe(1);
    expect(await db.getRepository(MembershipEntity).findBy({ organisationId: shared.id })).toEqual([expect.objectContaining({ personId: stayer.personId })]);
    expect(await db.getRepository(DeviceEntity).countBy({ id: device.device.id })).toBe(0);
    expect(await db.getRepository(DeviceEntity).countBy({ id: personalDevice.device.id })).toBe(0);
    expect((await db.getRepository(JoinKeyEntity).findOneByOrFail({ id: key.body.joinKey.id })).revokedAt).not.toBeNull();
    // At once: the session and the devices are refused on their next request.
    expect((await me(leaver.access_token)).status).toBe(401);
    expect((await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: leaver.refresh_token, client_id: 'console' } })).body.error).toBe('invalid_grant');
    expect((await deviceOrganisation()).status).toBe(401);
    expect((await call(platform, 'get', '/platform/v1/organisation', { headers: await deviceHeaders(personalDevice, 'GET', '/platform/v1/organisation') })).status).toBe(401);
    // The stayer's team goes on.
    expect((await call(platform, 'get', '/platform/v1/organisation', { headers: bearer(stayer.access_token, shared.id) })).status).toBe(200);
    expect(platform.logs.some((line) => (line.audit as { action?: string } | undefined)?.action === 'person.deleted')).toBe(true);
    // Signing in again with the address is a new person.
    expect((await emailSignIn(platform, email)).personId).not.toBe(leaver.personId);
  });
});
