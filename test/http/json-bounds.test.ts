import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { PolicyRevisionEntity } from '../../src/modules/policy/entities.js';
import { newId } from '../../src/util/ids.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Every free-form JSON the service accepts is bounded (depth, keys and items, string length)
 * before anything recursive touches it, on every route that takes it: 400 `json_too_complex`
 * naming the limit and the field, never a 500. Stored JSON read back is checked again.
 */

const ROLE_CLAIM = 'platform_role';
const DEEP = 100_000;

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let host: string;
let projectId: string;
let device: EnrolledDevice;
let adminHeaders: Record<string, string>;

beforeAll(async () => {
  platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false' } });
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { name: 'Bounds Org', oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Bounded' })).id;
  const person = await createPerson(platform, organisation.id);
  device = await enrolDevice(platform, { organisationId: organisation.id, personId: person.id });
  adminHeaders = { Authorization: `Bearer ${await idp.mint({ sub: 'bounds-admin', claims: { [ROLE_CLAIM]: 'admin' } })}` };
});

afterAll(async () => {
  await idp?.close();
  await platform?.close();
});

/** A JSON text with `inner` spliced in raw where `"__HERE__"` stands in `outer`. */
function splice(outer: unknown, inner: string): string {
  const text = JSON.stringify(outer);
  const at = text.indexOf('"__HERE__"');
  return text.slice(0, at) + inner + text.slice(at + '"__HERE__"'.length);
}

const deepArrays = (depth = DEEP) => '['.repeat(depth) + ']'.repeat(depth);
const deepObjects = (depth = DEEP) => '{"a":'.repeat(depth) + '{}' + '}'.repeat(depth);
const manyKeys = (count: number) => JSON.stringify(Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i])));
const longString = (length: number) => JSON.stringify('x'.repeat(length));

type Limit = 'depth' | 'keys' | 'stringLength';

function expectTooComplex(res: Response, limit: Limit, max: number, field: string | RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ error: 'json_too_complex', limit, max });
  if (typeof field === 'string') expect(res.body.field).toBe(field);
  else expect(res.body.field).toMatch(field);
  expect(res.body.message).toContain(res.body.field.slice(0, 40));
  expect(res.body.message).toContain(String(max));
}

interface FreeFormRoute {
  name: string;
  /** A request whose free-form field is `"__HERE__"`. */
  send: (text: string) => Promise<Response>;
  outer: unknown;
  /** The field path of the free-form value. */
  field: string;
  limits: { maxDepth: number; maxKeys: number; maxStringLength: number };
}

const GENERIC = { maxDepth: 32, maxKeys: 10_000, maxStringLength: 65_536 };

const routes = (): FreeFormRoute[] => [
  {
    name: 'PUT /policy/v1/organisation (settings)',
    outer: { ...DEFAULT_POLICY, settings: { deep: '__HERE__' } },
    field: 'body.settings.deep',
    limits: GENERIC,
    send: (text) => call(platform, 'put', '/policy/v1/organisation', { host, headers: adminHeaders, raw: { type: 'application/json', data: text } }),
  },
  {
    name: 'PUT /policy/v1/organisation (inference)',
    outer: { ...DEFAULT_POLICY, inference: { deep: '__HERE__' } },
    field: 'body.inference.deep',
    limits: GENERIC,
    send: (text) => call(platform, 'put', '/policy/v1/organisation', { host, headers: adminHeaders, raw: { type: 'application/json', data: text } }),
  },
  {
    name: 'PUT /policy/v1/projects/{projectId} (an override)',
    outer: { settings: { deep: '__HERE__' } },
    field: 'body.settings.deep',
    limits: GENERIC,
    send: (text) => call(platform, 'put', `/policy/v1/projects/${projectId}`, { host, headers: adminHeaders, raw: { type: 'application/json', data: text } }),
  },
  {
    name: 'POST /relay/v1/device/join (manifest, tighter limits of its own)',
    outer: { key: 'platform_jk_x_y', name: 'node', manifest: { schemaVersion: 1, nodeId: 'n', name: 'n', kind: 'node', owner: { type: 'user' }, extra: '__HERE__' } },
    field: 'body.manifest.extra',
    limits: { maxDepth: 16, maxKeys: 1_000, maxStringLength: 16 * 1024 },
    send: (text) => call(platform, 'post', '/relay/v1/device/join', { host, raw: { type: 'application/json', data: text } }),
  },
  {
    name: 'POST /ingest/v1 (event data)',
    outer: envelope({ events: [{ seq: 1, id: 'e1', at: '2026-01-01T00:00:00.000Z', kind: 'tool.called', data: { deep: '__HERE__' } }] }),
    field: 'body.events[0].data.deep',
    limits: { maxDepth: 32, maxKeys: 250_000, maxStringLength: 1024 * 1024 },
    send: (text) => ingest(text),
  },
  {
    name: 'POST /ingest/v1 (audit details)',
    outer: envelope({ audit: [{ id: 'a1', at: '2026-01-01T00:00:00.000Z', actor: 'agent', action: 'tool.call', details: { deep: '__HERE__' } }] }),
    field: 'body.audit[0].details.deep',
    limits: { maxDepth: 32, maxKeys: 250_000, maxStringLength: 1024 * 1024 },
    send: (text) => ingest(text),
  },
];

function envelope(lists: Record<string, unknown[]>): Record<string, unknown> {
  return { schemaVersion: 1, projectId, workspaceId: 'ws-bounds', sentAt: '2026-01-01T00:00:00.000Z', cursors: { events: -1 }, ...lists };
}

async function ingest(text: string, target = platform, as = device, at = host): Promise<Response> {
  const headers = await deviceHeaders(as, 'POST', `http://${at}/ingest/v1`);
  return call(target, 'post', '/ingest/v1', { host: at, headers, raw: { type: 'application/json', data: text } });
}

describe.each(routes().map((route) => [route.name, route] as const))('%s', (_name, route) => {
  it(`refuses ${DEEP.toLocaleString('en')} levels of [ with json_too_complex at the depth limit`, async () => {
    const res = await route.send(splice(route.outer, deepArrays()));
    // Two containers hold the free-form field already (the body and its parent object); ingest has four.
    const levelsAbove = route.field.split(/[.[]/).length - 1;
    const expected = route.field + '[0]'.repeat(route.limits.maxDepth - levelsAbove);
    expectTooComplex(res, 'depth', route.limits.maxDepth, expected);
  });

  it('refuses deeply nested objects the same way', async () => {
    const res = await route.send(splice(route.outer, deepObjects()));
    expectTooComplex(res, 'depth', route.limits.maxDepth, new RegExp(`^${route.field.replace(/[.[\]]/g, '\\$&')}(\\.a)+$`));
  });

  it('refuses more keys than the limit', async () => {
    const res = await route.send(splice(route.outer, manyKeys(route.limits.maxKeys + 1)));
    expectTooComplex(res, 'keys', route.limits.maxKeys, route.field);
  });

  it('refuses a string longer than the limit, and a key as long', async () => {
    const value = await route.send(splice(route.outer, `{"text":${longString(route.limits.maxStringLength + 1)}}`));
    expectTooComplex(value, 'stringLength', route.limits.maxStringLength, `${route.field}.text`);
    const key = await route.send(splice(route.outer, `{${longString(route.limits.maxStringLength + 1)}:1}`));
    expectTooComplex(key, 'stringLength', route.limits.maxStringLength, new RegExp(`^${route.field.replace(/[.[\]]/g, '\\$&')}\\["x{64}…"\\]$`));
  });

  it('lets a value at the limits through to validation', async () => {
    const levelsAbove = route.field.split(/[.[]/).length - 1;
    const res = await route.send(splice(route.outer, deepArrays(route.limits.maxDepth - levelsAbove)));
    expect(res.body.error).not.toBe('json_too_complex');
    expect(res.status).toBeLessThan(500);
  });
});

describe('every JSON body, not only free-form fields', () => {
  it('bounds a body whose schema would refuse it anyway, before validation', async () => {
    const res = await call(platform, 'post', '/relay/v1/device/code', { host, raw: { type: 'application/json', data: splice({ workspaceId: 'w', name: '__HERE__' }, deepArrays()) } });
    expectTooComplex(res, 'depth', 32, `body.name${'[0]'.repeat(31)}`);
  });

  it('bounds a body that is nothing but nesting', async () => {
    const res = await call(platform, 'put', '/policy/v1/organisation', { host, headers: adminHeaders, raw: { type: 'application/json', data: deepArrays() } });
    expectTooComplex(res, 'depth', 32, `body${'[0]'.repeat(32)}`);
  });

  it('keeps 413 for byte size, checked first', async () => {
    const res = await call(platform, 'put', '/policy/v1/organisation', {
      host,
      headers: adminHeaders,
      raw: { type: 'application/json', data: splice({ settings: '__HERE__' }, deepArrays(600_000)) },
    });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it('reads the body only after authentication: a stranger gets 401, whatever the body', async () => {
    const res = await call(platform, 'put', '/policy/v1/organisation', { host, raw: { type: 'application/json', data: deepArrays() } });
    expect(res.status).toBe(401);
  });
});

describe('ingest envelopes as workbenches send them', () => {
  it('takes 5,000 items of several keys each (far over JSON_MAX_KEYS) and strings longer than JSON_MAX_STRING_LENGTH', async () => {
    const events = Array.from({ length: 4_000 }, (_, i) => ({
      seq: i,
      id: `evt-${i}`,
      at: '2026-01-01T00:00:00.000Z',
      kind: 'tool.called',
      data: { tool: 'read_file', path: `src/file-${i}.ts`, bytes: i, ok: true, tags: ['a', 'b'], timing: { startedMs: i, endedMs: i + 3 } },
    }));
    const audit = Array.from({ length: 1_000 }, (_, i) => ({
      id: `aud-${i}`,
      at: '2026-01-01T00:00:00.000Z',
      actor: 'agent',
      action: 'command.run',
      target: 'npm test',
      details: { exitCode: 0, durationMs: i, cwd: '/work' },
    }));
    events[0]!.data.path = 'x'.repeat(200_000);
    const res = await ingest(JSON.stringify(envelope({ events, audit })));
    expect(res.status).toBe(200);
    expect(res.body.accepted).toMatchObject({ events: 4_000, audit: 1_000 });
  });

  it('refuses an envelope over INGEST_MAX_KEYS (here 2,000)', async () => {
    const small = await startPlatform({ env: { INGEST_MAX_KEYS: '2000' } });
    try {
      const smallOrganisation = await createOrganisation(small);
      const smallHost = (await small.services.organisations.hostsOf(smallOrganisation.id))[0]!;
      const smallProject = (await small.services.projects.create(smallOrganisation.id, { name: 'p' })).id;
      const person = await createPerson(small, smallOrganisation.id);
      const smallDevice = await enrolDevice(small, { organisationId: smallOrganisation.id, personId: person.id });
      const events = Array.from({ length: 300 }, (_, i) => ({ seq: i, id: `e${i}`, at: '2026-01-01T00:00:00.000Z', kind: 'k', data: { a: 1, b: 2 } }));
      const text = JSON.stringify({ ...envelope({ events }), projectId: smallProject });
      const res = await ingest(text, small, smallDevice, smallHost);
      expectTooComplex(res, 'keys', 2_000, /^body\.events\[\d+\](\.data)?$/);
    } finally {
      await small.close();
    }
  });
});

describe('stored JSON read back', () => {
  it('skips a stored policy nested beyond the limits (logged, never a 500), and lists it as not valid', async () => {
    const before = await call(platform, 'get', '/policy/v1', { host, headers: adminHeaders });
    expect(before.status).toBe(200);
    const repository = platform.dataSource.getRepository(PolicyRevisionEntity);
    const newest = await repository.findOne({ where: { organisationId: organisation.id }, order: { number: 'DESC' } });
    const number = (newest?.number ?? 0) + 1;
    // Written past the service, as a bad migration or a hand edit would.
    const text = splice({ ...DEFAULT_POLICY, settings: { deep: '__HERE__' } }, deepObjects(5_000));
    await repository.insert({ id: newId('pol'), organisationId: organisation.id, projectId: null, number, document: text, publishedBy: null, createdAt: platform.clock.now() });

    const res = await call(platform, 'get', '/policy/v1', { host, headers: adminHeaders });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(before.body);
    expect(platform.logs.some((line) => line.revision === number && line.reason === 'beyond the JSON limits')).toBe(true);

    const listed = await call(platform, 'get', '/policy/v1/organisation/revisions?limit=1', { host, headers: adminHeaders });
    expect(listed.status).toBe(200);
    expect(listed.body.revisions[0]).toMatchObject({ number, valid: false, document: {} });

    const restored = await call(platform, 'post', `/policy/v1/organisation/revisions/${number}/restore`, { host, headers: adminHeaders });
    expect(restored.status).toBe(409);
    expect(restored.body.error).toBe('invalid_revision');
  });

  it('shows a stored event or audit record nested beyond the limits as unreadable, never a 500', async () => {
    const stored = await ingest(
      JSON.stringify(
        envelope({
          events: [{ seq: 90_001, id: 'deep-event', at: '2026-02-01T00:00:00.000Z', kind: 'deep.stored', data: { ok: true } }],
          audit: [{ id: 'deep-audit', at: '2026-02-01T00:00:00.000Z', actor: 'agent', action: 'deep.stored', details: { ok: true } }],
        }),
      ),
    );
    expect(stored.status).toBe(200);
    const deep = deepObjects(50_000);
    await platform.dataSource.query('UPDATE ingest_events SET data = ? WHERE event_id = ?', [deep, 'deep-event']);
    await platform.dataSource.query('UPDATE ingest_audit SET details = ? WHERE item_id = ?', [deep, 'deep-audit']);

    const events = await call(platform, 'get', '/platform/v1/ingest/events?kind=deep.stored', { host, headers: adminHeaders });
    expect(events.status).toBe(200);
    expect(events.body.items).toEqual([expect.objectContaining({ id: 'deep-event', data: { unreadable: true } })]);
    const audit = await call(platform, 'get', '/platform/v1/ingest/audit?kind=deep.stored', { host, headers: adminHeaders });
    expect(audit.status).toBe(200);
    expect(audit.body.items).toEqual([expect.objectContaining({ id: 'deep-audit', details: { unreadable: true } })]);
  });
});
