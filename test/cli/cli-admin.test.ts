import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeviceView, JoinKeyListView } from '../../src/cli/devices.js';
import type { PersonView } from '../../src/cli/people.js';
import type { PolicyView, PublishView, RevisionView } from '../../src/cli/policy.js';
import type { ProjectMemberListView, ProjectView } from '../../src/cli/projects.js';
import { DeviceTokenEntity, JoinKeyEntity } from '../../src/modules/devices/entities.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PersonIdentityEntity } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { hashSecret } from '../../src/util/secrets.js';
import { auditsOf, runCliCapturing, type CliOutcome } from '../support/cli.js';
import { askForCode, deviceHeaders, enrolDevice, pollForTokens } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, hostOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { recordSecretsOf } from '../support/suite-record.js';

/**
 * The admin command line for operators (issue 14, item 6): everything an administrator does,
 * without a browser, against the database of a running platform (in process, sharing it), with
 * the API's rules and audit lines, and exit codes 0 ok, 2 usage, 3 not found, 4 refused,
 * 5 unavailable.
 */

const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let claimIdp: TestIdentityProvider;
/** Roles set here (no role claim). */
let acme: OrganisationRecord;
let acmeHost: string;
/** Roles from the provider's `platform_role` claim. */
let claimed: OrganisationRecord;
let claimedHost: string;
let scratch: string;

function cli(args: string[], env: Record<string, string> = {}): Promise<CliOutcome> {
  return runCliCapturing(args, {
    env: { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: platform.database.url, ...env },
    clock,
    dataSource: platform.dataSource,
  });
}

/** A refusal is one line on stderr naming the reason, nothing on stdout, no stack, no audit line. */
function expectRefusal(outcome: CliOutcome, code: number, message: string | RegExp): void {
  expect({ code: outcome.code, stdout: outcome.stdout }).toEqual({ code, stdout: '' });
  const lines = outcome.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(typeof message === 'string' ? new RegExp(`^platform: .*${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) : message);
  expect(auditsOf(outcome)).toEqual([]);
}

function json<T>(outcome: CliOutcome): T {
  expect(outcome.code).toBe(0);
  return JSON.parse(outcome.stdout) as T;
}

/** A person token of `provider` for `sub` with `email` (and the role claim when given). */
async function personToken(provider: TestIdentityProvider, sub: string, claims: Record<string, unknown>): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await provider.mint({ sub, claims: { name: sub, ...claims } })}` };
}

async function signIn(provider: TestIdentityProvider, host: string, sub: string, claims: Record<string, unknown>): Promise<string> {
  const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await personToken(provider, sub, claims) });
  expect(res.status).toBe(200);
  return (await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: provider.issuer, subject: sub })).personId;
}

beforeAll(async () => {
  platform = await startPlatform({ clock, env: { RATE_LIMITS_ENABLED: 'false' } });
  [idp, claimIdp] = await Promise.all([TestIdentityProvider.start({ clock }), TestIdentityProvider.start({ clock })]);
  acme = await createOrganisation(platform, { name: 'Acme', oidc: idp.settings() });
  acmeHost = await hostOf(platform, acme);
  claimed = await createOrganisation(platform, { name: 'Claimed', oidc: claimIdp.settings({ roleClaim: 'platform_role' }) });
  claimedHost = await hostOf(platform, claimed);
  scratch = mkdtempSync(join(tmpdir(), 'platform-cli-'));
});

afterAll(async () => {
  await Promise.all([idp?.close(), claimIdp?.close()]);
  await platform?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('platform bootstrap', () => {
  it('makes the first owner by address, who becomes that person at their first sign-in', async () => {
    const outcome = await cli(['bootstrap', '--org', acmeHost, '--email', 'Founder@Acme.example', '--name', 'Fay Founder']);
    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toBe('');
    expect(outcome.database).toEqual(platform.database.config.kind === 'sqlite' ? 'sqlite :memory:' : expect.stringMatching(/^mariadb 127\.0\.0\.1:3306\/platform_t_/));
    const [added] = auditsOf(outcome);
    expect(added).toEqual({ action: 'person.added', organisationId: acme.id, actor: { kind: 'cli' }, target: { personId: expect.stringMatching(/^usr_/), role: 'owner' } });
    const personId = (added!.target as { personId: string }).personId;
    expect(outcome.stdout).toBe(`Fay Founder <founder@acme.example> (${personId}) was added to ${acme.id} as owner; they become this person when they first sign in with the organisation's identity provider using that address.\n`);

    const before = json<PersonView[]>(await cli(['person', 'list', '--org', acme.id, '--json']));
    expect(before).toEqual([{ id: personId, name: 'Fay Founder', email: 'founder@acme.example', role: 'owner', signedIn: false, joinedAt: clock.now().toISOString() }]);

    // The first sign-in with that address is that person, an owner: they create a join key.
    const signedIn = await signIn(idp, acmeHost, 'fay-at-idp', { email: 'founder@acme.example' });
    expect(signedIn).toBe(personId);
    const key = await call(platform, 'post', '/platform/v1/join-keys', { host: acmeHost, headers: await personToken(idp, 'fay-at-idp', { email: 'founder@acme.example' }), body: { description: 'owner check' } });
    expect(key.status).toBe(201);
    const after = json<PersonView[]>(await cli(['person', 'list', '--org', acme.id, '--json']));
    expect(after).toEqual([expect.objectContaining({ id: personId, name: 'fay-at-idp', role: 'owner', signedIn: true })]);
    const table = await cli(['person', 'list', '--org', acme.id]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+EMAIL\s+ROLE\s+SIGNED IN\s+JOINED$/);
    expect(table.stdout).toMatch(new RegExp(`${personId}\\s+fay-at-idp\\s+founder@acme.example\\s+owner\\s+yes`));
  });

  it('refuses when the organisation has an owner, unless --force', async () => {
    expectRefusal(await cli(['bootstrap', '--org', acme.id, '--email', 'second@acme.example']), 4, `${acme.id} already has an owner (founder@acme.example)`);
    const forced = await cli(['bootstrap', '--org', acme.id, '--email', 'second@acme.example', '--force', '--json']);
    expect(json<{ role: string; existing: boolean }>(forced)).toMatchObject({ role: 'owner', existing: false });
  });

  it('makes a member who has that address owner rather than adding someone', async () => {
    const promotedIdp = await TestIdentityProvider.start({ clock });
    const org = await createOrganisation(platform, { name: 'Promoted', oidc: promotedIdp.settings() });
    await promotedIdp.close();
    await cli(['person', 'add', '--org', org.id, '--email', 'member@promoted.example']);
    const outcome = await cli(['bootstrap', '--org', org.id, '--email', 'member@promoted.example']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toMatch(/is owner of org_\w+ \(was member\)\.\n$/);
    expect(auditsOf(outcome)).toEqual([expect.objectContaining({ action: 'person.role_changed', target: expect.objectContaining({ role: 'owner', previous: 'member' }) })]);
  });

  it('refuses unknown organisations (3) and malformed input (2)', async () => {
    expectRefusal(await cli(['bootstrap', '--org', 'org_nowhere', '--email', 'a@b.example']), 3, 'no organisation org_nowhere');
    expectRefusal(await cli(['bootstrap', '--org', 'nowhere.example', '--email', 'a@b.example']), 3, 'no organisation is served at nowhere.example');
    expectRefusal(await cli(['bootstrap', '--org', acme.id, '--email', 'not-an-address']), 2, '--email must be an email address');
    const missing = await cli(['bootstrap', '--org', acme.id]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/required option '--email <email>' not specified/);
  });
});

describe('platform person add and the role claim', () => {
  it('adds a member by address; an address a member has already is refused', async () => {
    const outcome = await cli(['person', 'add', '--org', acme.id, '--email', 'newcomer@acme.example', '--role', 'admin', '--json']);
    const added = json<{ person: { id: string }; role: string; roleClaimWarning?: string }>(outcome);
    expect(added).toMatchObject({ role: 'admin', existing: false });
    expect(added.roleClaimWarning).toBeUndefined();
    expect(await platform.services.organisations.roleOf(acme.id, added.person.id)).toBe('admin');
    expectRefusal(await cli(['person', 'add', '--org', acme.id, '--email', 'NEWCOMER@acme.example']), 4, `${added.person.id} is already a member of ${acme.id}`);
  });

  it('never hands a person added by address to a sign-in whose address the provider calls unverified', async () => {
    const added = json<{ person: { id: string } }>(await cli(['person', 'add', '--org', acme.id, '--email', 'careful@acme.example', '--role', 'owner', '--json']));
    const other = await signIn(idp, acmeHost, 'impostor', { email: 'careful@acme.example', email_verified: false });
    expect(other).not.toBe(added.person.id);
    expect(await platform.services.organisations.roleOf(acme.id, other)).toBe('member');
  });

  it("warns that the provider's role claim wins at the next sign-in, and it does", async () => {
    const outcome = await cli(['person', 'add', '--org', claimed.id, '--email', 'boss@claimed.example', '--role', 'owner']);
    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toBe(
      `platform: warning: ${claimed.id} takes roles from the identity provider's claim "platform_role": the role set here holds until the person's next sign-in, when the provider's claim wins (a missing claim means member)\n`,
    );
    const personId = await signIn(claimIdp, claimedHost, 'boss', { email: 'boss@claimed.example', platform_role: 'admin' });
    expect(await platform.services.organisations.roleOf(claimed.id, personId)).toBe('admin');

    const setRole = await cli(['person', 'set-role', '--org', claimed.id, '--person', personId, '--role', 'owner']);
    expect(setRole.code).toBe(0);
    expect(setRole.stderr).toMatch(/^platform: warning: .*the provider's claim wins/);
    const noClaim = await cli(['person', 'set-role', '--org', acme.id, '--person', 'newcomer@acme.example', '--role', 'member']);
    expect(noClaim).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('platform device list and revoke', () => {
  it('lists devices with kind, status, approver and last use; a revoked device is refused by the API on its next request', async () => {
    const approver = json<{ person: { id: string } }>(await cli(['person', 'add', '--org', acme.id, '--email', 'approver@acme.example', '--name', 'Ada', '--role', 'admin', '--json'])).person.id;
    const enrolled = await enrolDevice(platform, { organisationId: acme.id, personId: approver, name: "Ada's laptop", alg: 'ES256' });
    const url = `http://${acmeHost}/platform/v1/organisation`;
    expect((await call(platform, 'get', '/platform/v1/organisation', { host: acmeHost, headers: await deviceHeaders(enrolled, 'GET', url) })).status).toBe(200);

    const listed = json<DeviceView[]>(await cli(['device', 'list', '--org', acme.id, '--json']));
    expect(listed.find((device) => device.id === enrolled.device.id)).toEqual({
      id: enrolled.device.id,
      name: "Ada's laptop",
      kind: 'workbench',
      workspaceId: enrolled.device.workspaceId,
      nodeId: null,
      status: 'active',
      approver: { id: approver, name: 'Ada' },
      enrolledVia: 'device_code',
      joinKeyId: null,
      createdAt: enrolled.device.createdAt.toISOString(),
      lastSeenAt: clock.now().toISOString(),
      keyBound: true,
    });
    const table = await cli(['device', 'list', '--org', acmeHost]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+KIND\s+STATUS\s+APPROVER\s+LAST SEEN$/);
    expect(table.stdout).toMatch(new RegExp(`${enrolled.device.id}\\s+Ada's laptop\\s+workbench\\s+active\\s+Ada \\(${approver}\\)`));

    const revoked = await cli(['device', 'revoke', enrolled.device.id, '--org', acme.id]);
    expect(revoked).toMatchObject({ code: 0, stderr: '', stdout: `Revoked workbench ${enrolled.device.id} "Ada's laptop": its tokens no longer work.\n` });
    expect(auditsOf(revoked)).toEqual([{ action: 'device.revoked', organisationId: acme.id, actor: { kind: 'cli' }, target: { deviceId: enrolled.device.id, kind: 'workbench' } }]);
    // The running platform (same database) refuses the device on its very next request.
    expect((await call(platform, 'get', '/platform/v1/organisation', { host: acmeHost, headers: await deviceHeaders(enrolled, 'GET', url) })).status).toBe(401);
    const refreshed = await call(platform, 'post', '/relay/v1/token', { host: acmeHost, body: { refresh_token: enrolled.tokens.refresh_token } });
    expect(refreshed.status).toBe(400);
    expect(json<DeviceView[]>(await cli(['device', 'list', '--org', acme.id, '--json'])).map((device) => device.id)).not.toContain(enrolled.device.id);

    const again = await cli(['device', 'revoke', enrolled.device.id, '--org', acme.id]);
    expect(again.stdout).toMatch(/was already revoked/);
  });

  it('shows a device whose refresh token expired unused as expired', async () => {
    const approver = (await platform.services.projects.findOrganisationMember(acme.id, 'approver@acme.example')).id;
    const enrolled = await enrolDevice(platform, { organisationId: acme.id, personId: approver, name: 'Dormant' });
    const status = async () => json<DeviceView[]>(await cli(['device', 'list', '--org', acme.id, '--json'])).find((device) => device.id === enrolled.device.id)?.status;
    expect(await status()).toBe('active');
    await platform.dataSource.getRepository(DeviceTokenEntity).update({ deviceId: enrolled.device.id }, { expiresAt: new Date(clock.now().getTime() - 1000) });
    expect(await status()).toBe('expired');
  });

  it("answers an unknown device, or another organisation's, as not found (3)", async () => {
    const elsewhere = await enrolDevice(platform, { organisationId: claimed.id, personId: (await platform.services.organisations.members(claimed.id))[0]!.personId });
    expectRefusal(await cli(['device', 'revoke', elsewhere.device.id, '--org', acme.id]), 3, `no device ${elsewhere.device.id} in ${acme.id}`);
    expectRefusal(await cli(['device', 'revoke', 'dev_nothing', '--org', acme.id]), 3, 'no device dev_nothing');
    expect((await cli(['device', 'revoke', '--org', acme.id])).code).toBe(2);
  });
});

describe('platform join-key', () => {
  it('creates a key for an owner or admin, printed once and stored hashed; a node joins with it; list and revoke', async () => {
    const created = await cli(['join-key', 'create', '--org', acme.id, '--as', 'approver@acme.example', '--description', 'rack 7', '--expires-in', '2h']);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    recordSecretsOf(key);
    expect(key).toMatch(/^platform_jk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/^platform: warning: join key jk_\w+ \(one node, until .*\) is shown this once/);
    const [audit] = auditsOf(created);
    const approver = (await platform.services.projects.findOrganisationMember(acme.id, 'approver@acme.example')).id;
    expect(audit).toEqual({
      action: 'join_key.created',
      organisationId: acme.id,
      actor: { kind: 'cli', personId: approver },
      target: { joinKeyId: expect.stringMatching(/^jk_/), reusable: false, expiresAt: new Date(clock.now().getTime() + 7200_000).toISOString() },
    });
    const joinKeyId = (audit!.target as { joinKeyId: string }).joinKeyId;
    const stored = await platform.dataSource.getRepository(JoinKeyEntity).findOneByOrFail({ id: joinKeyId });
    expect(stored.secretHash).toBe(hashSecret(key.split('_').slice(3).join('_')));
    expect(JSON.stringify(stored)).not.toContain(key.slice(-43));

    const joined = await call(platform, 'post', '/relay/v1/device/join', {
      host: acmeHost,
      body: { key, name: 'Rack node', manifest: { schemaVersion: 1, nodeId: 'rack-7', name: 'rack-7', kind: 'node', owner: { type: 'user' } } },
    });
    expect(joined.status).toBe(200);

    const listed = json<JoinKeyListView[]>(await cli(['join-key', 'list', '--org', acme.id, '--json']));
    expect(listed.find((entry) => entry.id === joinKeyId)).toMatchObject({ description: 'rack 7', state: 'used', useCount: 1, createdBy: { id: approver, name: 'Ada' } });
    expect(JSON.stringify(listed)).not.toContain('platform_jk_');
    expect((await cli(['join-key', 'list', '--org', acme.id])).stdout).toMatch(new RegExp(`${joinKeyId}\\s+used\\s+no\\s+1\\s+`));

    const reusable = await cli(['join-key', 'create', '--org', acme.id, '--as', approver, '--description', 'fleet', '--reusable', '--json']);
    const made = json<{ key: string; joinKey: JoinKeyListView }>(reusable);
    recordSecretsOf(made.key);
    const revoked = await cli(['join-key', 'revoke', made.joinKey.id, '--org', acme.id]);
    expect(revoked).toMatchObject({ code: 0, stdout: `Revoked join key ${made.joinKey.id}.\n` });
    expect(auditsOf(revoked)).toEqual([{ action: 'join_key.revoked', organisationId: acme.id, actor: { kind: 'cli' }, target: { joinKeyId: made.joinKey.id } }]);
    const refused = await call(platform, 'post', '/relay/v1/device/join', {
      host: acmeHost,
      body: { key: made.key, name: 'Late node', manifest: { schemaVersion: 1, nodeId: 'late', name: 'late', kind: 'node', owner: { type: 'user' } } },
    });
    expect(refused.status).toBe(400);
  });

  it('refuses a member (4), unknown keys (3) and bad lifetimes (2)', async () => {
    await cli(['person', 'add', '--org', acme.id, '--email', 'plain@acme.example']);
    expectRefusal(await cli(['join-key', 'create', '--org', acme.id, '--as', 'plain@acme.example', '--description', 'x']), 4, 'only owners and admins create join keys');
    expectRefusal(await cli(['join-key', 'create', '--org', acme.id, '--as', 'ghost@acme.example', '--description', 'x']), 3, 'no member of the organisation has the address ghost@acme.example');
    expectRefusal(await cli(['join-key', 'create', '--org', acme.id, '--as', 'approver@acme.example', '--description', 'x', '--expires-in', '91d']), 2, '--expires-in must be 300 seconds to 90 days');
    expectRefusal(await cli(['join-key', 'create', '--org', acme.id, '--as', 'approver@acme.example', '--description', 'x', '--expires-in', 'soon']), 2, '--expires-in must be a number of seconds');
    expectRefusal(await cli(['join-key', 'revoke', 'jk_nothing', '--org', acme.id]), 3, 'no join key jk_nothing');
  });
});

describe('platform device approve and deny', () => {
  const codeFor = (kind: 'workbench' | 'node' = 'workbench') => askForCode(platform, { host: acmeHost, body: { workspaceId: 'ws-cli', name: `CLI ${kind}`, kind } });
  const poll = (deviceCode: string) => pollForTokens(platform, deviceCode, { host: acmeHost });

  it('approves a pending code as a member; the device gets its tokens at its next poll', async () => {
    const code = await codeFor();
    const outcome = await cli(['device', 'approve', code.user_code.toLowerCase(), '--org', acme.id, '--as', 'plain@acme.example']);
    expect(outcome.code).toBe(0);
    expect(outcome.stdout).toBe(`Approved workbench "CLI workbench" (${code.user_code}) in ${acme.id} as plain@acme.example; it receives its tokens at its next poll.\n`);
    const plain = (await platform.services.projects.findOrganisationMember(acme.id, 'plain@acme.example')).id;
    expect(auditsOf(outcome)).toEqual([{ action: 'device.approved', organisationId: acme.id, actor: { kind: 'cli', personId: plain }, target: { kind: 'workbench', name: 'CLI workbench' } }]);
    const tokens = await poll(code.device_code);
    expect(tokens.status).toBe(200);
    recordSecretsOf(tokens.body);
    const listed = json<DeviceView[]>(await cli(['device', 'list', '--org', acme.id, '--json']));
    expect(listed.find((device) => device.id === tokens.body.device_id)).toMatchObject({ kind: 'workbench', approver: { id: plain }, enrolledVia: 'device_code' });
  });

  it('refuses a node to a member (4), as the approval page does, and lets an admin approve it', async () => {
    const code = await codeFor('node');
    expectRefusal(await cli(['device', 'approve', code.user_code, '--org', acme.id, '--as', 'plain@acme.example']), 4, 'only owners and admins may approve a node');
    expect((await cli(['device', 'approve', code.user_code, '--org', acme.id, '--as', 'approver@acme.example'])).code).toBe(0);
    expect((await poll(code.device_code)).status).toBe(200);
  });

  it('denies a code; the device is told access_denied; a decided or unknown code is not found (3)', async () => {
    const code = await codeFor();
    const denied = await cli(['device', 'deny', code.user_code, '--org', acme.id, '--as', 'approver@acme.example', '--json']);
    expect(json<{ decision: string }>(denied)).toMatchObject({ decision: 'denied', kind: 'workbench', userCode: code.user_code });
    expect(auditsOf(denied)).toEqual([expect.objectContaining({ action: 'device.denied' })]);
    const polled = await poll(code.device_code);
    expect(polled.body.error).toBe('access_denied');
    expectRefusal(await cli(['device', 'approve', code.user_code, '--org', acme.id, '--as', 'approver@acme.example']), 3, 'no pending request has this code');
    expectRefusal(await cli(['device', 'approve', 'BCDF-GHJK', '--org', acme.id, '--as', 'approver@acme.example']), 3, 'no pending request has this code');
  });

  it('lets the operator deny without --as, even a code someone opened; approving needs --as (2)', async () => {
    const code = await codeFor();
    const founder = await personToken(idp, 'fay-at-idp', { email: 'founder@acme.example' });
    expect((await call(platform, 'post', '/platform/v1/device-approvals/look-up', { host: acmeHost, headers: founder, body: { userCode: code.user_code } })).status).toBe(200);
    expect((await cli(['device', 'approve', code.user_code, '--org', acme.id])).code).toBe(2);
    const denied = await cli(['device', 'deny', code.user_code, '--org', acmeHost]);
    expect(denied).toMatchObject({ code: 0, stdout: `Denied workbench "CLI workbench" (${code.user_code}) in ${acme.id}.\n` });
    expect(auditsOf(denied)).toEqual([{ action: 'device.denied', organisationId: acme.id, actor: { kind: 'cli' }, target: { kind: 'workbench', name: 'CLI workbench' } }]);
    expect((await poll(code.device_code)).body.error).toBe('access_denied');
    expectRefusal(await cli(['device', 'deny', code.user_code, '--org', acme.id]), 3, 'no pending request has this code');
  });

  it("refuses a code another person opened (4), and one of another organisation's host (3)", async () => {
    const code = await codeFor();
    const founder = await personToken(idp, 'fay-at-idp', { email: 'founder@acme.example' });
    expect((await call(platform, 'post', '/platform/v1/device-approvals/look-up', { host: acmeHost, headers: founder, body: { userCode: code.user_code } })).status).toBe(200);
    expectRefusal(await cli(['device', 'approve', code.user_code, '--org', acme.id, '--as', 'approver@acme.example']), 4, 'another person has opened this code');
    const boss = (await platform.services.organisations.members(claimed.id)).find((member) => member.email === 'boss@claimed.example')!.personId;
    expectRefusal(await cli(['device', 'approve', code.user_code, '--org', claimed.id, '--as', boss]), 3, 'no pending request has this code');
  });
});

describe('platform policy', () => {
  const write = (name: string, content: string) => {
    const path = join(scratch, name);
    writeFileSync(path, content);
    return path;
  };

  it('shows the defaults, publishes a file (revision printed), lists and restores revisions; the API serves what was published', async () => {
    const shown = json<PolicyView>(await cli(['policy', 'show', '--org', acme.id, '--json']));
    expect(shown).toMatchObject({ organisationId: acme.id, projectId: null, published: false });
    const document = { ...shown.policy } as Record<string, unknown>;
    delete document.source;

    const published = await cli(['policy', 'publish', '--org', acme.id, '--file', write('policy.json', JSON.stringify(document))]);
    expect(published.code).toBe(0);
    const [line] = auditsOf(published);
    expect(line).toMatchObject({ action: 'policy.published', organisationId: acme.id, actor: { kind: 'cli' }, target: { projectId: null, number: expect.any(Number) } });
    const first = (line!.target as { number: number; revision: string });
    expect(published.stdout).toBe(`Published revision ${first.number} of the policy of ${acme.id} (ETag "${first.revision}").\n`);

    const founder = await personToken(idp, 'fay-at-idp', { email: 'founder@acme.example' });
    const served = await call(platform, 'get', '/policy/v1', { host: acmeHost, headers: founder });
    expect(served.headers.etag).toBe(`"${first.revision}"`);
    expect(served.body.published).toBe(true);

    const unchanged = await cli(['policy', 'publish', '--org', acme.id, '--file', join(scratch, 'policy.json')]);
    expect(unchanged.stdout).toMatch(/^Unchanged: /);
    expect(auditsOf(unchanged)).toEqual([]);

    const changed = { ...document, cloudAgents: { ...(document.cloudAgents as object), allowed: false } };
    const second = json<PublishView>(await cli(['policy', 'publish', '--org', acmeHost, '--file', write('policy-2.json', JSON.stringify(changed)), '--json']));
    expect(second).toMatchObject({ changed: true, number: first.number + 1, published: true });

    const revisions = json<RevisionView[]>(await cli(['policy', 'revisions', '--org', acme.id, '--json']));
    expect(revisions.map((revision) => revision.number)).toEqual([first.number + 1, first.number]);
    expect((await cli(['policy', 'revisions', '--org', acme.id])).stdout).toMatch(new RegExp(`^NUMBER\\s+PUBLISHED\\s+BY\\s+VALID\\n${first.number + 1}\\s+\\S+\\s+command line\\s+yes`));

    const restored = await cli(['policy', 'restore', String(first.number), '--org', acme.id]);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(new RegExp(`^Restored revision ${first.number} as revision ${first.number + 2} of the policy`));
    expect(auditsOf(restored)).toEqual([expect.objectContaining({ action: 'policy.restored', actor: { kind: 'cli' }, target: expect.objectContaining({ restoredFrom: first.number }) })]);
    expect((await call(platform, 'get', '/policy/v1', { host: acmeHost, headers: founder })).headers.etag).toBe(`"${first.revision}"`);
    expect(json<PolicyView>(await cli(['policy', 'show', '--org', acme.id, '--json'])).revision).toBe(first.revision);
  });

  it('validates the file as the API validates a body (2), and stores nothing', async () => {
    const before = json<RevisionView[]>(await cli(['policy', 'revisions', '--org', acme.id, '--json'])).length;
    expectRefusal(await cli(['policy', 'publish', '--org', acme.id, '--file', write('bad-schema.json', JSON.stringify({ unknownField: true }))]), 2, /^platform: body/);
    expectRefusal(await cli(['policy', 'publish', '--org', acme.id, '--file', write('not-json.json', '{"a":')]), 2, 'is not JSON');
    let deep: unknown = {};
    for (let i = 0; i < 40; i++) deep = { d: deep };
    expectRefusal(await cli(['policy', 'publish', '--org', acme.id, '--file', write('deep.json', JSON.stringify(deep))]), 2, 'nested too deeply');
    const big = write('big.json', JSON.stringify({ pad: 'x'.repeat(2048) }));
    expectRefusal(await cli(['policy', 'publish', '--org', acme.id, '--file', big], { JSON_BODY_LIMIT: '1kb' }), 2, 'a policy may be at most 1024 bytes (JSON_BODY_LIMIT)');
    expectRefusal(await cli(['policy', 'publish', '--org', acme.id, '--file', join(scratch, 'absent.json')]), 2, 'cannot read');
    expect(json<RevisionView[]>(await cli(['policy', 'revisions', '--org', acme.id, '--json']))).toHaveLength(before);
  });

  it('answers unknown revisions and projects as not found (3)', async () => {
    expectRefusal(await cli(['policy', 'restore', '999', '--org', acme.id]), 3, 'no revision 999');
    expectRefusal(await cli(['policy', 'show', '--org', acme.id, '--project', 'prj_nothing']), 3, 'no such project');
    expectRefusal(await cli(['policy', 'restore', 'first', '--org', acme.id]), 2, 'a revision number is a positive integer');
  });
});

describe('platform project delete and members', () => {
  it('lists, adds, changes and removes members with the API audit lines and rules', async () => {
    const project = json<ProjectView>(await cli(['project', 'create', '--org', acme.id, '--name', 'Members', '--owner', 'approver@acme.example', '--json']));
    const added = await cli(['project', 'members', 'add', '--org', acme.id, '--project', project.id, '--person', 'plain@acme.example']);
    expect(added.stdout).toMatch(/is contributor of project prj_\w+ \(new member\)\.\n$/);
    const plain = (await platform.services.projects.findOrganisationMember(acme.id, 'plain@acme.example')).id;
    expect(auditsOf(added)).toEqual([
      { action: 'project.member_role_set', organisationId: acme.id, actor: { kind: 'cli' }, target: { projectId: project.id, personId: plain, from: null, to: 'contributor' } },
    ]);
    expectRefusal(await cli(['project', 'members', 'add', '--org', acme.id, '--project', project.id, '--person', plain]), 4, 'is already contributor of project');
    expect((await cli(['project', 'members', 'set-role', '--org', acme.id, '--project', project.id, '--person', plain, '--role', 'viewer'])).code).toBe(0);
    const members = json<ProjectMemberListView[]>(await cli(['project', 'members', 'list', '--org', acme.id, '--project', project.id, '--json']));
    expect(new Map(members.map((member) => [member.email, member.role]))).toEqual(
      new Map([
        ['approver@acme.example', 'owner'],
        ['plain@acme.example', 'viewer'],
      ]),
    );
    expectRefusal(await cli(['project', 'members', 'remove', '--org', acme.id, '--project', project.id, '--person', 'approver@acme.example']), 4, 'a project keeps at least one owner');
    const removed = await cli(['project', 'members', 'remove', '--org', acme.id, '--project', project.id, '--person', 'plain@acme.example']);
    expect(removed.code).toBe(0);
    expect(auditsOf(removed)).toEqual([{ action: 'project.member_removed', organisationId: acme.id, actor: { kind: 'cli' }, target: { projectId: project.id, personId: plain } }]);
    expectRefusal(await cli(['project', 'members', 'list', '--org', acme.id, '--project', 'prj_nothing']), 3, 'no such project');
  });

  it('deletes an empty project; one holding data needs --force (4 without)', async () => {
    const empty = json<ProjectView>(await cli(['project', 'create', '--org', acme.id, '--name', 'Empty', '--json']));
    const deleted = await cli(['project', 'delete', empty.id, '--org', acme.id]);
    expect(deleted).toMatchObject({ code: 0, stdout: `Deleted project ${empty.id}.\n` });
    expect(auditsOf(deleted)).toEqual([{ action: 'project.deleted', organisationId: acme.id, actor: { kind: 'cli' }, target: { projectId: empty.id, pictures: 0, runs: 0, ingest: false } }]);
    expectRefusal(await cli(['project', 'delete', empty.id, '--org', acme.id]), 3, 'no such project');

    const full = json<ProjectView>(await cli(['project', 'create', '--org', acme.id, '--name', 'Full', '--json']));
    const approver = (await platform.services.projects.findOrganisationMember(acme.id, 'approver@acme.example')).id;
    const device = await enrolDevice(platform, { organisationId: acme.id, personId: approver, alg: 'ES256' });
    const body = {
      schemaVersion: 1, projectId: full.id, workspaceId: 'ws-1', sentAt: clock.now().toISOString(), cursors: { events: -1 }, events: [], audit: [], tasks: [],
      usage: [{ id: 'u1', at: clock.now().toISOString(), provider: 'anthropic', model: 'claude', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 }],
    };
    const uploaded = await call(platform, 'post', '/ingest/v1', { host: acmeHost, headers: await deviceHeaders(device, 'POST', `http://${acmeHost}/ingest/v1`), body });
    expect(uploaded.status).toBe(200);
    expectRefusal(await cli(['project', 'delete', full.id, '--org', acme.id]), 4, 'delete it with force=true');
    const forced = await cli(['project', 'delete', full.id, '--org', acme.id, '--force']);
    expect(forced).toMatchObject({ code: 0, stdout: `Deleted project ${full.id} with ingested data.\n` });
  });
});

describe('configuration, the database line and unavailability', () => {
  it('reads an env file under the environment, and names the SQLite file it works on', async () => {
    const file = join(scratch, 'file.sqlite');
    const envFile = join(scratch, 'platform.env');
    writeFileSync(envFile, `# the service's settings\nPLATFORM_DEPLOYMENT=self-hosted\nDATABASE_URL="sqlite:${file}"\nLOG_LEVEL=info\n`);
    const migrated = await runCliCapturing(['--env-file', envFile, 'migrate'], { env: {}, clock });
    expect(migrated.code).toBe(0);
    expect(migrated.database).toBe(`sqlite ${file}`);
    const created = await runCliCapturing(['org', 'create', '--name', 'From file', '--host', 'file.example', '--json', '--env-file', envFile], { env: {}, clock });
    expect(created.code).toBe(0);
    // A variable of the environment wins over the file's.
    const elsewhere = join(scratch, 'elsewhere', 'missing.sqlite');
    const overridden = await runCliCapturing(['--env-file', envFile, 'org', 'list'], { env: { DATABASE_URL: `sqlite:${elsewhere}` }, clock });
    expect(overridden.database).toBe(`sqlite ${elsewhere}`);
    expect(overridden.code).toBe(5);
    expect(overridden.stderr).toBe(`platform: no SQLite database at ${elsewhere}: check DATABASE_URL (the service's), or create it with \`platform migrate\`\n`);
    // An empty variable does not: `DATABASE_URL= platform --env-file prod.env …` uses the file's database.
    for (const empty of ['', '  ']) {
      const blank = await runCliCapturing(['--env-file', envFile, 'org', 'list', '--json'], { env: { DATABASE_URL: empty, LOG_LEVEL: '' }, clock });
      expect(blank.database).toBe(`sqlite ${file}`);
      expect((JSON.parse(blank.stdout) as { name: string }[]).map((org) => org.name)).toEqual(['From file']);
    }
    // A variable the file does not set stays as the environment has it (empty: unset, its default).
    const unsetByFile = await runCliCapturing(['--env-file', envFile, 'org', 'list', '--json'], { env: { JSON_MAX_DEPTH: '' }, clock });
    expect(unsetByFile.code).toBe(0);
    const listed = await runCliCapturing(['--env-file', envFile, 'org', 'list', '--json'], { env: {}, clock });
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((org) => org.name)).toEqual(['From file']);
    const absent = await runCliCapturing(['--env-file', join(scratch, 'absent.env'), 'org', 'list'], { env: {}, clock });
    expect(absent).toMatchObject({ code: 2, stderr: `platform: cannot read the env file ${join(scratch, 'absent.env')}: ENOENT\n` });
  });

  it('answers 5 when the database cannot be reached, naming host and port but never the password', async () => {
    const closed: Server = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const outcome = await runCliCapturing(['person', 'list', '--org', 'org_x'], { env: { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: `mysql://admin:s3cret-pw@127.0.0.1:${port}/platform` }, clock });
    expect(outcome.code).toBe(5);
    expect(outcome.database).toBe(`mysql 127.0.0.1:${port}/platform`);
    expect(outcome.stderr).toMatch(/^platform: cannot open the mysql database: .*ECONNREFUSED/);
    expect(outcome.stdout + outcome.stderr).not.toContain('s3cret-pw');
  });

  it('shows every admin command in the help', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['bootstrap', 'person', 'device', 'join-key', 'policy', 'project', '--env-file']) expect(help.stdout).toContain(command);
  });
});
