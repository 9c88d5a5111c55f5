import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { call, createOrganisation, startPlatform, unreachableRedis, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice } from '../support/devices.js';

// Redis configured but away (nothing listens on loopback port 1): the checks that need it refuse
// the request with 503 and Retry-After; none of them is skipped.
let platform: TestPlatform;
let redis: Redis;
let host: string;
let organisationId: string;

beforeAll(async () => {
  redis = await unreachableRedis();
  platform = await startPlatform({ redis });
  const organisation = await createOrganisation(platform);
  organisationId = organisation.id;
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
});
afterAll(async () => {
  redis.disconnect();
  await platform.close();
});

describe('when Redis is configured but unreachable', () => {
  it('refuses rate-limited requests with 503 rather than leaving them unlimited', async () => {
    const res = await call(platform, 'post', '/relay/v1/device/code', { host, body: { workspaceId: 'ws', name: 'laptop' } });
    expect(res.status).toBe(503);
    expect(res.body.error).toBe('temporarily_unavailable');
    expect(res.headers['retry-after']).toBe('1');
  });

  it('refuses DPoP proofs with 503 rather than accepting ones it cannot check for replay', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id, alg: 'ES256' });
    const url = `http://${host}/platform/v1/organisation`;
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', url) });
    expect(res.status).toBe(503);
    expect(res.body.error).toBe('temporarily_unavailable');
  });

  it('still serves what does not need Redis', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', '') });
    expect(res.status).toBe(200);
  });
});
