import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger } from '../../src/logger.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { buildAdminServices } from '../../src/admin-services.js';
import { CLI_ACTOR } from '../../src/audit.js';
import { ReplicaConnection } from '../../src/db/read-replica.js';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import { ManualClock } from '../../src/util/clock.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { TestIdentityProvider } from '../support/idp.js';
import { MariaDbServer } from '../support/mariadb-server.js';
import { freePort } from '../support/redis-server.js';
import { LoggedService } from '../support/service-process.js';
import { personHeaders, twoOrganisations } from '../support/organisations.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';
import { mintSession, startCloud } from '../support/cloud.js';

/**
 * DATABASE_READ_URL on a real MariaDB primary and replica (two private mariadbd, binary-log
 * replication): the hot reads go to the replica while it is current, and a replica that lags never
 * lets a revoked token through. The replica is made to lag by stopping its SQL thread: it still
 * receives the primary's changes but applies none of them until it is started again.
 */

let primary: MariaDbServer;
let replica: MariaDbServer;
let connection: ReplicaConnection;
let platform: TestPlatform;
let idp: TestIdentityProvider;
let otherIdp: TestIdentityProvider;
let host: string;
let organisationId: string;
let databaseName: string;
const clock = new ManualClock(Date.now());

async function replicaCaughtUp(): Promise<void> {
  const [status] = await primary.query<{ File: string; Position: number }>('SHOW MASTER STATUS');
  await replica.query(`SELECT MASTER_POS_WAIT('${status!.File}', ${status!.Position}, 30)`);
}

async function lagging(run: () => Promise<void>): Promise<void> {
  await replica.query('STOP SLAVE SQL_THREAD');
  try {
    await run();
  } finally {
    await replica.query('START SLAVE SQL_THREAD');
  }
}

async function readsOf(server: 'replica' | 'primary', kind: 'credential' | 'settled'): Promise<number> {
  const metrics = await request(platform.app).get('/metrics').set('Host', '10.0.0.1:3000');
  const line = (metrics.text).split('\n').find((one) => one.startsWith(`platform_database_reads_total{server="${server}",kind="${kind}"}`));
  return Number(line?.split(' ').at(-1) ?? 0);
}

async function selectsOn(server: MariaDbServer): Promise<number> {
  const [row] = await server.query<{ Value: string }>("SHOW GLOBAL STATUS LIKE 'Com_select'");
  return Number(row!.Value);
}

async function policyAs(device: EnrolledDevice) {
  return call(platform, 'get', '/policy/v1', { host, headers: await deviceHeaders(device, 'GET', `http://${host}/policy/v1`) });
}

beforeAll(async () => {
  [primary, replica] = await Promise.all([
    MariaDbServer.create(['--character-set-server=utf8mb4', '--collation-server=utf8mb4_general_ci', '--server-id=1', '--log-bin=primary-bin', '--binlog-format=ROW']),
    MariaDbServer.create(['--character-set-server=utf8mb4', '--collation-server=utf8mb4_general_ci', '--server-id=2', '--read-only=ON']),
  ]);
  // Replication from the primary's first binary log: everything made from here on reaches the replica.
  const [status] = await primary.query<{ File: string; Position: number }>('SHOW MASTER STATUS');
  await replica.query(
    `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_LOG_FILE='${status!.File}', MASTER_LOG_POS=${status!.Position}, MASTER_USE_GTID=no`,
  );
  await replica.query('START SLAVE');
  // The service reads the replica as a user that can only read (as an operator would set it up).
  await primary.query("CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'read-only-password'");
  await primary.query("CREATE USER 'reader'@'localhost' IDENTIFIED BY 'read-only-password'");

  platform = await startPlatform({
    mariadbServer: `mariadb://root@127.0.0.1:${primary.port}`,
    clock,
    // The platform holds this; the connection is opened once its database has a name.
    readReplica: { get current() {
      return connection?.current;
    } },
    // Every request reads: what a cache would hide is what this test looks at.
    env: { AUTH_CACHE_MAX_ENTRIES: '0' },
  });
  databaseName = new URL(platform.database.url.replace(/^mariadb:/, 'mysql:')).pathname.slice(1);
  await primary.query(`GRANT SELECT ON \`${databaseName}\`.* TO 'reader'@'127.0.0.1', 'reader'@'localhost'`);
  await replicaCaughtUp();
  const config = loadConfig({
    DATABASE_URL: `mariadb://root@127.0.0.1:${primary.port}/${databaseName}`,
    DATABASE_READ_URL: `mariadb://reader:read-only-password@127.0.0.1:${replica.port}/${databaseName}`,
  });
  connection = new ReplicaConnection(config.databaseRead!, createLogger('silent'));
  await connection.start();
  expect(connection.current?.isInitialized).toBe(true);
  const orgs = await twoOrganisations(platform, clock);
  ({ idp, otherIdp, host } = orgs);
  organisationId = orgs.organisation.id;
  await replicaCaughtUp();
}, 180_000);

afterAll(async () => {
  await connection?.stop();
  await platform?.close();
  await Promise.all([idp?.close(), otherIdp?.close()]);
  await Promise.all([primary?.stop(), replica?.stop()]);
}, 60_000);

describe('DATABASE_READ_URL on a MariaDB replica', () => {
  it('reads a current device token on the replica, not the primary', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    const before = { replica: await readsOf('replica', 'credential'), primary: await readsOf('primary', 'credential'), selects: await selectsOn(replica) };
    for (let i = 0; i < 10; i++) expect((await policyAs(device)).status).toBe(200);
    expect((await readsOf('replica', 'credential')) - before.replica).toBe(10);
    expect((await readsOf('primary', 'credential')) - before.primary).toBe(0);
    // Counted by the replica's server too: its statements, not only the service's bookkeeping.
    expect((await selectsOn(replica)) - before.selects).toBeGreaterThanOrEqual(10);
  });

  it('refuses a revoked token at once while the replica still says it is valid', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    expect((await policyAs(device)).status).toBe(200);
    await lagging(async () => {
      const revoked = await call(platform, 'delete', `/platform/v1/devices/${device.device.id}`, { host, headers: await personHeaders(idp, 'admin') });
      expect(revoked.status).toBe(204);
      // The replica has not applied the revocation: it would still admit the token.
      const [row] = await replica.query<{ revoked_at: unknown }>(`SELECT revoked_at FROM \`${databaseName}\`.devices WHERE id = '${device.device.id}'`);
      expect(row!.revoked_at).toBeNull();
      const refused = await policyAs(device);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('unauthorized');
      // ... and it stays refused however many times it is tried while the replica lags.
      for (let i = 0; i < 5; i++) expect((await policyAs(device)).status).toBe(401);
    });
  });

  it('refuses a token revoked by another process (no Redis) within a second, while the replica lags', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    expect((await policyAs(device)).status).toBe(200);
    // The command line's own connection to the primary: this process hears nothing of it.
    const other = createDataSource(platform.config.database);
    await other.initialize();
    try {
      await lagging(async () => {
        await other.query('UPDATE devices SET revoked_at = ? WHERE id = ?', [new Date(clock.now().getTime()), device.device.id]);
        // RevocationSubscriber does not see raw SQL: move the counter as a TypeORM change would.
        await other.query('UPDATE auth_revocations SET counter = counter + 1 WHERE id = 1');
        clock.advance(1_000);
        expect((await policyAs(device)).status).toBe(401);
      });
    } finally {
      await other.destroy();
    }
  });

  it('admits a token issued a moment ago, which the lagging replica does not have yet', async () => {
    const person = await createPerson(platform, organisationId);
    await lagging(async () => {
      const device = await enrolDevice(platform, { organisationId, personId: person.id });
      const primaryBefore = await readsOf('primary', 'credential');
      expect((await policyAs(device)).status).toBe(200);
      expect((await readsOf('primary', 'credential')) - primaryBefore).toBe(1);
    });
  });

  it("serves another process's policy publish at once, from the primary until the replica has it, then from the replica", async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    // The command line's publish, through its own connection: this process has nothing of it cached.
    const other = createDataSource(platform.config.database);
    await other.initialize();
    const commandLine = buildAdminServices({ config: platform.config, dataSource: other, clock, logger: createLogger('silent') });
    const publish = async (host: string) =>
      (await commandLine.policies.publishOrganisation(organisationId, CLI_ACTOR, mergeOverride(DEFAULT_POLICY, { network: { denyHosts: [host] } }))) as { revision?: string };
    try {
      await replicaCaughtUp();
      await lagging(async () => {
        await publish('lagging.example.test');
        const onPrimary = await readsOf('primary', 'settled');
        const served = await policyAs(device);
        expect(served.status).toBe(200);
        expect(JSON.stringify(served.body.policy)).toContain('lagging.example.test');
        expect((await readsOf('primary', 'settled')) - onPrimary).toBe(1);
      });
      await publish('caught-up.example.test');
      await replicaCaughtUp();
      const onReplica = await readsOf('replica', 'settled');
      const served = await policyAs(device);
      expect(JSON.stringify(served.body.policy)).toContain('caught-up.example.test');
      expect((await readsOf('replica', 'settled')) - onReplica).toBe(1);
    } finally {
      await other.destroy();
    }
  });

  it('keeps answering from the primary when the replica stops, and reads it again once it is back', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    // A second on: the counters are read again (the replica was seen behind by the test before).
    clock.advance(1_000);
    const inUse = await readsOf('replica', 'credential');
    expect((await policyAs(device)).status).toBe(200);
    expect((await readsOf('replica', 'credential')) - inUse).toBe(1);
    await replica.stop();
    try {
      const primaryBefore = await readsOf('primary', 'credential');
      for (let i = 0; i < 3; i++) expect((await policyAs(device)).status).toBe(200);
      expect((await readsOf('primary', 'credential')) - primaryBefore).toBe(3);
    } finally {
      await replica.start();
    }
    await replicaCaughtUp();
    // Left alone 5 s after the failure (the platform's clock), then tried again.
    clock.advance(5_000);
    const replicaBefore = await readsOf('replica', 'credential');
    for (let i = 0; i < 3; i++) expect((await policyAs(device)).status).toBe(200);
    expect((await readsOf('replica', 'credential')) - replicaBefore).toBe(3);
    // Said once, with the reason and never the URL (it holds the reader's password).
    const warnings = platform.logs.filter((line) => line.dependency === 'database-read' && line.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.reason).toBe('ECONNREFUSED');
    expect(JSON.stringify(warnings)).not.toContain('read-only-password');
    expect(platform.logs.filter((line) => line.dependency === 'database-read' && line.level === 30)).toHaveLength(1);
  });

  it('answers from the primary within the replica timeout when the replica hangs', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    clock.advance(10_000);
    expect((await policyAs(device)).status).toBe(200);
    replica.freeze(true);
    try {
      clock.advance(1_000);
      const primaryBefore = await readsOf('primary', 'credential');
      const started = Date.now();
      expect((await policyAs(device)).status).toBe(200);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect((await readsOf('primary', 'credential')) - primaryBefore).toBe(1);
    } finally {
      replica.freeze(false);
    }
    await replicaCaughtUp();
    clock.advance(5_000);
  });

  it('refuses a Cloud session token at once after sign-out while the replica lags, and reads current ones on the replica', async () => {
    let cloudConnection: ReplicaConnection | undefined;
    const cloud = await startCloud({
      mariadbServer: `mariadb://root@127.0.0.1:${primary.port}`,
      clock,
      readReplica: { get current() {
        return cloudConnection?.current;
      } },
      env: { AUTH_CACHE_MAX_ENTRIES: '0' },
    });
    try {
      const name = new URL(cloud.database.url.replace(/^mariadb:/, 'mysql:')).pathname.slice(1);
      await primary.query(`GRANT SELECT ON \`${name}\`.* TO 'reader'@'127.0.0.1', 'reader'@'localhost'`);
      await replicaCaughtUp();
      const config = loadConfig({ DATABASE_URL: `mariadb://root@127.0.0.1:${primary.port}/${name}`, DATABASE_READ_URL: `mariadb://reader:read-only-password@127.0.0.1:${replica.port}/${name}` });
      cloudConnection = new ReplicaConnection(config.databaseRead!, createLogger('silent'));
      await cloudConnection.start();
      expect(cloudConnection.current?.isInitialized).toBe(true);
      const session = await mintSession(cloud, 'replica-reader@example.test');
      await replicaCaughtUp();
      const me = () => call(cloud, 'get', '/cloud/v1/me', { headers: { Authorization: `Bearer ${session.access_token}` } });
      const selects = await selectsOn(replica);
      expect((await me()).status).toBe(200);
      expect((await selectsOn(replica)) - selects).toBeGreaterThanOrEqual(1);
      await lagging(async () => {
        expect((await call(cloud, 'post', '/auth/v1/logout', { headers: { Authorization: `Bearer ${session.access_token}` } })).status).toBe(204);
        const [row] = await replica.query<{ ended_at: unknown }>(`SELECT ended_at FROM \`${name}\`.cloud_sessions WHERE person_id = '${session.personId}'`);
        expect(row!.ended_at).toBeNull();
        expect((await me()).status).toBe(401);
      });
    } finally {
      await cloudConnection?.stop();
      await cloud.close();
    }
  });

  it('is opened by the service process itself: a replica it cannot reach is waited for beside the service, never in its way', async () => {
    const person = await createPerson(platform, organisationId);
    const device = await enrolDevice(platform, { organisationId, personId: person.id });
    await replicaCaughtUp();
    const get = (port: number, path: string, headers: Record<string, string>) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path, headers: { Host: host, ...headers } }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        });
        req.on('error', reject);
        req.end();
      });
    const env = (readUrl: string) => ({
      DATABASE_URL: `mariadb://root@127.0.0.1:${primary.port}/${databaseName}`,
      DATABASE_READ_URL: readUrl,
      MIGRATE_ON_START: 'false',
      PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
      AUTH_CACHE_MAX_ENTRIES: '0',
    });
    const closedPort = await freePort();
    const unreachable = new LoggedService(env(`mariadb://reader:read-only-password@127.0.0.1:${closedPort}/${databaseName}`));
    try {
      const port = await unreachable.port();
      expect((await get(port, '/policy/v1', await deviceHeaders(device, 'GET', `http://${host}/policy/v1`))).status).toBe(200);
      const warning = await unreachable.until(() => unreachable.lines.find((line) => line.dependency === 'database-read'), 'the replica warning');
      expect(warning).toMatchObject({ level: 40, reason: 'ECONNREFUSED' });
      expect(unreachable.raw.join('\n')).not.toContain('read-only-password');
    } finally {
      await unreachable.stop();
    }
    const reaching = new LoggedService(env(`mariadb://reader:read-only-password@127.0.0.1:${replica.port}/${databaseName}`));
    try {
      const port = await reaching.port();
      await reaching.until(() => reaching.lines.find((line) => line.dependency === 'database-read' && line.level === 30), 'the replica connected');
      expect((await get(port, '/policy/v1', await deviceHeaders(device, 'GET', `http://${host}/policy/v1`))).status).toBe(200);
      const metrics = await get(port, '/metrics', {});
      expect(metrics.text).toMatch(/^platform_database_reads_total\{server="replica",kind="credential"\} 1$/m);
    } finally {
      await reaching.stop();
    }
  });
});
