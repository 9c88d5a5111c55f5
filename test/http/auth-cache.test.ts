import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { buildApp, type Platform } from '../../src/app.js';
import { loadConfig, type DatabaseConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { CLI_ACTOR } from '../../src/audit.js';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import { freshDatabase, usingMariadb, type TestDatabase } from '../support/database.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import type { TestPlatform } from '../support/platform.js';
import { RedisServer } from '../support/redis-server.js';

// The caches of verified credentials (src/auth/auth-cache.ts, on by default: AUTH_CACHE_*) and
// their invalidation (src/auth/revocations.ts). Two platform instances share one database, as two
// replicas (or a replica and the command line) do: a revocation made on one is refused on the
// very next request there, and on the other within a second, through Redis when both have it and
// through the revocation counter when they do not. Clocks are moved instead of waiting.

interface Instance {
  platform: Platform;
  dataSource: DataSource;
  clock: ManualClock;
  redis?: Redis;
  close(): Promise<void>;
}

let database: TestDatabase;
let directory: string | undefined;
let redisServer: RedisServer;
let idp: TestIdentityProvider;
const started: Instance[] = [];

async function instance(options: { redis?: boolean; clock?: ManualClock } = {}): Promise<Instance> {
  const config = loadConfig({ PLATFORM_DEPLOYMENT: 'self-hosted', LOG_LEVEL: 'silent', OIDC_ALLOW_HTTP_LOOPBACK: 'true', OIDC_JWKS_COOLDOWN_MS: '0', DATABASE_URL: database.url });
  const dataSource = createDataSource(database.config);
  await dataSource.initialize();
  await dataSource.runMigrations();
  const clock = options.clock ?? new ManualClock(Date.now());
  const redis = options.redis ? new Redis(redisServer.url, { lazyConnect: false, maxRetriesPerRequest: 1 }) : undefined;
  const platform = buildApp({ config, dataSource, clock, logger: createLogger('silent'), redis });
  await platform.start();
  const made: Instance = {
    platform,
    dataSource,
    clock,
    ...(redis ? { redis } : {}),
    close: async () => {
      await platform.stop();
      redis?.disconnect();
      await dataSource.destroy();
    },
  };
  started.push(made);
  return made;
}

/** What the test helpers (enrolDevice, createPerson) need of a platform. */
const asTestPlatform = (made: Instance) => ({ ...made.platform, clock: made.clock, dataSource: made.dataSource }) as unknown as TestPlatform;

async function policyRead(made: Instance, host: string, device: EnrolledDevice): Promise<number> {
  const headers = await deviceHeaders(device, 'GET', `http://${host}/policy/v1`);
  let test = request(made.platform.app).get('/policy/v1').set('Host', host);
  for (const [name, value] of Object.entries(headers)) test = test.set(name, value);
  return (await test).status;
}

/** The policy revision A (or B) serves the device now (the answer's ETag). */
async function policyRevision(made: Instance, hostName: string, device: EnrolledDevice): Promise<string> {
  const headers = await deviceHeaders(device, 'GET', `http://${hostName}/policy/v1`);
  const res = await request(made.platform.app).get('/policy/v1').set('Host', hostName).set(headers);
  expect(res.status).toBe(200);
  expect(res.headers.etag).toBe(`"${res.body.revision as string}"`);
  return res.body.revision as string;
}

let published = 0;
/** Publishes a new organisation policy through `made`'s services, as the API and the CLI do. */
async function publishNew(made: Instance, organisationId: string): Promise<string> {
  published += 1;
  const outcome = await made.platform.services.policies.publishOrganisation(organisationId, CLI_ACTOR, mergeOverride(DEFAULT_POLICY, { network: { denyHosts: [`cache-${published}.example.test`] } }));
  expect(outcome.changed).toBe(true);
  return outcome.revision;
}

async function organisationRead(made: Instance, host: string, token: string): Promise<number> {
  return (await request(made.platform.app).get('/platform/v1/organisation').set('Host', host).set('Authorization', `Bearer ${token}`)).status;
}

/** Until `check` holds (a Redis message is on its way), at most `ms`. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let a: Instance;
let b: Instance;
let organisation: OrganisationRecord;
let host: string;

beforeAll(async () => {
  if (usingMariadb()) {
    database = await freshDatabase();
  } else {
    // Two instances need one database they can both open: a file, as the embedded default is.
    directory = mkdtempSync(join(tmpdir(), 'platform-auth-cache-'));
    const location = join(directory, 'platform.sqlite');
    const config: DatabaseConfig = { kind: 'sqlite', flavour: 'mysql', location };
    database = { config, url: `sqlite:${location}`, drop: async () => undefined };
  }
  redisServer = await RedisServer.create();
  a = await instance({ redis: true });
  idp = await TestIdentityProvider.start({ clock: a.clock });
  organisation = await a.platform.services.organisations.create({ name: 'Cached', kind: 'enterprise', hosts: ['cached.test'], oidc: idp.settings() });
  host = 'cached.test';
  b = await instance({ redis: true, clock: a.clock });
});

afterAll(async () => {
  for (const made of started.splice(0).reverse()) await made.close();
  await idp?.close();
  await redisServer?.stop();
  await database?.drop();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe('the same instance', () => {
  it('keeps verified device and person tokens (bounded, sizes readable) and refuses a revoked device token on the very next request', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    expect(await policyRead(a, host, device)).toBe(200);
    expect(a.platform.cacheSizes().deviceTokens).toBeGreaterThan(0);
    expect(await policyRead(a, host, device)).toBe(200);

    await a.platform.services.deviceTokens.revokeDevice(device.device.id);
    expect(a.platform.cacheSizes().deviceTokens).toBe(0);
    expect(await policyRead(a, host, device)).toBe(401);
  });

  it('refuses a removed member (person token, and their device) on the very next request', async () => {
    const token = await idp.mint({ sub: 'cached-leaver', claims: { email: 'leaver@example.test' } });
    expect(await organisationRead(a, host, token)).toBe(200);
    expect(a.platform.cacheSizes().personTokens).toBeGreaterThan(0);
    const personId = (await a.dataSource.query<{ person_id: string }[]>('SELECT person_id FROM person_identities WHERE subject = ?', ['cached-leaver']))[0]!.person_id;
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId });
    expect(await policyRead(a, host, device)).toBe(200);
    expect(await organisationRead(a, host, token)).toBe(200);

    await a.platform.services.organisations.removeMember(organisation.id, personId);
    expect(await organisationRead(a, host, token)).toBe(401);
    expect(await policyRead(a, host, device)).toBe(401);
  });

  it('refuses a deleted device with a DPoP-bound token on the very next request, proofs still checked on every request', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id, alg: 'Ed25519' });
    expect(await policyRead(a, host, device)).toBe(200);
    // Cached, and still a proof per request: the same proof twice is a replay.
    const headers = await deviceHeaders(device, 'GET', `http://${host}/policy/v1`);
    const first = await request(a.platform.app).get('/policy/v1').set('Host', host).set(headers);
    const replay = await request(a.platform.app).get('/policy/v1').set('Host', host).set(headers);
    expect([first.status, replay.status]).toEqual([200, 401]);
    expect(replay.body.error).toBe('invalid_dpop_proof');

    // The device row itself deleted (its tokens go with it: the foreign key cascades).
    await a.dataSource.getRepository(DeviceEntity).delete({ id: device.device.id });
    expect(await policyRead(a, host, device)).toBe(401);
  });
});

describe('the newest policy publish numbers (kept like a verified token)', () => {
  it('on the same instance: a publish is served on the very next request', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    const before = await policyRevision(a, host, device);
    expect(a.platform.cacheSizes().policyLatestNumbers).toBeGreaterThan(0);
    expect(await policyRevision(a, host, device)).toBe(before);

    const revision = await publishNew(a, organisation.id);
    expect(revision).not.toBe(before);
    expect(await policyRevision(a, host, device)).toBe(revision);
  });

  it('with Redis: a publish on B is served by A as soon as the message arrives, without moving any clock', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    const before = await policyRevision(a, host, device);
    expect(await policyRevision(a, host, device)).toBe(before);

    const revision = await publishNew(b, organisation.id);
    expect(await within(1_000, async () => (await policyRevision(a, host, device)) === revision)).toBe(true);
  });

  it('without Redis (the command line): a publish reaches A within one second, through the counter', async () => {
    const cli = await instance({ clock: a.clock });
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    a.clock.advance(1_000);
    const before = await policyRevision(a, host, device);

    const revision = await publishNew(cli, organisation.id);
    a.clock.advance(500);
    expect(await policyRevision(a, host, device)).toBe(before);
    a.clock.advance(500);
    expect(await policyRevision(a, host, device)).toBe(revision);
  });

  it('a read that began before a publish committed does not keep what it read', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    await policyRevision(a, host, device);
    // A publish lands between a poll's database read and its storing of the numbers: the stale
    // numbers are not stored, and the next poll reads the database again.
    const revocations = a.platform.revocations;
    const generation = revocations.generation;
    const revision = await publishNew(a, organisation.id);
    expect(revocations.generation).toBeGreaterThan(generation);
    expect(a.platform.cacheSizes().policyLatestNumbers).toBe(0);
    expect(await policyRevision(a, host, device)).toBe(revision);
  });
});

describe('another instance on the same database', () => {
  it('with Redis: a device revoked on B is refused on A as soon as the message arrives, without moving any clock', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    expect(await policyRead(a, host, device)).toBe(200);
    // A reads the counter now, so the counter alone cannot be what refuses it below.
    expect(await policyRead(a, host, device)).toBe(200);

    await b.platform.services.deviceTokens.revokeDevice(device.device.id);
    expect(await within(1_000, async () => (await policyRead(a, host, device)) === 401)).toBe(true);
  });

  it('without Redis (the command line on the embedded database): a removed member reaches A within one second, through the counter', async () => {
    // A third instance with no Redis, on A's clock: what `platform person remove` builds.
    const cli = await instance({ clock: a.clock });
    const token = await idp.mint({ sub: 'cached-cli-leaver', claims: { email: 'cli-leaver@example.test' } });
    expect(await organisationRead(a, host, token)).toBe(200);
    const personId = (await a.dataSource.query<{ person_id: string }[]>('SELECT person_id FROM person_identities WHERE subject = ?', ['cached-cli-leaver']))[0]!.person_id;
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId });
    // Both cached on A, and A has just read the counter (the first reading of a second).
    a.clock.advance(1_000);
    expect(await policyRead(a, host, device)).toBe(200);
    expect(await organisationRead(a, host, token)).toBe(200);

    // The CLI instance has no Redis: nothing tells A but the counter.
    await cli.platform.services.organisations.removeMember(organisation.id, personId);
    // Within the second A still answers from its cache (that is the bound), …
    a.clock.advance(500);
    expect(await organisationRead(a, host, token)).toBe(200);
    // … and once the second since its last reading is up, the next request reads the counter.
    a.clock.advance(500);
    expect(await organisationRead(a, host, token)).toBe(401);
    expect(await policyRead(a, host, device)).toBe(401);
  });

  it('tells the other replicas of a change once, at its commit, and nothing of one rolled back', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
    await settle();

    // Rolled back: this replica forgets its caches (it may have read its own uncommitted rows),
    // the other hears nothing.
    const aBefore = a.platform.revocations.generation;
    let bBefore = b.platform.revocations.generation;
    await expect(
      a.dataSource.transaction(async (manager) => {
        await manager.getRepository(DeviceEntity).update({ id: device.device.id }, { revokedAt: new Date() });
        throw new Error('rolled back on purpose');
      }),
    ).rejects.toThrow('rolled back on purpose');
    await settle();
    expect(a.platform.revocations.generation).toBeGreaterThan(aBefore);
    expect(b.platform.revocations.generation).toBe(bBefore);
    expect(await policyRead(a, host, device)).toBe(200);

    // Committed inside a transaction: one message to the other replica, at the commit.
    bBefore = b.platform.revocations.generation;
    await a.dataSource.transaction(async (manager) => {
      await manager.getRepository(DeviceEntity).update({ id: device.device.id }, { revokedAt: new Date() });
      await settle();
      expect(b.platform.revocations.generation).toBe(bBefore);
    });
    expect(await within(1_000, async () => b.platform.revocations.generation === bBefore + 1)).toBe(true);
    await settle();
    expect(b.platform.revocations.generation).toBe(bBefore + 1);
    expect(await policyRead(b, host, device)).toBe(401);
  });

  it('never keeps an entry longer than AUTH_CACHE_MAX_AGE_SECONDS, nor past the token', async () => {
    const person = await createPerson(asTestPlatform(a), organisation.id);
    const device = await enrolDevice(asTestPlatform(a), { organisationId: organisation.id, personId: person.id });
    expect(await policyRead(a, host, device)).toBe(200);
    // Past the access token's life (DEVICE_ACCESS_TOKEN_TTL_SECONDS, an hour): refused, cached or not.
    a.clock.advance(3_600_000);
    expect(await policyRead(a, host, device)).toBe(401);
  });
});
