import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import { systemClock } from '../../src/util/clock.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { runCliCapturing } from '../support/cli.js';
import { TestIdentityProvider } from '../support/idp.js';
import { personHeaders, ROLE_CLAIM } from '../support/organisations.js';
import type { TestPlatform } from '../support/platform.js';
import { RedisServer } from '../support/redis-server.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { TestWorkbench } from '../support/workbench.js';

/**
 * Policy pushed across replicas (docs/api/policy-push.md): two processes of src/main.ts sharing
 * one database (MariaDB in the services project) and one Redis of this test's own. A workbench
 * holds its control channel at B; an admin publishes through A; the workbench hears of it within
 * a second, and its next `GET /policy/v1` (at B) answers the ETag the message named.
 */

let database: TestDatabase;
let redis: RedisServer;
let idp: TestIdentityProvider;
let a: ServiceProcess;
let b: ServiceProcess;
let projectId: string;
let member: EnrolledDevice;
let outsider: EnrolledDevice;
let organisationId: string;
let serviceEnv: Record<string, string>;
const open: TestWorkbench[] = [];

beforeAll(async () => {
  database = await freshDatabase();
  redis = await RedisServer.create();
  idp = await TestIdentityProvider.start({ clock: systemClock });
  const env = (serviceEnv = {
    DATABASE_URL: database.url,
    REDIS_URL: redis.url,
    SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
  });
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  const seeding = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
  organisationId = (await seeding.services.organisations.create({ name: 'Pushed', kind: 'enterprise', hosts: ['127.0.0.1'], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) })).id;
  const seeder = { ...seeding, dataSource, clock: systemClock } as unknown as TestPlatform;
  const inProject = (await createPerson(seeder, organisationId)).id;
  const notInProject = (await createPerson(seeder, organisationId)).id;
  projectId = (await seeding.services.projects.create(organisationId, { name: 'Shared', owner: inProject })).id;
  member = await enrolDevice(seeder, { organisationId, personId: inProject, name: 'Member' });
  outsider = await enrolDevice(seeder, { organisationId, personId: notInProject, name: 'Outsider' });
  await dataSource.destroy();
  [a, b] = await Promise.all([startService(env), startService(env)]);
}, 120_000);

afterAll(async () => {
  for (const workbench of open) workbench.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await idp?.close();
  await redis?.close();
  await database?.drop();
}, 30_000);

async function connect(at: ServiceProcess, device: EnrolledDevice): Promise<TestWorkbench> {
  const workbench = await TestWorkbench.connect(at.origin, device, systemClock);
  open.push(workbench);
  return workbench;
}

let edits = 0;
/** Publishes through `at`; `started` is called just before the request leaves (the admin's token is minted first). */
async function publish(at: ServiceProcess, project?: string, started: () => void = () => undefined): Promise<{ number: number; etag: string }> {
  edits += 1;
  const body = project ? { remote: { idleTimeoutMinutes: 100 + edits } } : mergeOverride(DEFAULT_POLICY, { remote: { idleTimeoutMinutes: edits } });
  const headers = { ...(await personHeaders(idp, 'admin')), 'Content-Type': 'application/json' };
  started();
  const res = await fetch(`${at.origin}${project ? `/policy/v1/projects/${project}` : '/policy/v1/organisation'}`, { method: 'PUT', headers, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return { number: ((await res.json()) as { number: number }).number, etag: JSON.parse(res.headers.get('etag')!) as string };
}

async function etagAt(at: ServiceProcess, device: EnrolledDevice, project?: string): Promise<string> {
  const res = await fetch(`${at.origin}/policy/v1${project ? `?projectId=${project}` : ''}`, { headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
  expect(res.status).toBe(200);
  return JSON.parse(res.headers.get('etag')!) as string;
}

describe('policy pushed across two replicas sharing the database and Redis', () => {
  let memberAtB: TestWorkbench;
  let outsiderAtB: TestWorkbench;

  beforeAll(async () => {
    [memberAtB, outsiderAtB] = [await connect(b, member), await connect(b, outsider)];
    // The admin's first request at each replica signs them in (the provider's keys, the person
    // made): done here, so the timings below measure the publish and its message only.
    for (const at of [a, b]) expect((await fetch(`${at.origin}/policy/v1`, { headers: await personHeaders(idp, 'admin') })).status).toBe(200);
  });

  it("reaches the workbench connected to B within a second of a publish through A; B's next GET /policy/v1 answers the new ETag", async () => {
    expect(memberAtB.notifications[0]).toMatchObject({ method: 'hello', params: { policy: { organisation: { number: null } } } });
    let started = 0;
    const published = await publish(a, undefined, () => (started = Date.now()));
    const [changed] = await memberAtB.waitFor('policy.changed', 1, 1_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(JSON.parse(changed!.text)).toEqual({ jsonrpc: '2.0', method: 'policy.changed', params: { scope: 'organisation', number: published.number, revision: published.etag } });
    expect(await etagAt(b, member)).toBe(published.etag);
    await outsiderAtB.waitFor('policy.changed', 1, 1_000);
  });

  it("carries a project's change through Redis to its members' workbenches only", async () => {
    let started = 0;
    const published = await publish(a, projectId, () => (started = Date.now()));
    const received = await memberAtB.waitFor('policy.changed', 2, 1_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(received[1]!.params).toEqual({ scope: 'project', projectId, number: published.number, revision: published.etag });
    expect(await etagAt(b, member, projectId)).toBe(published.etag);
    // After the member heard of it, an organisation publish: the outsider's next frame is that one.
    const next = await publish(a);
    const outsiders = await outsiderAtB.waitFor('policy.changed', 2, 1_000);
    expect(outsiders.map((notification) => notification.params.number)).toEqual([published.number - 1, next.number]);
    await memberAtB.waitFor('policy.changed', 3, 1_000);
  });

  it('a workbench that reconnects to A gets the current revisions in its hello, and each later publish once', async () => {
    const moved = await connect(a, member);
    expect((await memberAtB.closed).code).toBe(4000);
    const policy = moved.notifications[0]!.params.policy as { organisation: { revision: string }; projects: { projectId: string; revision: string }[] };
    expect(policy.organisation.revision).toBe(await etagAt(a, member));
    expect(policy.projects).toEqual([{ projectId, number: expect.any(Number), revision: await etagAt(a, member, projectId) }]);
    const published = await publish(b);
    const received = await moved.waitFor('policy.changed', 1, 1_000);
    expect(received.map((notification) => notification.params.number)).toEqual([published.number]);
  });

  it('tells the workbenches of a publish by the command line (another process, REDIS_URL set) within a second', async () => {
    const moved = open.at(-1)!;
    const before = moved.received('policy.changed').length;
    const dir = mkdtempSync(join(tmpdir(), 'policy-push-'));
    try {
      const file = join(dir, 'policy.json');
      writeFileSync(file, JSON.stringify(mergeOverride(DEFAULT_POLICY, { remote: { idleTimeoutMinutes: 77 } })));
      const outcome = await runCliCapturing(['policy', 'publish', '--org', organisationId, '--file', file], { env: serviceEnv });
      expect(outcome.code).toBe(0);
      expect(outcome.stderr).not.toContain('not told');
      // Within a second of the command line's end (it opens the database, publishes, then tells Redis).
      const received = await moved.waitFor('policy.changed', before + 1, 1_000);
      const changed = received.at(-1)!.params as { scope: string; number: number; revision: string };
      expect(changed.scope).toBe('organisation');
      // At once, not within the revocation counter's second: the message dropped each replica's cache first.
      expect(await etagAt(a, member)).toBe(changed.revision);
      expect(await etagAt(b, outsider)).toBe(changed.revision);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
