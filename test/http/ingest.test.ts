import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { IngestStore } from '../../src/modules/ingest/store.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let other: OrganisationRecord;
let host: string;
let projectId: string;
let otherProjectId: string;
let adminToken: string;
let memberToken: string;

const MAX_ITEMS = 50;

beforeAll(async () => {
  platform = await startPlatform({ env: { INGEST_MAX_ITEMS: String(MAX_ITEMS), INGEST_MAX_BYTES: '64kb' } });
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { name: 'Ingest Org', oidc: idp.settings({ roleClaim: 'platform_role' }) });
  other = await createOrganisation(platform, { name: 'Other Org' });
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  const admin = await createPerson(platform, organisation.id, 'admin');
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Main', owner: admin.id })).id;
  otherProjectId = (await platform.services.projects.create(other.id, { name: 'Theirs' })).id;
  adminToken = await idp.mint({ sub: 'ingest-admin', claims: { platform_role: 'admin' } });
  memberToken = await idp.mint({ sub: 'ingest-member', claims: { platform_role: 'member' } });
});
afterAll(async () => {
  await idp.close();
  await platform.close();
});

async function newDevice(options: { alg?: 'ES256'; kind?: 'workbench' | 'node' } = {}): Promise<EnrolledDevice> {
  const person = await createPerson(platform, organisation.id);
  return enrolDevice(platform, { organisationId: organisation.id, personId: person.id, ...options });
}

function event(seq: number, extra: Record<string, unknown> = {}) {
  return { seq, id: `evt-${seq}`, at: new Date(Date.UTC(2026, 10, 1, 12, 0, seq)).toISOString(), kind: 'tool.called', data: { tool: 'read_file', n: seq, ...extra } };
}

function envelope(overrides: Record<string, unknown> = {}) {
  return {
    schemaVersion: 1,
    projectId,
    workspaceId: 'ws-1',
    sentAt: platform.clock.now().toISOString(),
    cursors: { events: -1 },
    events: [] as unknown[],
    usage: [] as unknown[],
    audit: [] as unknown[],
    tasks: [] as unknown[],
    ...overrides,
  };
}

async function upload(device: EnrolledDevice, body: unknown) {
  return call(platform, 'post', '/ingest/v1', { host, headers: await deviceHeaders(device, 'POST', `http://${host}/ingest/v1`), body });
}

async function countRows(table: string, deviceId: string): Promise<number> {
  const rows = await platform.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${table} WHERE device_id = ?`, [deviceId]);
  return Number(rows[0]!.n);
}

const admin = () => ({ Authorization: `Bearer ${adminToken}` });

describe('POST /ingest/v1', () => {
  it('stores an envelope and answers counts and cursors', async () => {
    const device = await newDevice();
    const res = await upload(
      device,
      envelope({
        events: [event(1), event(2), event(3)],
        usage: [{ id: 'u1', at: '2026-11-01T12:00:00.000Z', provider: 'anthropic', model: 'claude', inputTokens: 100, outputTokens: 50, cachedTokens: 10, cost: 0.0123456789 }],
        audit: [{ id: 'a1', at: '2026-11-01T12:00:01.000Z', actor: 'agent', action: 'file.write', target: 'src/x.ts', label: 'wrote x', details: { bytes: 10 } }],
        tasks: [{ id: 't1', title: 'Fix the build', status: 'in_progress', createdAt: '2026-11-01T11:00:00.000Z', updatedAt: '2026-11-01T12:00:00.000Z' }],
      }),
    );
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      accepted: { events: 3, usage: 1, audit: 1, tasks: 1 },
      cursors: { events: 3, usage: '2026-11-01T12:00:00.000Z|u1', audit: '2026-11-01T12:00:01.000Z|a1' },
    });
    expect(await countRows('ingest_events', device.device.id)).toBe(3);
  });

  it('stores nothing again for a retried envelope, and answers the same cursors', async () => {
    const device = await newDevice();
    const body = envelope({
      events: [event(1), event(2)],
      usage: [{ id: 'u1', at: '2026-11-01T12:00:00.000Z', provider: 'openai', model: 'gpt', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 }],
      audit: [{ id: 'a1', at: '2026-11-01T12:00:00.000Z', actor: 'me', action: 'command.run' }],
      tasks: [{ id: 't1', title: 'T', status: 'pending', createdAt: '2026-11-01T11:00:00.000Z', updatedAt: '2026-11-01T11:00:00.000Z' }],
    });
    const first = await upload(device, body);
    const retry = await upload(device, body);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ accepted: { events: 0, usage: 0, audit: 0, tasks: 0 }, cursors: first.body.cursors });
    expect(await countRows('ingest_events', device.device.id)).toBe(2);
    expect(await countRows('ingest_usage', device.device.id)).toBe(1);
    expect(await countRows('ingest_audit', device.device.id)).toBe(1);
    expect(await countRows('ingest_tasks', device.device.id)).toBe(1);
  });

  it('counts only the new part of an overlapping upload', async () => {
    const device = await newDevice();
    await upload(device, envelope({ events: [1, 2, 3, 4, 5].map((n) => event(n)) }));
    const res = await upload(device, envelope({ events: [4, 5, 6, 7].map((n) => event(n)) }));
    expect(res.body.accepted.events).toBe(2);
    expect(res.body.cursors.events).toBe(7);
    expect(await countRows('ingest_events', device.device.id)).toBe(7);
  });

  it('accepts out-of-order uploads and gaps in seq without moving the cursor backwards', async () => {
    const device = await newDevice();
    const later = await upload(device, envelope({ events: [10, 11, 14].map((n) => event(n)) }));
    expect(later.body.cursors.events).toBe(14);
    const earlier = await upload(device, envelope({ events: [1, 2, 3, 12].map((n) => event(n)) }));
    expect(earlier.body.accepted.events).toBe(4);
    expect(earlier.body.cursors.events).toBe(14);
    expect(await countRows('ingest_events', device.device.id)).toBe(7);
  });

  it('keeps the usage and audit cursors at the newest item, never earlier', async () => {
    const device = await newDevice();
    const usage = (id: string, at: string) => ({ id, at, provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0.5 });
    await upload(device, envelope({ usage: [usage('b', '2026-11-02T00:00:00.000Z')], audit: [{ id: 'z', at: '2026-11-02T00:00:00.000Z', actor: 'x', action: 'y' }] }));
    const res = await upload(device, envelope({ usage: [usage('a', '2026-11-01T00:00:00.000Z')], audit: [{ id: 'a', at: '2026-11-01T00:00:00.000Z', actor: 'x', action: 'y' }] }));
    expect(res.body.accepted).toMatchObject({ usage: 1, audit: 1 });
    expect(res.body.cursors).toMatchObject({ usage: '2026-11-02T00:00:00.000Z|b', audit: '2026-11-02T00:00:00.000Z|z' });
  });

  it('keeps a task at its newest version', async () => {
    const device = await newDevice();
    const task = (status: string, updatedAt: string) => ({ id: 'task-1', title: `Task ${status}`, status, createdAt: '2026-11-01T00:00:00.000Z', updatedAt });
    expect((await upload(device, envelope({ tasks: [task('in_progress', '2026-11-01T01:00:00.000Z')] }))).body.accepted.tasks).toBe(1);
    expect((await upload(device, envelope({ tasks: [task('completed', '2026-11-01T02:00:00.000Z')] }))).body.accepted.tasks).toBe(1);
    expect((await upload(device, envelope({ tasks: [task('pending', '2026-11-01T00:30:00.000Z')] }))).body.accepted.tasks).toBe(0);
    const rows = await platform.dataSource.query<{ status: string }[]>('SELECT status FROM ingest_tasks WHERE device_id = ?', [device.device.id]);
    expect(rows).toEqual([{ status: 'completed' }]);
  });

  it('stores nothing of an envelope with an invalid item, and names the list and index', async () => {
    const device = await newDevice();
    const res = await upload(device, envelope({ events: [event(1), event(2), { ...event(3), at: 'yesterday' }] }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field: 'body.events[2].at' });
    expect(res.body.message).toContain('body.events[2].at');
    expect(await countRows('ingest_events', device.device.id)).toBe(0);
  });

  it('stores nothing when the transaction fails part-way', async () => {
    const device = await newDevice();
    const spy = jest.spyOn(IngestStore.prototype, 'saveCursors').mockRejectedValueOnce(new Error('disk full'));
    const res = await upload(device, envelope({ events: [event(1), event(2)], audit: [{ id: 'a', at: '2026-11-01T00:00:00.000Z', actor: 'x', action: 'y' }] }));
    spy.mockRestore();
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'internal_error', message: expect.any(String) });
    expect(await countRows('ingest_events', device.device.id)).toBe(0);
    expect(await countRows('ingest_audit', device.device.id)).toBe(0);
    const retry = await upload(device, envelope({ events: [event(1), event(2)] }));
    expect(retry.body.accepted.events).toBe(2);
  });

  it('refuses an unknown schemaVersion clearly', async () => {
    const device = await newDevice();
    const res = await upload(device, envelope({ schemaVersion: 2, events: [{ whatever: true }] }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'unsupported_schema_version', field: 'body.schemaVersion', supported: [1] });
  });

  it('refuses more items than the limit with 413', async () => {
    const device = await newDevice();
    const events = Array.from({ length: MAX_ITEMS + 1 }, (_, i) => event(i));
    const res = await upload(device, envelope({ events }));
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
    expect(await countRows('ingest_events', device.device.id)).toBe(0);
  });

  it('refuses an envelope over the size limit with 413, before reading it', async () => {
    const device = await newDevice();
    const res = await upload(device, envelope({ events: [event(1, { pad: 'x'.repeat(70 * 1024) })] }));
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
    const stranger = await call(platform, 'post', '/ingest/v1', { host, raw: { type: 'application/json', data: JSON.stringify(envelope({ events: [event(1, { pad: 'x'.repeat(70 * 1024) })] })) } });
    expect(stranger.status).toBe(413);
  });

  it("answers 404 for another organisation's project and for an unknown one", async () => {
    const device = await newDevice();
    expect((await upload(device, envelope({ projectId: otherProjectId, events: [event(1)] }))).status).toBe(404);
    expect((await upload(device, envelope({ projectId: 'prj_doesnotexist', events: [event(1)] }))).status).toBe(404);
    expect(await countRows('ingest_events', device.device.id)).toBe(0);
  });

  it('takes DPoP-bound tokens and nodes; refuses people and missing tokens', async () => {
    const bound = await newDevice({ alg: 'ES256' });
    expect((await upload(bound, envelope({ events: [event(1)] }))).status).toBe(200);
    const node = await newDevice({ kind: 'node' });
    expect((await upload(node, envelope({ events: [event(1)] }))).status).toBe(200);
    const person = await call(platform, 'post', '/ingest/v1', { host, headers: admin(), body: envelope() });
    expect(person.status).toBe(401);
    const nobody = await call(platform, 'post', '/ingest/v1', { host, body: envelope() });
    expect(nobody.status).toBe(401);
  });

  it('redacts credentials before storing them, and never logs them', async () => {
    const device = await newDevice();
    platform.logs.length = 0;
    const secret = 'platform_at_' + 'Q'.repeat(43);
    const res = await upload(
      device,
      envelope({
        events: [event(1, { command: `curl -H "Authorization: Bearer ${secret}" https://x`, nested: [{ env: { GITHUB_TOKEN: 'ghp_' + 'a1B2'.repeat(9) } }] })],
        audit: [
          { id: 'm1', at: '2026-11-01T00:00:00.000Z', actor: 'agent', action: 'memory.read', target: 'notes/secret-plan', label: 'project notes', details: { content: 'the plan is…' } },
          { id: 'w1', at: '2026-11-01T00:00:00.000Z', actor: 'agent', action: 'file.write', target: '.env', label: 'env', details: { line: 'password=hunter2hunter2' } },
        ],
      }),
    );
    expect(res.status).toBe(200);
    const stored = JSON.stringify(await platform.dataSource.query('SELECT data FROM ingest_events WHERE device_id = ?', [device.device.id]));
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain('ghp_a1B2');
    expect(stored).toContain('[REDACTED:');
    const audit = await platform.dataSource.query<{
      item_id: string;
      target: string | null;
      label: string | null;
      details: string | null;
    }[]>('SELECT item_id, target, label, details FROM ingest_audit WHERE device_id = ? ORDER BY item_id', [device.device.id]);
    const memory = audit.find((row) => row.item_id === 'm1')!;
    expect(memory).toMatchObject({ label: 'project notes', target: null, details: null });
    const write = audit.find((row) => row.item_id === 'w1')!;
    expect(write.details).not.toContain('hunter2hunter2');
    expect(JSON.stringify(platform.logs)).not.toContain(secret);
  });

  it('stores overlapping envelopes sent at once by several clients exactly once', async () => {
    const devices = await Promise.all([newDevice(), newDevice(), newDevice()]);
    const uploads = devices.flatMap((device) =>
      [0, 5, 10, 15].map((start) => upload(device, envelope({ events: Array.from({ length: 10 }, (_, i) => event(start + i)) }))),
    );
    const answers = await Promise.all(uploads);
    expect(answers.map((res) => res.status)).toEqual(answers.map(() => 200));
    for (const device of devices) {
      expect(await countRows('ingest_events', device.device.id)).toBe(25);
      const accepted = answers.filter((_, i) => devices[Math.floor(i / 4)] === device).reduce((sum, res) => sum + res.body.accepted.events, 0);
      expect(accepted).toBe(25);
    }
  });
});

describe('reading what was ingested (console)', () => {
  let device: EnrolledDevice;
  let readProjectId: string;

  beforeAll(async () => {
    device = await newDevice();
    readProjectId = (await platform.services.projects.create(organisation.id, { name: 'Read side' })).id;
    await upload(
      device,
      envelope({
        projectId: readProjectId,
        workspaceId: 'ws-read',
        events: Array.from({ length: 7 }, (_, i) => ({ ...event(i), kind: i % 2 ? 'agent.message' : 'tool.called' })),
        usage: [
          { id: 'r1', at: '2026-11-01T10:00:00.000Z', provider: 'anthropic', model: 'claude', inputTokens: 100, outputTokens: 10, cachedTokens: 5, cost: 0.25 },
          { id: 'r2', at: '2026-11-01T20:00:00.000Z', provider: 'anthropic', model: 'claude', inputTokens: 200, outputTokens: 20, cachedTokens: 0, cost: 0.5 },
          { id: 'r3', at: '2026-11-02T10:00:00.000Z', provider: 'openai', model: 'gpt', inputTokens: 1, outputTokens: 2, cachedTokens: 0, cost: 0.125 },
        ],
        audit: [
          { id: 'ra1', at: '2026-11-01T09:00:00.000Z', actor: 'agent', action: 'file.write', target: 'src/a.ts', label: 'wrote a' },
          { id: 'ra2', at: '2026-11-01T10:00:00.000Z', actor: 'agent', action: 'memory.read', target: 'notes', label: 'project notes', details: { query: 'q' } },
          { id: 'ra3', at: '2026-11-01T11:00:00.000Z', actor: 'usr_reader', action: 'file.write', target: 'src/b.ts' },
        ],
        tasks: [
          { id: 'rt1', title: 'Fix the build', status: 'completed', createdAt: '2026-11-01T08:00:00.000Z', updatedAt: '2026-11-01T09:00:00.000Z', completedAt: '2026-11-01T09:00:00.000Z' },
          { id: 'rt2', title: 'Write the notes', status: 'in_progress', createdAt: '2026-11-01T10:00:00.000Z', updatedAt: '2026-11-01T10:30:00.000Z' },
        ],
      }),
    );
  });

  it('pages audit records newest first, each once, the memory read by its label only', async () => {
    const first = await call(platform, 'get', '/platform/v1/ingest/audit?workspaceId=ws-read&limit=2', { host, headers: admin() });
    expect(first.status).toBe(200);
    expect(first.body.items.map((item: { id: string }) => item.id)).toEqual(['ra3', 'ra2']);
    const memoryRead = first.body.items[1];
    expect(memoryRead).toMatchObject({ action: 'memory.read', label: 'project notes' });
    expect(memoryRead.details).toBeUndefined();
    expect(memoryRead.target).toBeUndefined();
    const second = await call(platform, 'get', `/platform/v1/ingest/audit?workspaceId=ws-read&limit=2&cursor=${first.body.nextCursor}`, { host, headers: admin() });
    expect(second.body).toEqual({ items: [expect.objectContaining({ id: 'ra1' })], nextCursor: null });
    const writes = await call(platform, 'get', '/platform/v1/ingest/audit?workspaceId=ws-read&kind=file.write', { host, headers: admin() });
    expect(writes.body.items.map((item: { id: string }) => item.id)).toEqual(['ra3', 'ra1']);
  });

  it('lists tasks as last reported, by status', async () => {
    const all = await call(platform, 'get', '/platform/v1/ingest/tasks?workspaceId=ws-read', { host, headers: admin() });
    expect(all.status).toBe(200);
    expect(all.body.items.map((item: { id: string }) => item.id).sort()).toEqual(['rt1', 'rt2']);
    expect(all.body.nextCursor).toBeNull();
    const open = await call(platform, 'get', '/platform/v1/ingest/tasks?workspaceId=ws-read&kind=in_progress', { host, headers: admin() });
    expect(open.body.items).toEqual([expect.objectContaining({ id: 'rt2', title: 'Write the notes', status: 'in_progress' })]);
  });

  it('pages events newest first with a keyset cursor and filters', async () => {
    const first = await call(platform, 'get', '/platform/v1/ingest/events?workspaceId=ws-read&limit=3', { host, headers: admin() });
    expect(first.status).toBe(200);
    expect(first.body.items.map((e: { seq: number }) => e.seq)).toEqual([6, 5, 4]);
    const second = await call(platform, 'get', `/platform/v1/ingest/events?workspaceId=ws-read&limit=3&cursor=${first.body.nextCursor}`, { host, headers: admin() });
    expect(second.body.items.map((e: { seq: number }) => e.seq)).toEqual([3, 2, 1]);
    const third = await call(platform, 'get', `/platform/v1/ingest/events?workspaceId=ws-read&limit=3&cursor=${second.body.nextCursor}`, { host, headers: admin() });
    expect(third.body).toEqual({ items: [expect.objectContaining({ seq: 0 })], nextCursor: null });
    const kind = await call(platform, 'get', '/platform/v1/ingest/events?workspaceId=ws-read&kind=agent.message', { host, headers: admin() });
    expect(kind.body.items.map((e: { seq: number }) => e.seq)).toEqual([5, 3, 1]);
    const time = await call(platform, 'get', `/platform/v1/ingest/events?workspaceId=ws-read&since=${encodeURIComponent(event(5).at)}`, { host, headers: admin() });
    expect(time.body.items.map((e: { seq: number }) => e.seq)).toEqual([6, 5]);
  });

  it('summarises usage by day and model', async () => {
    const res = await call(platform, 'get', `/platform/v1/ingest/usage/summary?projectId=${readProjectId}&since=2026-11-01T00:00:00.000Z&until=2026-11-03T00:00:00.000Z`, { host, headers: admin() });
    expect(res.status).toBe(200);
    expect(res.body.rows).toEqual([
      { day: '2026-11-01', provider: 'anthropic', model: 'claude', requests: 2, inputTokens: 300, outputTokens: 30, cachedTokens: 5, cost: 0.75 },
      { day: '2026-11-02', provider: 'openai', model: 'gpt', requests: 1, inputTokens: 1, outputTokens: 2, cachedTokens: 0, cost: 0.125 },
    ]);
    const later = await call(platform, 'get', `/platform/v1/ingest/usage/summary?projectId=${readProjectId}&since=2026-11-02T00:00:00.000Z`, { host, headers: admin() });
    expect(later.body.rows.map((row: { day: string }) => row.day)).toEqual(['2026-11-02']);
  });

  it('is for owners and admins only, and refuses a forged cursor', async () => {
    for (const list of ['events', 'audit', 'tasks', 'usage/summary']) {
      const member = await call(platform, 'get', `/platform/v1/ingest/${list}`, { host, headers: { Authorization: `Bearer ${memberToken}` } });
      expect({ list, status: member.status, error: member.body.error }).toEqual({ list, status: 403, error: 'forbidden' });
    }
    const forged = await call(platform, 'get', '/platform/v1/ingest/events?cursor=bm90LWEtY3Vyc29y', { host, headers: admin() });
    expect(forged.status).toBe(400);
    expect(forged.body.field).toBe('query.cursor');
  });
});

describe('identities, times and fields stored as sent (both databases)', () => {
  it('keeps items whose ids differ only by case, and workspaces likewise', async () => {
    const device = await newDevice();
    const usage = (id: string) => ({ id, at: '2026-11-01T00:00:00.000Z', provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 });
    const res = await upload(device, envelope({ usage: [usage('abc'), usage('ABC'), usage('abć')] }));
    expect(res.body.accepted.usage).toBe(3);
    const other = await upload(device, envelope({ workspaceId: 'WS-1', events: [event(1)] }));
    expect(other.body.accepted.events).toBe(1);
    expect((await upload(device, envelope({ workspaceId: 'ws-1', events: [event(1)] }))).body.accepted.events).toBe(1);
  });

  it('refuses ids and workspaces with white space at either end', async () => {
    const device = await newDevice();
    const res = await upload(device, envelope({ events: [{ ...event(1), id: 'evt-1 ' }] }));
    expect(res.status).toBe(400);
    expect(res.body.field).toBe('body.events[0].id');
    expect((await upload(device, envelope({ workspaceId: ' ws' }))).body.field).toBe('body.workspaceId');
  });

  it('accepts a leap second as the last millisecond of its minute', async () => {
    const device = await newDevice();
    const res = await upload(device, envelope({ events: [{ ...event(1), at: '2026-12-31T23:59:60Z' }] }));
    expect(res.status).toBe(200);
    expect(res.body.accepted.events).toBe(1);
  });

  it.each([
    ['events', (at: string) => ({ events: [{ ...event(1), at }] }), 'body.events[0].at'],
    ['usage', (at: string) => ({ usage: [{ id: 'u-1', at, provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 }] }), 'body.usage[0].at'],
    ['audit', (at: string) => ({ audit: [{ id: 'a-1', at, actor: 'me', action: 'file.write' }] }), 'body.audit[0].at'],
    ['tasks', (at: string) => ({ tasks: [{ id: 't-1', title: 't', status: 'pending', createdAt: '2026-01-01T00:00:00Z', updatedAt: at }] }), 'body.tasks[0].updatedAt'],
  ] as const)('refuses %s at a time whose offset takes it out of the years a stored timestamp holds (400 naming it, never a database failure)', async (list, items, field) => {
    const device = await newDevice();
    for (const at of ['9999-12-31T23:30:00-01:00', '1000-01-01T00:30:00+01:00', '0000-01-01T00:00:00Z']) {
      const res = await upload(device, envelope(items(at)));
      expect({ at, status: res.status, error: res.body.error, field: res.body.field }).toEqual({ at, status: 400, error: 'invalid_request', field });
    }
    // The first and last instants the rule holds are stored.
    for (const at of ['1000-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '1000-01-01T05:00:00+05:00']) {
      const workspaceId = `ws-edge-${list}-${at.length}-${at.slice(0, 4)}`;
      const res = await upload(device, envelope({ ...items(at), workspaceId }));
      expect({ at, status: res.status }).toEqual({ at, status: 200 });
      if (list !== 'events') continue;
      // And they read back as the same instants.
      const read = await call(platform, 'get', `/platform/v1/ingest/events?workspaceId=${workspaceId}`, { host, headers: admin() });
      expect(read.body.items.map((item: { at: string }) => item.at)).toEqual([new Date(at).toISOString()]);
    }
  });

  it('refuses since and until out of the years a stored timestamp holds (400 naming them)', async () => {
    for (const query of ['since=9999-12-31T23:30:00-01:00', 'until=0000-01-01T00:00:00Z']) {
      const res = await call(platform, 'get', `/platform/v1/ingest/events?workspaceId=ws-read&${query.replace(/[:+]/g, encodeURIComponent)}`, { host, headers: admin() });
      expect({ query, status: res.status, error: res.body.error, field: res.body.field }).toEqual({ query, status: 400, error: 'invalid_request', field: `query.${query.split('=')[0]}` });
    }
  });

  it('redacts task titles and audit actors too, and keeps redacted labels within their column', async () => {
    const device = await newDevice();
    const token = 'ghp_' + 'a1B2'.repeat(9);
    const res = await upload(
      device,
      envelope({
        tasks: [{ id: 't-secret', title: `rotate ${token}`, status: 'pending', createdAt: '2026-11-01T00:00:00.000Z', updatedAt: '2026-11-01T00:00:00.000Z' }],
        audit: [{ id: 'a-secret', at: '2026-11-01T00:00:00.000Z', actor: `agent ${token}`, action: 'command.run', label: `${'x'.repeat(470)} password=abcdefgh` }],
      }),
    );
    expect(res.status).toBe(200);
    const stored = JSON.stringify([
      await platform.dataSource.query('SELECT title FROM ingest_tasks WHERE device_id = ?', [device.device.id]),
      await platform.dataSource.query('SELECT actor, label FROM ingest_audit WHERE device_id = ?', [device.device.id]),
    ]);
    expect(stored).not.toContain(token);
    expect(stored).toContain('[REDACTED:github_token]');
    const [row] = await platform.dataSource.query<{ label: string }[]>('SELECT label FROM ingest_audit WHERE device_id = ?', [device.device.id]);
    // The marker is longer than the password it replaced: the label is cut back to its column.
    expect(row!.label).toMatch(/^x{470} password=\[REDACTED:/);
    expect(row!.label).toHaveLength(500);
  });
});

/** A platform of its own with the default ingest limits (this file's one keeps them small), one
 * organisation, a device and a project; closed after `use`. */
async function withDefaultLimits(name: string, use: (setting: { platform: TestPlatform; host: string; device: EnrolledDevice; projectId: string }) => Promise<void>): Promise<void> {
  const large = await startPlatform();
  try {
    const org = await createOrganisation(large, { name, oidc: idp.settings({ roleClaim: 'platform_role' }) });
    const largeHost = (await large.services.organisations.hostsOf(org.id))[0]!;
    const person = await createPerson(large, org.id);
    const device = await enrolDevice(large, { organisationId: org.id, personId: person.id });
    const project = (await large.services.projects.create(org.id, { name: 'P' })).id;
    await use({ platform: large, host: largeHost, device, projectId: project });
  } finally {
    await large.close();
  }
}

describe('large event data', () => {
  it('is stored whole, not cut at 64 KB, and reads back', async () => {
    await withDefaultLimits('Large', async ({ platform: large, host: largeHost, device, projectId: project }) => {
      const text = 'word '.repeat(20_000);
      const body = { ...envelope({ projectId: project, events: [event(1, { text })] }) };
      const res = await call(large, 'post', '/ingest/v1', { host: largeHost, headers: await deviceHeaders(device, 'GET', ''), body });
      expect(res.status).toBe(200);
      const [row] = await large.dataSource.query<{ data: string }[]>('SELECT data FROM ingest_events WHERE device_id = ?', [device.device.id]);
      expect(JSON.parse(row!.data).text).toBe(text);
    });
  });
});

describe('large envelopes (several statements per list)', () => {
  it('stores every item of an envelope past 1,000 rows and 1 MB, once, and a retry stores nothing again', async () => {
    await withDefaultLimits('Many', async ({ platform: large, host: largeHost, device, projectId: project }) => {
      // 2,500 small events (past 1,000 rows a statement), then 12 of 150 KB (past 1 MB of values a statement).
      const events = Array.from({ length: 2_512 }, (_, index) => event(index + 1, index >= 2_500 ? { text: `${index} `.padEnd(150_000, 'x') } : {}));
      const body = envelope({ projectId: project, events });
      const send = async () => call(large, 'post', '/ingest/v1', { host: largeHost, headers: await deviceHeaders(device, 'POST', `http://${largeHost}/ingest/v1`), body });
      const first = await send();
      expect(first.status).toBe(200);
      expect(first.body.accepted.events).toBe(2_512);
      expect(first.body.cursors.events).toBe(2_512);
      const rows = await large.dataSource.query<{ seq: number | string; data: string }[]>('SELECT seq, data FROM ingest_events WHERE device_id = ? ORDER BY seq', [device.device.id]);
      expect(rows.map((row) => Number(row.seq))).toEqual(events.map((item) => item.seq));
      expect(rows.map((row) => JSON.parse(row.data) as unknown)).toEqual(events.map((item) => item.data));
      const retry = await send();
      expect(retry.status).toBe(200);
      expect(retry.body.accepted.events).toBe(0);
      expect(Number((await large.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM ingest_events WHERE device_id = ?', [device.device.id]))[0]!.n)).toBe(2_512);
    });
  });
});

describe("memory reads by the rule of the organisation's policy", () => {
  /** Which of `actions` were stored as memory reads (label only) when uploaded for `project`. */
  async function memoryReads(project: string, actions: string[]): Promise<string[]> {
    const device = await newDevice();
    const audit = actions.map((action, i) => ({ id: `mr-${i}`, at: '2026-11-02T00:00:00.000Z', actor: 'agent', action, target: 'key', label: action, details: { content: 'remembered text' } }));
    const res = await upload(device, envelope({ projectId: project, audit }));
    expect(res.status).toBe(200);
    const rows = await platform.dataSource.query<{
      action: string;
      target: string | null;
      details: string | null;
    }[]>('SELECT action, target, details FROM ingest_audit WHERE device_id = ?', [device.device.id]);
    expect(rows).toHaveLength(actions.length);
    for (const row of rows) expect(row.target === null).toBe(row.details === null);
    return rows.filter((row) => row.details === null).map((row) => row.action).sort();
  }

  const ACTIONS = ['memory.read', 'read_memory', 'memory.semantic_search', 'knowledge.query', 'kb.search', 'export.memories', 'vector.lookup', 'journal.read', 'memory.list', 'notes.search', 'file.read', 'memory.write'];

  async function publishAs(path: string, body: unknown): Promise<void> {
    const res = await call(platform, 'put', path, { host, headers: admin(), body });
    expect(res.status).toBe(200);
  }

  it('applies the built-in rule while the policy adds nothing', async () => {
    expect(await memoryReads(projectId, ACTIONS)).toEqual(
      ['export.memories', 'kb.search', 'knowledge.query', 'memory.list', 'memory.read', 'memory.semantic_search', 'read_memory', 'vector.lookup'].sort(),
    );
  });

  it("follows the organisation's audit.memoryReads from its next upload, and a project's override over it", async () => {
    const current = await call(platform, 'get', '/policy/v1', { host, headers: admin() });
    const policy = { ...current.body.policy, audit: { memoryReads: { stores: ['journal'], include: [], exclude: ['memory.list'] } } };
    await publishAs('/policy/v1/organisation', policy);
    expect(await memoryReads(projectId, ACTIONS)).toEqual(
      ['export.memories', 'journal.read', 'kb.search', 'knowledge.query', 'memory.read', 'memory.semantic_search', 'read_memory', 'vector.lookup'].sort(),
    );

    const notes = (await platform.services.projects.create(organisation.id, { name: 'Notes' })).id;
    await publishAs(`/policy/v1/projects/${notes}`, { audit: { memoryReads: { include: ['notes.*'] } } });
    const withNotes = await memoryReads(notes, ACTIONS);
    expect(withNotes).toContain('notes.search');
    // The override replaced the organisation's lists it names (arrays replace), and kept the others.
    expect(withNotes).toContain('journal.read');
    expect(withNotes).not.toContain('memory.list');
    // The organisation's other projects are unchanged.
    expect(await memoryReads(projectId, ['notes.search'])).toEqual([]);
  });

  it('refuses a malformed memoryReads section, naming the field', async () => {
    const res = await call(platform, 'put', `/policy/v1/projects/${projectId}`, { host, headers: admin(), body: { audit: { memoryReads: { include: ['notes(.*'] } } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field: 'body.audit.memoryReads.include[0]' });
  });
});
