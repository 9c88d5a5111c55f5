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
    expect(res.body.error).toBe('unavailable');
    expect(res.headers['retry-after']).toBe('1');
  });

  it('refuses DPoP proofs with 503 rather than accepting ones it cannot check for replay', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id, alg: 'ES256' });
    const url = `http://${host}/platform/v1/organisation`;
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', url) });
    expect(res.status).toBe(503);
    expect(res.body.error).toBe('unavailable');
  });

  it('refuses MCP requests with 503 rather than leaving a run unlimited', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    const projectId = (await platform.services.projects.create(organisationId, { name: 'p', owner: person.id })).id;
    const run = await call(platform, 'post', '/cloud-agents/v1/runs', {
      host,
      headers: await deviceHeaders(device, 'POST', ''),
      body: { provider: 'codex', projectId, workspaceId: 'w', tools: ['t'] },
    });
    expect(run.status).toBe(201);
    const res = await call(platform, 'post', `/cloud-agents/v1/runs/${run.body.runId}/mcp`, {
      host,
      headers: { Authorization: `Bearer ${run.body.mcp.token}` },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(res.status).toBe(503);
    expect(res.body.error).toBe('unavailable');
  });

  it('still serves what does not need Redis', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    const res = await call(platform, 'get', '/platform/v1/organisation', { host, headers: await deviceHeaders(device, 'GET', '') });
    expect(res.status).toBe(200);
  });
});
