import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Response } from 'supertest';
import { call, createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { leakIn, leakyData, shapedToken } from '../support/leaks.js';

/**
 * Ingest redaction through the API: what a second review found stored as sent (each finding a test
 * of its own), generated envelopes checked in the stored rows, the read answers and the log, the
 * per-device rate limit and the redaction budget.
 *
 * The generated part runs REDACTION_HTTP_RUNS envelopes (default 25); the bulk of the generated
 * envelopes runs in test/unit/redaction-properties.test.ts.
 */

let platform: TestPlatform;
let idp: TestIdentityProvider;
let host: string;
let projectId: string;
let adminToken: string;
let organisationId: string;

const HTTP_RUNS = Number(process.env.REDACTION_HTTP_RUNS ?? 25);

beforeAll(async () => {
  // This file's envelopes are about what redaction finds and the loop staying free while it works,
  // not about the budget (its refusal has a platform of its own below): a budget no loaded CI
  // machine reaches, so that the 4 MiB worst case is redacted whatever the machine's load.
  platform = await startPlatform({ env: { INGEST_RATE_LIMIT_PER_MINUTE: '100000', INGEST_REDACTION_BUDGET_MS: '60000' } });
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  const organisation = await createOrganisation(platform, { name: 'Redaction Org', oidc: idp.settings({ roleClaim: 'platform_role' }) });
  organisationId = organisation.id;
  host = (await platform.services.organisations.hostsOf(organisation.id))[0]!;
  const admin = await createPerson(platform, organisation.id, 'admin');
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Main', owner: admin.id })).id;
  adminToken = await idp.mint({ sub: 'redaction-admin', claims: { platform_role: 'admin' } });
});
afterAll(async () => {
  await idp.close();
  await platform.close();
});

async function newDevice(target = platform, organisation = organisationId): Promise<EnrolledDevice> {
  const person = await createPerson(target, organisation);
  return enrolDevice(target, { organisationId: organisation, personId: person.id });
}

let workspaces = 0;

function envelope(overrides: Record<string, unknown>) {
  workspaces += 1;
  return { schemaVersion: 1, projectId, workspaceId: `ws-redaction-${workspaces}`, sentAt: platform.clock.now().toISOString(), cursors: { events: -1 }, ...overrides };
}

async function upload(device: EnrolledDevice, body: unknown, target = platform, at = host): Promise<Response> {
  return call(target, 'post', '/ingest/v1', { host: at, headers: await deviceHeaders(device, 'POST', `http://${at}/ingest/v1`), body });
}

const at = (n: number) => new Date(Date.UTC(2026, 10, 1, 12, 0, n)).toISOString();

/** Everything the service kept of a device's upload: its rows, and the console's answers for its workspace. */
async function keptOf(device: EnrolledDevice, workspaceId: string): Promise<string> {
  const rows = [
    await platform.dataSource.query('SELECT * FROM ingest_events WHERE device_id = ?', [device.device.id]),
    await platform.dataSource.query('SELECT * FROM ingest_audit WHERE device_id = ?', [device.device.id]),
    await platform.dataSource.query('SELECT * FROM ingest_tasks WHERE device_id = ?', [device.device.id]),
  ];
  const headers = { Authorization: `Bearer ${adminToken}` };
  const answers = [];
  for (const list of ['events', 'audit', 'tasks']) {
    const res = await call(platform, 'get', `/platform/v1/ingest/${list}?workspaceId=${encodeURIComponent(workspaceId)}&limit=500`, { host, headers });
    expect(res.status).toBe(200);
    answers.push(res.body);
  }
  return JSON.stringify({ rows, answers });
}

describe('what the review found stored as sent', () => {
  const secret = 'Zq8vN2kLp4XwR7tY';
  const cases: [string, unknown][] = [
    ['a value nested under a password key', { password: { value: secret } }],
    ['a value nested under a client secret', { client_secret: { current: secret } }],
    ['a header list of name and value objects', { headers: [{ name: 'X-Api-Key', value: secret }] }],
    ['a header list of pairs', { headers: [['X-Api-Key', secret]] }],
    ['a key password2', { password2: secret }],
    ['a key secrets', { secrets: secret }],
    ['a key DB_PASS', { DB_PASS: secret }],
    ['the text export DB_PASS=…', { command: `export DB_PASS=${secret}` }],
    ['password: followed by five spaces', { output: `password:     ${secret}` }],
    ['escaped JSON inside a string', { body: `{"password":"${secret}"}` }],
    ['escaped JSON inside text', { log: `sent {\\"password\\":\\"${secret}\\"} to the API` }],
  ];

  it.each(cases)('%s is redacted in the row, the read answer and the log', async (_name, data) => {
    const device = await newDevice();
    platform.logs.length = 0;
    const body = envelope({ events: [{ seq: 1, id: 'e1', at: at(1), kind: 'tool.called', data }] });
    const res = await upload(device, body);
    expect(res.status).toBe(200);
    const kept = await keptOf(device, body.workspaceId);
    expect(kept).toContain('[REDACTED:');
    expect(leakIn(kept, [secret])).toBeUndefined();
    expect(leakIn(JSON.stringify(platform.logs), [secret])).toBeUndefined();
  });

  it('a token used as an object key is replaced, and the value under it kept', async () => {
    const device = await newDevice();
    const token = fc.sample(shapedToken, { numRuns: 1, seed: 7 })[0]!;
    const body = envelope({ events: [{ seq: 1, id: 'e1', at: at(1), kind: 'tool.called', data: { [token]: { note: 'kept' }, other: 1 } }] });
    expect((await upload(device, body)).status).toBe(200);
    const kept = await keptOf(device, body.workspaceId);
    expect(leakIn(kept, [token])).toBeUndefined();
    expect(kept).toContain('kept');
  });

  it.each(['memory.lookUp', 'memory.retrieval', 'memory.look_up', 'mem0.search', 'memory.get_or_create'])(
    'a memory read spelt %s keeps its label only: details and target are dropped',
    async (action) => {
      const device = await newDevice();
      const body = envelope({
        audit: [{ id: 'a1', at: at(1), actor: 'agent', action, target: 'notes/private-plan', label: 'recalled notes', details: { content: 'the private plan' } }],
      });
      expect((await upload(device, body)).status).toBe(200);
      const [row] = await platform.dataSource.query<Record<string, unknown>[]>('SELECT action, label, target, details FROM ingest_audit WHERE device_id = ?', [device.device.id]);
      expect(row).toEqual({ action, label: 'recalled notes', target: null, details: null });
      expect(await keptOf(device, body.workspaceId)).not.toContain('private');
    },
  );
});

describe('generated envelopes', () => {
  it(`leave no secret in the rows, the read answers or the log, and keep the noise (${HTTP_RUNS} envelopes)`, async () => {
    const device = await newDevice();
    let seq = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(leakyData, { minLength: 1, maxLength: 3 }), leakyData, shapedToken, async (events, auditData, token) => {
        platform.logs.length = 0;
        const secrets = [...events.flatMap((event) => event.secrets), ...auditData.secrets, token];
        const body = envelope({
          events: events.map((event) => ({ seq: (seq += 1), id: `e${seq}`, at: at(seq % 3600), kind: 'tool.called', data: event.data })),
          audit: [{ id: `a${seq}`, at: at(seq % 3600), actor: `agent ${token}`, action: 'tool.call', label: `ran with ${token}`, details: auditData.data }],
          tasks: [{ id: `t${seq}`, title: `rotate ${token}`, status: 'pending', createdAt: at(1), updatedAt: at(1) }],
        });
        const res = await upload(device, body);
        expect(res.status).toBe(200);
        const kept = await keptOf(device, body.workspaceId);
        const leak = leakIn(kept, secrets) ?? leakIn(JSON.stringify(platform.logs), secrets);
        if (leak !== undefined) throw new Error(`"${leak}" survived (${[...events, auditData].flatMap((event) => event.shapes).join(', ')})`);
        const stored = await platform.dataSource.query<{ data: string }[]>('SELECT event_id, data FROM ingest_events WHERE workspace_id = ? ORDER BY seq', [body.workspaceId]);
        stored.forEach((row, index) => {
          const data = JSON.parse(row.data) as Record<string, unknown>;
          for (const [key, value] of Object.entries(events[index]!.noise)) expect(data[key]).toEqual(value);
        });
      }),
      { numRuns: HTTP_RUNS },
    );
  }, Math.max(30_000, HTTP_RUNS * 1_000));
});

describe('the per-device rate limit (INGEST_RATE_LIMIT_PER_MINUTE)', () => {
  it('answers 429 too_many_requests with Retry-After past the limit, for that device only', async () => {
    const limited = await startPlatform({ env: { INGEST_RATE_LIMIT_PER_MINUTE: '2' } });
    try {
      const organisation = await createOrganisation(limited, { name: 'Limited Org' });
      const limitedHost = (await limited.services.organisations.hostsOf(organisation.id))[0]!;
      const owner = await createPerson(limited, organisation.id, 'owner');
      const project = (await limited.services.projects.create(organisation.id, { name: 'P', owner: owner.id })).id;
      const body = { schemaVersion: 1, projectId: project, workspaceId: 'ws-limit', sentAt: limited.clock.now().toISOString(), cursors: { events: -1 } };
      const first = await newDevice(limited, organisation.id);
      const second = await newDevice(limited, organisation.id);
      expect((await upload(first, body, limited, limitedHost)).status).toBe(200);
      expect((await upload(first, body, limited, limitedHost)).status).toBe(200);
      const refused = await upload(first, body, limited, limitedHost);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_requests');
      expect(refused.headers['retry-after']).toBe('60');
      // Another device of the same person's organisation has its own counter.
      expect((await upload(second, body, limited, limitedHost)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('the redaction budget (INGEST_REDACTION_BUDGET_MS)', () => {
  it('answers 413 payload_too_large, storing nothing, when redaction would take longer than the budget', async () => {
    const tight = await startPlatform({ env: { INGEST_REDACTION_BUDGET_MS: '1' } });
    try {
      const organisation = await createOrganisation(tight, { name: 'Tight Org' });
      const tightHost = (await tight.services.organisations.hostsOf(organisation.id))[0]!;
      const owner = await createPerson(tight, organisation.id, 'owner');
      const project = (await tight.services.projects.create(organisation.id, { name: 'P', owner: owner.id })).id;
      const device = await newDevice(tight, organisation.id);
      const text = 'password=a1 cookie: a token: b2 '.repeat(8_000);
      const body = {
        schemaVersion: 1,
        projectId: project,
        workspaceId: 'ws-budget',
        sentAt: tight.clock.now().toISOString(),
        cursors: { events: -1 },
        events: Array.from({ length: 12 }, (_, i) => ({ seq: i, id: `e${i}`, at: at(i), kind: 'tool.called', data: { output: text } })),
      };
      const res = await upload(device, body, tight, tightHost);
      expect(res.status).toBe(413);
      expect(res.body.error).toBe('payload_too_large');
      expect(res.body.message).toContain('budget of 1 ms');
      const [count] = await tight.dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM ingest_events WHERE device_id = ?', [device.device.id]);
      expect(Number(count!.n)).toBe(0);
    } finally {
      await tight.close();
    }
  });

  it('keeps the event loop answering while a 4 MiB envelope of worst cases is redacted', async () => {
    const device = await newDevice();
    const MB = 1 << 20;
    const worst = ['cookie:', 'token: ', 'a://b:c@', 'eyJhbGci.'].map((unit) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB - 1024));
    const body = envelope({ events: worst.map((output, i) => ({ seq: i, id: `w${i}`, at: at(i), kind: 'tool.called', data: { output } })) });
    let longest = 0;
    let probes = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      probes += 1;
    }, 10);
    try {
      const res = await upload(device, body);
      expect(res.status).toBe(200);
    } finally {
      clearInterval(probe);
    }
    expect(probes).toBeGreaterThan(0);
    // Generous: the slices are 10 ms and the longest step well under 100 ms on an idle machine.
    expect(longest).toBeLessThan(1_000);
  });
});
