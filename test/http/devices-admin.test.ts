import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { TestIdentityProvider } from '../support/idp.js';
import { personHeaders, personIdFor, twoOrganisations, type Role } from '../support/organisations.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Devices for owners and admins (an extension): list the organisation's enrolled devices and
 * revoke one, which ends its tokens at once.
 */

const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);

let platform: TestPlatform;
let idp: TestIdentityProvider;
let otherIdp: TestIdentityProvider;
let organisation: OrganisationRecord;
let other: OrganisationRecord;
let host: string;
let otherHost: string;

beforeAll(async () => {
  platform = await startPlatform({ clock, env: { RATE_LIMITS_ENABLED: 'false' } });
  ({ idp, otherIdp, organisation, other, host, otherHost } = await twoOrganisations(platform, clock));
});

afterAll(async () => {
  await Promise.all([idp?.close(), otherIdp?.close()]);
  await platform?.close();
});

const as = (role: Role, sub: string = role, provider = idp) => personHeaders(provider, role, sub);
const personIdOf = (sub: string, provider = idp) => personIdFor(platform, provider, sub);

async function listDevices(headers?: Record<string, string>, query = '', at = host): Promise<Response> {
  return call(platform, 'get', `/platform/v1/devices${query}`, { host: at, headers: headers ?? (await as('admin')) });
}

async function listedIds(headers?: Record<string, string>, at = host): Promise<string[]> {
  const res = await listDevices(headers, '?limit=200', at);
  expect(res.status).toBe(200);
  return (res.body.devices as { id: string }[]).map((device) => device.id);
}

async function revoke(deviceId: string, headers?: Record<string, string>, at = host): Promise<Response> {
  return call(platform, 'delete', `/platform/v1/devices/${deviceId}`, { host: at, headers: headers ?? (await as('admin')) });
}

/** GET /platform/v1/organisation with the device's access token: 200 while it works. */
async function deviceCall(enrolled: EnrolledDevice, at = host): Promise<number> {
  const url = `http://${at}/platform/v1/organisation`;
  return (await call(platform, 'get', '/platform/v1/organisation', { host: at, headers: await deviceHeaders(enrolled, 'GET', url) })).status;
}

async function refresh(refreshToken: string, at = host): Promise<Response> {
  return call(platform, 'post', '/relay/v1/token', { host: at, body: { refresh_token: refreshToken } });
}

describe('GET /platform/v1/devices', () => {
  it("lists the organisation's devices with their approver, newest first", async () => {
    await as('admin'); // the admin exists once they have signed in
    await listDevices();
    const approver = await personIdOf('admin');
    const workbench = await enrolDevice(platform, { organisationId: organisation.id, personId: approver, name: 'Ada\'s laptop', alg: 'ES256' });
    clock.advance(1000);
    const keyRes = await call(platform, 'post', '/platform/v1/join-keys', { host, headers: await as('admin'), body: { description: 'rack' } });
    const joined = await call(platform, 'post', '/relay/v1/device/join', {
      host,
      body: { key: keyRes.body.key, name: 'Rack node', manifest: { schemaVersion: 1, nodeId: 'rack-7', name: 'rack-7', kind: 'node', owner: { type: 'user' } } },
    });
    expect(joined.status).toBe(200);

    const res = await listDevices(await as('owner'));
    expect(res.status).toBe(200);
    const devices = res.body.devices as Record<string, unknown>[];
    expect(devices.map((device) => device.id).slice(0, 2)).toEqual([joined.body.device_id, workbench.device.id]);
    expect(devices[0]).toEqual({
      id: joined.body.device_id,
      name: 'Rack node',
      kind: 'node',
      workspaceId: null,
      nodeId: 'rack-7',
      approver: { id: approver, name: 'The admin' },
      enrolledVia: 'join_key',
      joinKeyId: keyRes.body.joinKey.id,
      createdAt: clock.now().toISOString(),
      lastSeenAt: null,
      keyBound: false,
    });
    expect(devices[1]).toEqual({
      id: workbench.device.id,
      name: "Ada's laptop",
      kind: 'workbench',
      workspaceId: 'ws-test',
      nodeId: null,
      approver: { id: approver, name: 'The admin' },
      enrolledVia: 'device_code',
      joinKeyId: null,
      createdAt: new Date(clock.now().getTime() - 1000).toISOString(),
      lastSeenAt: null,
      keyBound: true,
    });
    expect(JSON.stringify(res.body)).not.toMatch(/platform_(at|rt)_/);
  });

  it('shows when a device was last seen', async () => {
    const person = await createPerson(platform, organisation.id, 'member', 'Grace');
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    expect(await deviceCall(enrolled)).toBe(200);
    const seenAt = clock.now().toISOString();
    // `last seen` is written off the request's path; give it its turn.
    for (let turn = 0; turn < 50; turn++) {
      const row = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: enrolled.device.id });
      if (row.lastSeenAt) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const listed = (await listDevices(undefined, '?limit=200')).body.devices.find((device: { id: string }) => device.id === enrolled.device.id);
    expect(listed).toMatchObject({ lastSeenAt: seenAt, approver: { id: person.id, name: 'Grace' } });
  });

  it("shows nothing of another organisation's devices", async () => {
    const theirs = await enrolDevice(platform, { organisationId: other.id, personId: (await createPerson(platform, other.id, 'admin')).id });
    expect(await listedIds()).not.toContain(theirs.device.id);
    expect(await listedIds(await as('admin', 'admin', otherIdp), otherHost)).toEqual([theirs.device.id]);
  });

  it('pages with limit and cursor, each device once, also among devices enrolled at the same instant', async () => {
    const person = await createPerson(platform, organisation.id);
    for (let i = 0; i < 5; i++) await enrolDevice(platform, { organisationId: organisation.id, personId: person.id, name: `Same instant ${i}` });
    const all = await listedIds();
    expect(all.length).toBeGreaterThanOrEqual(8);
    const paged: string[] = [];
    let query = '?limit=3';
    for (let pages = 0; pages < 20; pages++) {
      const res = await listDevices(undefined, query);
      expect(res.status).toBe(200);
      expect(res.body.devices.length).toBeLessThanOrEqual(3);
      paged.push(...res.body.devices.map((device: { id: string }) => device.id));
      if (res.body.nextCursor === null) break;
      query = `?limit=3&cursor=${res.body.nextCursor}`;
    }
    expect(paged).toEqual(all);
  });

  it('refuses a cursor it did not give out', async () => {
    const res = await listDevices(undefined, '?cursor=WyJ4IiwxXQ');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field: 'query.cursor' });
  });

  it('refuses a member with 403', async () => {
    const res = await listDevices(await as('member'));
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
  });

  it('refuses a device token, even of a device an owner approved, with 401', async () => {
    const owner = await createPerson(platform, organisation.id, 'owner');
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: owner.id });
    const res = await listDevices({ Authorization: `Bearer ${enrolled.tokens.access_token}` });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it("refuses an admin's token at another organisation's host", async () => {
    const res = await listDevices(await as('admin'), '', otherHost);
    expect(res.status).toBe(401);
  });
});

describe('DELETE /platform/v1/devices/{deviceId}', () => {
  it('ends every token of the device at once and drops it from the list', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    expect(await deviceCall(enrolled)).toBe(200);
    expect(await listedIds()).toContain(enrolled.device.id);

    const res = await revoke(enrolled.device.id);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(await deviceCall(enrolled)).toBe(401);
    const refused = await refresh(enrolled.tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect(await listedIds()).not.toContain(enrolled.device.id);
    const row = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ id: enrolled.device.id });
    expect(row.revokedAt?.toISOString()).toBe(clock.now().toISOString());
  });

  it('lets an owner revoke too, and revoking twice is harmless', async () => {
    const person = await createPerson(platform, organisation.id);
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
    expect((await revoke(enrolled.device.id, await as('owner'))).status).toBe(204);
    expect((await revoke(enrolled.device.id, await as('owner'))).status).toBe(204);
    expect(await deviceCall(enrolled)).toBe(401);
  });

  it("answers 404 for another organisation's device, and leaves it working", async () => {
    const theirs = await enrolDevice(platform, { organisationId: other.id, personId: (await createPerson(platform, other.id, 'admin')).id });
    const res = await revoke(theirs.device.id, await as('owner'));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect(await deviceCall(theirs, otherHost)).toBe(200);
  });

  it('answers 404 for an id that names no device', async () => {
    const res = await revoke('dev_doesnotexist');
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it('refuses a member with 403, even for a device they approved, and the device keeps working', async () => {
    await listDevices(await as('member', 'member-with-laptop'));
    const enrolled = await enrolDevice(platform, { organisationId: organisation.id, personId: await personIdOf('member-with-laptop') });
    const res = await revoke(enrolled.device.id, await as('member', 'member-with-laptop'));
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    expect(await deviceCall(enrolled)).toBe(200);
  });
});
