import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { systemClock } from '../../src/util/clock.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { MariaDbServer } from '../support/mariadb-server.js';
import type { TestPlatform } from '../support/platform.js';
import { LoggedService } from '../support/service-process.js';

/**
 * The database stopped under a running service (a real mariadbd of this test's own, killed and
 * started again on its port and data directory): readiness says 503, every request that needs the
 * database gets 503 `unavailable` with Retry-After (never a 500, never a stack trace, the process
 * stays up), the service recovers on its own when the database is back, and every ingest
 * envelope answered 200 is stored (200 comes only after the commit).
 */

let mariadb: MariaDbServer;
let service: LoggedService;
let origin: string;
let device: EnrolledDevice;
let projectId: string;
let env: Record<string, string>;
/** Run before the service and the database stop, whatever the test reached. */
const cleanUp: (() => Promise<void>)[] = [];

beforeAll(async () => {
  mariadb = await MariaDbServer.create();
  await mariadb.query('CREATE DATABASE platform CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
  env = { DATABASE_URL: mariadb.url('platform'), PLATFORM_BOOTSTRAP_LOCALHOST: 'false', LOG_LEVEL: 'info', RATE_LIMITS_ENABLED: 'false' };
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  const seeding = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
  const organisationId = (await seeding.services.organisations.create({ name: 'Outage', kind: 'enterprise', hosts: ['127.0.0.1'] })).id;
  const seeder = { ...seeding, dataSource, clock: systemClock } as unknown as TestPlatform;
  const personId = (await createPerson(seeder, organisationId)).id;
  projectId = (await seeding.services.projects.create(organisationId, { name: 'Outage' })).id;
  device = await enrolDevice(seeder, { organisationId, personId });
  await dataSource.destroy();

  service = new LoggedService(env);
  origin = `http://127.0.0.1:${await service.port()}`;
}, 120_000);

afterAll(async () => {
  for (const step of cleanUp) await step();
  await service?.stop();
  await mariadb?.close();
}, 30_000);

const bearer = () => ({ Authorization: `Bearer ${device.tokens.access_token}` });

function envelope(seq: number) {
  return {
    schemaVersion: 1,
    projectId,
    workspaceId: 'ws-outage',
    sentAt: new Date().toISOString(),
    cursors: { events: seq - 1 },
    events: [{ seq, id: `evt-${seq}`, at: new Date().toISOString(), kind: 'tool.called', data: { n: seq } }],
    usage: [],
    audit: [],
    tasks: [],
  };
}

async function ingest(seq: number): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> {
  const res = await fetch(`${origin}/ingest/v1`, { method: 'POST', headers: { ...bearer(), 'Content-Type': 'application/json' }, body: JSON.stringify(envelope(seq)), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get('retry-after') };
}

async function get(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${origin}${path}`, { headers, signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, retryAfter: res.headers.get('retry-after') };
}

async function storedSeqs(): Promise<number[]> {
  const dataSource = createDataSource(loadConfig(env).database);
  await dataSource.initialize();
  try {
    const rows = await dataSource.query<{ seq: number | string }[]>('SELECT seq FROM ingest_events WHERE device_id = ? ORDER BY seq', [device.device.id]);
    return rows.map((row) => Number(row.seq));
  } finally {
    await dataSource.destroy();
  }
}

describe('the database stopped mid-run', () => {
  it('answers 503 unavailable and not ready while it is away, recovers without a restart, and loses no envelope it answered 200', async () => {
    expect((await get('/platform/v1/organisation', bearer())).status).toBe(200);

    // A workbench uploading all along, resending an envelope until it is answered 200.
    const answered = new Map<number, number[]>();
    let uploading = true;
    let seq = 1;
    const uploader = (async () => {
      while (uploading) {
        const res = await ingest(seq);
        answered.set(seq, [...(answered.get(seq) ?? []), res.status]);
        if (res.status === 200) seq += 1;
        else {
          expect(res).toMatchObject({ status: 503, body: { error: 'unavailable' }, retryAfter: '1' });
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    })();
    // Whatever happens below, the uploader stops with the test (it must not outlive it).
    const stopUploader = async () => {
      uploading = false;
      await uploader.catch(() => undefined);
    };
    cleanUp.push(stopUploader);
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    await mariadb.stop();
    const ready = await get('/readyz');
    expect(ready).toMatchObject({ status: 503, body: { error: 'not_ready', checks: { database: 'unreachable' } } });
    // A device token verified less than a second ago may still be answered from the in-process
    // cache (AUTH_CACHE_*): the organisation read needs nothing else. The revocation counter is
    // read at most once a second; unreadable, it drops every cached credential, so from then on
    // the read needs the database and is refused.
    let refused = await get('/platform/v1/organisation', bearer());
    for (const deadline = Date.now() + 3_000; refused.status === 200 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      refused = await get('/platform/v1/organisation', bearer());
    }
    expect(refused).toMatchObject({ status: 503, body: { error: 'unavailable', message: 'the database is not reachable just now; try again shortly' }, retryAfter: '1' });
    expect(Object.keys(refused.body).sort()).toEqual(['error', 'message']);
    // Refused, not served from the cache again: the caches were dropped and nothing refills them.
    expect((await get('/platform/v1/organisation', bearer())).status).toBe(503);
    const refusedIngest = await ingest(10_000);
    expect(refusedIngest).toMatchObject({ status: 503, body: { error: 'unavailable' }, retryAfter: '1' });
    // What never needs the database still answers.
    expect((await get('/healthz')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    await mariadb.start();
    for (let deadline = Date.now() + 30_000; (await get('/readyz')).status !== 200; ) {
      if (Date.now() > deadline) throw new Error(`not ready 30 s after the database came back:\n${service.raw.slice(-20).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect((await get('/platform/v1/organisation', bearer())).status).toBe(200);
    const before = seq;
    for (let deadline = Date.now() + 30_000; seq < before + 5; ) {
      if (Date.now() > deadline) throw new Error('uploads did not resume after the database came back');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    uploading = false;
    await uploader;

    // Some uploads were refused while the database was away, and every one answered 200 is stored.
    const statuses = [...answered.values()].flat();
    expect(statuses).toContain(503);
    expect(new Set(statuses)).toEqual(new Set([200, 503]));
    const ok = [...answered].filter(([, list]) => list.includes(200)).map(([n]) => n);
    expect(ok.length).toBeGreaterThan(5);
    expect(await storedSeqs()).toEqual(expect.arrayContaining(ok));

    // Still the same process: it never exited; its lines say why, with no stack trace.
    expect(service.lines.some((line) => line.msg === 'platform api listening')).toBe(true);
    expect(service.lines).toEqual(expect.arrayContaining([expect.objectContaining({ level: 40, dependency: 'database', msg: 'database not reachable; request refused' })]));
    for (const line of service.raw) expect(line).not.toMatch(/"stack"|\\n\s+at /);
    expect(service.lines.filter((line) => line.msg === 'unexpected failure')).toEqual([]);
    expect(service.stderr).toBe('');
  }, 120_000);
});
