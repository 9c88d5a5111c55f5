import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runCliCapturing } from '../support/cli.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { deviceHeaders, enrolDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

// Leaving an organisation, the way an administrator of a self-hosted install does it:
// `platform person remove`. The person's provider still vouches for them, so the removal has to
// hold against their next token, and everything they vouched for (devices, join keys) must stop.
let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;

beforeAll(async () => {
  platform = await startPlatform();
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { name: 'Leavers', oidc: idp.settings() });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});
afterAll(async () => {
  await idp.close();
  await platform.close();
});

function cli(args: string[]) {
  return runCliCapturing(args, {
    env: { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: platform.database.url, OIDC_ALLOW_HTTP_LOOPBACK: 'true' },
    clock: platform.clock,
    dataSource: platform.dataSource,
  });
}

const asPerson = (token: string) => ({ Authorization: `Bearer ${token}` });

describe('platform person remove', () => {
  it("refuses the person's tokens, ends their devices and join keys, and holds when they sign in again", async () => {
    const token = await idp.mint({ sub: 'leaver', claims: { email: 'leaver@example.test', name: 'Lee Ver' } });
    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: asPerson(token) })).status).toBe(200);
    const personId = (await platform.dataSource.query('SELECT person_id FROM person_identities WHERE subject = ?', ['leaver']))[0].person_id as string;
    expect((await cli(['person', 'set-role', '--org', organisation.id, '--person', personId, '--role', 'admin'])).code).toBe(0);

    const created = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: asPerson(token), body: { description: 'rack 4' } });
    expect(created.status).toBe(201);
    const device = await enrolDevice(platform, { organisationId: organisation.id, personId });
    const deviceUrl = `http://${host}/platform/v1/organisation`;
    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', deviceUrl) })).status).toBe(200);

    const removed = await cli(['person', 'remove', '--org', organisation.id, '--person', 'leaver@example.test']);
    expect(removed).toMatchObject({ code: 0, stderr: '' });
    expect(removed.stdout).toContain('was removed');
    expect(removed.log.map((line) => line.audit)).toEqual([
      { action: 'person.removed', organisationId: organisation.id, actor: { kind: 'cli' }, target: { personId: expect.stringMatching(/^usr_/) } },
    ]);

    const again = await call(platform, 'get', '/platform/v1/organisation', { host, headers: asPerson(await idp.mint({ sub: 'leaver' })) });
    expect(again.status).toBe(401);
    expect(again.headers['www-authenticate']).toContain('error="invalid_token"');
    const memberships = await platform.dataSource.query('SELECT removed_at FROM memberships WHERE person_id = ?', [personId]);
    expect(memberships).toHaveLength(1);
    expect(memberships[0].removed_at).not.toBeNull();

    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', deviceUrl) })).status).toBe(401);
    const refresh = await call(platform, 'post', '/relay/v1/token', { host, body: { refresh_token: device.tokens.refresh_token } });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    const join = await call(platform, 'post', '/relay/v1/device/join', {
      host,
      body: { key: created.body.key, name: 'node', manifest: { schemaVersion: 1, nodeId: 'n1', name: 'node', kind: 'node', owner: { type: 'user' } } },
    });
    expect(join.status).toBe(400);
    expect(join.body.error).toBe('invalid_grant');
  });

  it('is undone by an administrator setting a role again', async () => {
    await idp.mint({ sub: 'returner' });
    const first = await call(platform, 'get', '/platform/v1/organisation', { host, headers: asPerson(await idp.mint({ sub: 'returner' })) });
    expect(first.status).toBe(200);
    const personId = (await platform.dataSource.query('SELECT person_id FROM person_identities WHERE subject = ?', ['returner']))[0].person_id as string;
    expect((await cli(['person', 'remove', '--org', organisation.id, '--person', personId])).code).toBe(0);
    expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: asPerson(await idp.mint({ sub: 'returner' })) })).status).toBe(401);
    expect((await cli(['person', 'set-role', '--org', organisation.id, '--person', personId, '--role', 'member'])).code).toBe(0);
    const back = await call(platform, 'get', '/platform/v1/organisation', { host, headers: asPerson(await idp.mint({ sub: 'returner' })) });
    expect(back.status).toBe(200);
    expect(back.body.role).toBe('member');
  });

  it('refuses to remove someone who is not a member', async () => {
    const outcome = await cli(['person', 'remove', '--org', organisation.id, '--person', 'nobody@example.test']);
    expect(outcome.code).toBe(3);
    expect(outcome.stdout).toBe('');
  });
});
