import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DeviceAuthorizationEntity } from '../../src/modules/devices/entities.js';
import { PersonIdentityEntity, type OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { askForCode, createPerson, deviceHeaders, enrolDevice, pollForTokens, type AskedCode } from '../support/devices.js';
import type { TestIdentityProvider } from '../support/idp.js';
import { ROLE_CLAIM, twoOrganisations } from '../support/organisations.js';
import { addressSequence, call, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * The console's side of the device-code flow (an extension): a person signed in to the
 * organisation looks up the code a device shows, which claims it for them, and approves or
 * denies it. Approvers hold real person tokens from the organisation's OpenID Connect provider.
 */

const CODE_TTL_SECONDS = 600;

const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let partnerIdp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;
let partnerHost: string;

beforeAll(async () => {
  platform = await startPlatform({ clock, env: { TRUST_PROXY: 'loopback' } });
  ({ idp, otherIdp: partnerIdp, organisation, host, otherHost: partnerHost } = await twoOrganisations(platform, clock, ['Approvals Org', 'Partner Org']));
});

afterAll(async () => {
  await Promise.all([idp?.close(), partnerIdp?.close()]);
  await platform?.close();
});

/** A network address of its own, as the trusted proxy reports it: per-address limits stay apart. */
const newAddress = addressSequence('10.1');

interface Person {
  subject: string;
  role: 'owner' | 'admin' | 'member';
  provider: TestIdentityProvider;
  at: string;
}

function newPerson(role: Person['role'] = 'member', where: 'here' | 'partner' = 'here'): Person {
  return where === 'here'
    ? { subject: `person-${randomUUID()}`, role, provider: idp, at: host }
    : { subject: `partner-${randomUUID()}`, role, provider: partnerIdp, at: partnerHost };
}

async function personIdOf(person: Person): Promise<string> {
  const identity = await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: person.provider.issuer, subject: person.subject });
  return identity.personId;
}

type Action = 'look-up' | 'approve' | 'deny';

async function act(person: Person, action: Action, userCode: unknown, options: { from?: string } = {}): Promise<Response> {
  const token = await person.provider.mint({ sub: person.subject, claims: { [ROLE_CLAIM]: person.role } });
  return call(platform, 'post', `/platform/v1/device-approvals/${action}`, {
    host: person.at,
    headers: { Authorization: `Bearer ${token}`, 'X-Forwarded-For': options.from ?? newAddress() },
    body: { userCode },
  });
}

const newCode = (body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  askForCode(platform, { host, from: newAddress(), headers, body: { workspaceId: 'ws-approvals', name: 'Grace’s workbench', ...body } });

const poll = (deviceCode: string) => pollForTokens(platform, deviceCode, { host, from: newAddress() });

const sha256hex = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

async function stored(code: AskedCode) {
  return platform.dataSource.getRepository(DeviceAuthorizationEntity).findOneByOrFail({ deviceCodeHash: sha256hex(code.device_code) });
}

function expectRefusal(res: Response, status: number, error: string): void {
  expect(res.status).toBe(status);
  expect(res.body.error).toBe(error);
}

describe('looking up a user code', () => {
  it('shows what the device said, where it asked from, and claims the code for the caller', async () => {
    const from = newAddress();
    const requestedAt = clock.now();
    const code = await newCode({ name: 'Lab box', workspaceId: 'ws-lab' }, { 'X-Forwarded-For': from, 'User-Agent': 'workbench/4.0' });
    const person = newPerson('member');

    const res = await act(person, 'look-up', code.user_code);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'pending',
      userCode: code.user_code,
      name: 'Lab box',
      kind: 'workbench',
      workspaceId: 'ws-lab',
      requestedAt: requestedAt.toISOString(),
      expiresAt: new Date(requestedAt.getTime() + CODE_TTL_SECONDS * 1000).toISOString(),
      requesterAddress: from,
      requesterUserAgent: 'workbench/4.0',
      keyBound: false,
    });
    expect(await stored(code)).toMatchObject({ status: 'pending', claimedBy: await personIdOf(person), decidedBy: null });
  });

  it('says whether the tokens will be bound to a key', async () => {
    const code = await newCode({ dpop_jkt: 'A'.repeat(43) });
    const res = await act(newPerson(), 'look-up', code.user_code);
    expect(res.status).toBe(200);
    expect(res.body.keyBound).toBe(true);
  });

  it('matches the code whatever its case, spaces and dashes', async () => {
    const code = await newCode();
    const person = newPerson();
    const plain = code.user_code.replace('-', '');
    for (const typed of [plain.toLowerCase(), ` ${plain.slice(0, 4)} ${plain.slice(4)} `, `${plain.slice(0, 2)}-${plain.slice(2).toLowerCase()}`]) {
      const res = await act(person, 'look-up', typed);
      expect(res.status).toBe(200);
      expect(res.body.userCode).toBe(code.user_code);
    }
  });

  it.each([
    ['an unknown code', 'BCDF-GHJK'],
    ['a code with letters no code has', 'AEIO-U018'],
    ['a code of the wrong length', 'BCDF-GHJ'],
  ])('answers 404 not_found for %s', async (_case, userCode) => {
    expectRefusal(await act(newPerson(), 'look-up', userCode), 404, 'not_found');
  });

  it('answers 404 once the code has expired', async () => {
    const code = await newCode();
    clock.advance(CODE_TTL_SECONDS * 1000);
    for (const action of ['look-up', 'approve', 'deny'] as const) expectRefusal(await act(newPerson(), action, code.user_code), 404, 'not_found');
    expect((await stored(code)).claimedBy).toBeNull();
  });

  it.each([
    ['no userCode', {}, 'body.userCode'],
    ['a userCode that is not text', { userCode: 12345678 }, 'body.userCode'],
    ['an empty userCode', { userCode: '' }, 'body.userCode'],
    ['an unknown field', { userCode: 'BCDF-GHJK', user_code: 'BCDF-GHJK' }, 'body.user_code'],
  ])('refuses %s with 400 invalid_request naming the field', async (_case, body, field) => {
    const token = await idp.mint({ sub: `person-${randomUUID()}` });
    const res = await call(platform, 'post', '/platform/v1/device-approvals/look-up', {
      host,
      headers: { Authorization: `Bearer ${token}`, 'X-Forwarded-For': newAddress() },
      body,
    });
    expectRefusal(res, 400, 'invalid_request');
    expect(res.body.field).toBe(field);
  });

  it('needs a person signed in: no token, or a device token, is 401', async () => {
    const code = await newCode();
    const anonymous = await call(platform, 'post', '/platform/v1/device-approvals/approve', { host, headers: { 'X-Forwarded-For': newAddress() }, body: { userCode: code.user_code } });
    expectRefusal(anonymous, 401, 'unauthorized');

    const owner = await createPerson(platform, organisation.id, 'owner');
    const device = await enrolDevice(platform, { organisationId: organisation.id, personId: owner.id });
    const byDevice = await call(platform, 'post', '/platform/v1/device-approvals/approve', {
      host,
      headers: { ...(await deviceHeaders(device, 'POST', '')), 'X-Forwarded-For': newAddress() },
      body: { userCode: code.user_code },
    });
    expectRefusal(byDevice, 401, 'unauthorized');
    expect(await stored(code)).toMatchObject({ status: 'pending', claimedBy: null });
  });
});

describe('claiming', () => {
  it('lets only the person who opened a code approve or deny it', async () => {
    const code = await newCode();
    const first = newPerson('member');
    const second = newPerson('owner');
    expect((await act(first, 'look-up', code.user_code)).status).toBe(200);

    for (const action of ['look-up', 'approve', 'deny'] as const) {
      const res = await act(second, action, code.user_code);
      expectRefusal(res, 403, 'forbidden');
    }
    expect(await stored(code)).toMatchObject({ status: 'pending', claimedBy: await personIdOf(first) });

    const approved = await act(first, 'approve', code.user_code);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: 'approved', userCode: code.user_code });
  });

  it('claims and approves in one step when the code was not opened before', async () => {
    const code = await newCode();
    const person = newPerson();
    const res = await act(person, 'approve', code.user_code);
    expect(res.status).toBe(200);
    const personId = await personIdOf(person);
    expect(await stored(code)).toMatchObject({ status: 'approved', claimedBy: personId, decidedBy: personId, organisationId: organisation.id });
  });

  it('gives one person the code when two open it at the same moment', async () => {
    const code = await newCode();
    const people = [newPerson(), newPerson(), newPerson(), newPerson()];
    const answers = await Promise.all(people.map((person) => act(person, 'look-up', code.user_code)));
    expect(answers.filter((res) => res.status === 200)).toHaveLength(1);
    for (const res of answers.filter((answer) => answer.status !== 200)) expectRefusal(res, 403, 'forbidden');
    const winner = people[answers.findIndex((res) => res.status === 200)]!;
    expect((await stored(code)).claimedBy).toBe(await personIdOf(winner));
  });
});

describe('deciding', () => {
  it('denies: the device is told access_denied and the code cannot be opened again', async () => {
    const code = await newCode();
    const person = newPerson();
    const res = await act(person, 'deny', code.user_code);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('denied');
    const personId = await personIdOf(person);
    expect(await stored(code)).toMatchObject({ status: 'denied', decidedBy: personId });

    const polled = await poll(code.device_code);
    expectRefusal(polled, 400, 'access_denied');
    for (const action of ['look-up', 'approve', 'deny'] as const) expectRefusal(await act(person, action, code.user_code), 404, 'not_found');
  });

  it('approves once: a decided code is not found any more, for its approver too', async () => {
    const code = await newCode();
    const person = newPerson();
    expect((await act(person, 'approve', code.user_code)).status).toBe(200);
    for (const action of ['look-up', 'approve', 'deny'] as const) expectRefusal(await act(person, action, code.user_code), 404, 'not_found');
    expect((await stored(code)).status).toBe('approved');
    expect((await poll(code.device_code)).status).toBe(200);
  });

  it('lets a member approve a workbench', async () => {
    const code = await newCode();
    expect((await act(newPerson('member'), 'approve', code.user_code)).status).toBe(200);
  });
});

describe('nodes', () => {
  it('refuses a member with 403, without claiming the node, and an admin then approves it', async () => {
    const code = await newCode({ kind: 'node', name: 'Rack 9' });
    const member = newPerson('member');
    for (const action of ['look-up', 'approve', 'deny'] as const) {
      const res = await act(member, action, code.user_code);
      expectRefusal(res, 403, 'forbidden');
      expect(res.body.message).toContain('owners and admins');
    }
    expect(await stored(code)).toMatchObject({ status: 'pending', claimedBy: null });

    const admin = newPerson('admin');
    const looked = await act(admin, 'look-up', code.user_code);
    expect(looked.status).toBe(200);
    expect(looked.body.kind).toBe('node');
    expect((await act(admin, 'approve', code.user_code)).status).toBe(200);
    const polled = await poll(code.device_code);
    expect(polled.status).toBe(200);
    expect(polled.body.scope).toBe('organisation:read policy:read ingest:write relay:connect');
  });

  it('lets an owner approve a node', async () => {
    const code = await newCode({ kind: 'node' });
    expect((await act(newPerson('owner'), 'approve', code.user_code)).status).toBe(200);
  });
});

describe('other organisations', () => {
  it("answer 404 for a code asked at another organisation's host, and leave it untouched", async () => {
    const code = await newCode();
    const outsider = newPerson('owner', 'partner');
    for (const action of ['look-up', 'approve', 'deny'] as const) expectRefusal(await act(outsider, action, code.user_code), 404, 'not_found');
    expect(await stored(code)).toMatchObject({ status: 'pending', claimedBy: null, decidedBy: null });
  });

  it("refuse a token of another organisation's provider at this host with 401", async () => {
    const code = await newCode();
    const outsider = { ...newPerson('owner', 'partner'), at: host };
    expectRefusal(await act(outsider, 'approve', code.user_code), 401, 'unauthorized');
  });
});

describe('rate limits', () => {
  it('allow a person 10 look-ups and decisions a minute, then 429 with Retry-After; another person goes on', async () => {
    const from = newAddress();
    const guesser = newPerson();
    for (let i = 0; i < 10; i++) expectRefusal(await act(guesser, 'look-up', `BCDF-GHJ${'BCDFGHJKLM'[i]}`, { from }), 404, 'not_found');
    const refused = await act(guesser, 'approve', 'BCDF-GHJK', { from });
    expectRefusal(refused, 429, 'too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
    // From a fresh address too: the limit follows the person.
    expectRefusal(await act(guesser, 'deny', 'BCDF-GHJK'), 429, 'too_many_requests');
    expectRefusal(await act(newPerson(), 'look-up', 'BCDF-GHJK', { from }), 404, 'not_found');
  });

  it('allow an address 30 a minute, whoever asks', async () => {
    const from = newAddress();
    const people = [newPerson(), newPerson(), newPerson(), newPerson()];
    for (let i = 0; i < 30; i++) expectRefusal(await act(people[i % 4]!, 'look-up', 'BCDF-GHJK', { from }), 404, 'not_found');
    const refused = await act(newPerson(), 'look-up', 'BCDF-GHJK', { from });
    expectRefusal(refused, 429, 'too_many_requests');
    expect(refused.headers['retry-after']).toBe('60');
    expectRefusal(await act(people[0]!, 'look-up', 'BCDF-GHJK'), 404, 'not_found');
  });
});

describe('the OpenAPI document', () => {
  it('marks the approval operations as extensions and the relay operations as the spec\'s', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    for (const action of ['look-up', 'approve', 'deny']) {
      const operation = body.paths[`/platform/v1/device-approvals/${action}`].post;
      expect(operation['x-platform-extension']).toBe(true);
      // Self-hosted: person tokens; Cloud sessions are the hosted deployment's kind, not offered here.
      expect(operation.security).toEqual([{ personToken: [] }]);
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404', '429']));
    }
    for (const path of ['/relay/v1/device/code', '/relay/v1/device/token']) {
      expect(body.paths[path].post['x-platform-extension']).toBeUndefined();
      expect(body.paths[path].post.security).toEqual([]);
      expect(Object.keys(body.paths[path].post.requestBody.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    }
    expect(body.paths['/relay/v1/device/token'].post.responses['400'].content['application/json'].schema.properties.error.enum).toEqual(
      expect.arrayContaining(['authorization_pending', 'slow_down', 'expired_token', 'access_denied', 'invalid_grant', 'invalid_dpop_proof']),
    );
  });
});

describe('logs', () => {
  it('never hold a user code: it travels in request bodies only', async () => {
    const code = await newCode();
    expect((await act(newPerson(), 'look-up', code.user_code)).status).toBe(200);
    const logged = JSON.stringify(platform.logs);
    expect(logged).toContain('/platform/v1/device-approvals/look-up');
    expect(logged).not.toContain(code.user_code);
    expect(logged).not.toContain(code.user_code.replace('-', ''));
  });
});
