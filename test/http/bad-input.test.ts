import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { personHeaders, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { call, expectDeclaredAnswer, startPlatform, type TestPlatform } from '../support/platform.js';
import { listen, type RawServer } from '../support/raw-http.js';

/**
 * No 500 for bad input: whatever a client sends that the service cannot read is a 4xx with the
 * error body, and nothing is logged as an unexpected failure.
 */

let platform: TestPlatform;
let orgs: TwoOrganisations;
let owner: Record<string, string>;
let device: EnrolledDevice;

beforeAll(async () => {
  platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false' } });
  orgs = await twoOrganisations(platform, platform.clock);
  owner = await personHeaders(orgs.idp, 'owner');
  const person = await createPerson(platform, orgs.organisation.id, 'owner');
  device = await enrolDevice(platform, { organisationId: orgs.organisation.id, personId: person.id });
});
afterAll(async () => {
  await Promise.all([orgs.idp.close(), orgs.otherIdp.close()]);
  await platform.close();
});

function noUnexpectedFailure(): void {
  expect(platform.logs.filter((line) => line.msg === 'unexpected failure' || (line.level as number) >= 50)).toEqual([]);
}

describe('malformed percent-encoding in path parameters', () => {
  const MALFORMED = ['%', '%zz', '%E0%A4%A', 'a%', '%%41', '%C0%AF', '%ED%A0%80'];
  const routes = () => platform.registry.routes.filter((route) => route.path.includes('{') && !route.cloudOnly);

  it('exists for every kind of path parameter the service has', () => {
    const kinds = new Set(routes().flatMap((route) => [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])));
    expect([...kinds].sort()).toEqual(expect.arrayContaining(['deviceId', 'joinKeyId', 'projectId']));
  });

  it('is 400 invalid_request in every parameter of every route, with or without credentials', async () => {
    let checked = 0;
    for (const route of routes()) {
      for (const bad of MALFORMED) {
        const path = route.path.replace(/\{\w+\}/g, bad);
        for (const headers of [{}, owner]) {
          const res = await call(platform, route.method, path, { host: orgs.host, headers });
          expect({ path, status: res.status, body: res.body }).toEqual({
            path,
            status: 400,
            body: { error: 'invalid_request', message: 'a path parameter is not valid percent-encoding', field: 'params' },
          });
          // The answer repeats nothing of what was sent.
          expect(res.text).not.toContain(bad);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4 * MALFORMED.length * 2);
    noUnexpectedFailure();
  });

  it('stays a plain 404 for a well-encoded unknown id', async () => {
    const res = await call(platform, 'delete', '/platform/v1/devices/%64ev_nothing', { host: orgs.host, headers: owner });
    expect(res.status).toBe(404);
  });
});

describe('numbers too large to be numbers', () => {
  it('are 400 invalid_request in every integer of every query and path, for people and devices alike', async () => {
    // ajv turns `1e999` into Infinity and lets it pass `integer` and `maximum`: a SQL LIMIT of it failed.
    let checked = 0;
    for (const route of platform.registry.routes.filter((r) => !r.cloudOnly && (r.method === 'get' || r.path.includes('{number}')))) {
      const integers = (where: 'query' | 'params') =>
        Object.entries(((route.schemas[where] as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {}))
          .filter(([, property]) => property.type === 'integer')
          .map(([name]) => name);
      const headers = route.auth !== 'public' && route.auth.includes('device') ? { Authorization: `Bearer ${device.tokens.access_token}` } : owner;
      const filled = route.path.replace('{number}', '1e999').replace('{projectId}', 'prj_nothing00000000');
      for (const name of integers('query')) {
        const res = await call(platform, route.method, `${filled.replace('1e999', '1')}?${name}=1e999`, { host: orgs.host, headers });
        expect({ operation: route.operationId, status: res.status, body: res.body }).toEqual({
          operation: route.operationId,
          status: 400,
          body: { error: 'invalid_request', message: `query.${name} must be a finite number`, field: `query.${name}` },
        });
        checked += 1;
      }
      if (integers('params').length) {
        const res = await call(platform, route.method, filled, { host: orgs.host, headers });
        expect({ operation: route.operationId, status: res.status, error: res.body.error }).toEqual({ operation: route.operationId, status: 400, error: 'invalid_request' });
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8);
    noUnexpectedFailure();
  });
});

describe('request bodies that cannot be read', () => {
  const json = Buffer.from(JSON.stringify({ workspaceId: 'ws', name: 'laptop' }));
  let server: RawServer;
  beforeAll(async () => {
    server = await listen(platform.app);
  });
  afterAll(() => server.close());

  /** Over a bare socket: supertest would serialise a Buffer sent as JSON. */
  const send = async (encoding: string | undefined, data: Buffer, type = 'application/json') => {
    const lines = ['POST /relay/v1/device/code HTTP/1.1', `Host: ${orgs.host}`, `Content-Type: ${type}`, `Content-Length: ${data.length}`];
    if (encoding !== undefined) lines.push(`Content-Encoding: ${encoding}`);
    const answer = await server.send(lines.join('\r\n'), data);
    const res = { status: answer.status, body: answer.body ? JSON.parse(answer.body) : {}, text: answer.body } as unknown as Response;
    expectDeclaredAnswer(platform, 'post', '/relay/v1/device/code', res);
    return res;
  };

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('reads a %s body', async (encoding, compress) => {
    const res = await send(encoding, compress(json));
    expect(res.status).toBe(200);
    expect(res.body.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
  });

  it.each([
    ['gzip', Buffer.from('this is not gzip at all')],
    ['gzip', gzipSync(json).subarray(0, 12)],
    ['deflate', Buffer.from('definitely not deflate')],
    ['br', Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x01])],
    ['GZIP', Buffer.from('upper case, still corrupt')],
  ])('refuses a corrupt %s body with 400', async (encoding, data) => {
    const res = await send(encoding, data);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), field: 'body' });
    noUnexpectedFailure();
  });

  it('refuses a body that decompresses to something that is not JSON with 400', async () => {
    const res = await send('gzip', gzipSync(Buffer.from('{"workspaceId":')));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it.each(['compress', 'zstd', 'x-zq7', 'gzip, br'])('refuses the unsupported Content-Encoding %p with 415', async (encoding) => {
    const res = await send(encoding, json);
    expect(res.status).toBe(415);
    expect(res.body.error).toBe('unsupported_media_type');
    expect(res.text).not.toContain('zq7');
  });

  it.each(['application/json; charset=latin1', 'application/json; charset=zq7-unknown', 'application/json; charset=iso-8859-1', 'application/json; charset="windows-1252"'])(
    'refuses %p with 415',
    async (type) => {
      const res = await send(undefined, json, type);
        expect(res.status).toBe(415);
      expect(res.body.error).toBe('unsupported_media_type');
      expect(res.text).not.toContain('zq7');
    },
  );

  it('refuses an empty body where one is required with 400 naming the field', async () => {
    const empty = await send(undefined, Buffer.alloc(0));
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ error: 'invalid_request', field: expect.stringMatching(/^body/) });
    const none = await call(platform, 'post', '/relay/v1/device/code', { host: orgs.host });
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ error: 'invalid_request', field: 'body' });
    const authenticated = await call(platform, 'post', '/platform/v1/join-keys', { host: orgs.host, headers: owner });
    expect(authenticated.status).toBe(400);
    expect(authenticated.body.error).toBe('invalid_request');
  });

  it.each(['[]', '[{"workspaceId":"ws","name":"laptop"}]', '"a string"', '42', 'null', 'true'])('refuses the JSON %s where an object is required with 400', async (text) => {
    for (const [path, headers] of [
      ['/relay/v1/device/code', {}],
      ['/platform/v1/join-keys', owner],
      ['/ingest/v1', { Authorization: `Bearer ${device.tokens.access_token}` }],
    ] as const) {
      const res = await call(platform, 'post', path, { host: orgs.host, headers, raw: { type: 'application/json', data: text } });
      expect({ path, status: res.status, error: res.body.error }).toEqual({ path, status: 400, error: 'invalid_request' });
    }
    noUnexpectedFailure();
  });
});

describe('bodies nested too deep for anything recursive', () => {
  const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  /** A valid body as JSON text, with `deep(depth)` where the marker stands. */
  const withDeep = (body: unknown, depth: number) => JSON.stringify(body).replace('"__deep__"', deep(depth));

  it.each([70, 5_000, 50_000])('refuses %i levels in any free-form field with 400 json_too_complex, never a failure', async (depth) => {
    const project = await platform.services.projects.create(orgs.organisation.id, { name: `Deep ${depth}` });
    const now = platform.clock.now().toISOString();
    const device = { Authorization: `Bearer ${(await enrolDevice(platform, { organisationId: orgs.organisation.id, personId: (await createPerson(platform, orgs.organisation.id)).id })).tokens.access_token}` };
    const cases: [string, 'put' | 'post', string, Record<string, string>, unknown][] = [
      ['policy settings', 'put', '/policy/v1/organisation', owner, { ...DEFAULT_POLICY, settings: { nested: '__deep__' } }],
      ['project override', 'put', `/policy/v1/projects/${project.id}`, owner, { inference: '__deep__' }],
      [
        'ingest event data',
        'post',
        '/ingest/v1',
        device,
        { schemaVersion: 1, projectId: project.id, workspaceId: 'ws-deep', sentAt: now, cursors: { events: 0 }, events: [{ seq: 1, id: 'e1', at: now, kind: 'k', data: '__deep__' }] },
      ],
      [
        'ingest schemaVersion',
        'post',
        '/ingest/v1',
        device,
        { schemaVersion: '__deep__', projectId: project.id, workspaceId: 'ws-deep', sentAt: now, cursors: { events: 0 } },
      ],
      [
        'join manifest',
        'post',
        '/relay/v1/device/join',
        {},
        { key: 'platform_jk_0000000000000000_not-a-key', name: 'n', manifest: { schemaVersion: 1, nodeId: 'n', name: 'n', kind: 'node', owner: { type: 'user' }, extra: '__deep__' } },
      ],
    ];
    for (const [name, method, path, headers, body] of cases) {
      const res = await call(platform, method, path, { host: orgs.host, headers, raw: { type: 'application/json', data: withDeep(body, depth) } });
      expect({ name, status: res.status, body: res.body }).toEqual({
        name,
        status: 400,
        body: { error: 'json_too_complex', message: expect.stringContaining('is nested too deeply'), field: expect.stringMatching(/^body\./), limit: 'depth', max: expect.any(Number) },
      });
    }
    noUnexpectedFailure();
  });

  it('takes free-form values nested within the limit', async () => {
    const project = await platform.services.projects.create(orgs.organisation.id, { name: 'Nested within' });
    const res = await call(platform, 'put', `/policy/v1/projects/${project.id}`, { host: orgs.host, headers: owner, raw: { type: 'application/json', data: withDeep({ inference: '__deep__' }, 30) } });
    expect(res.status).toBe(200);
  });
});
