import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import type { DataSource } from 'typeorm';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { Sweeper, type SweeperObserver } from '../../src/sweeper/sweeper.js';
import { newId } from '../../src/util/ids.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import { createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * Two replicas sweeping one MariaDB database: each its own data source (its own pool, as two
 * processes have), the sweeper the service runs. Only one sweeps at a time, under a lock of the
 * server that the other cannot take (GET_LOCK, named after the database); the other skips its
 * turn, without an error; every expired row is deleted once, and counted once; no live row is
 * touched. A lock held by a connection that dies (a replica killed) is the server's to release.
 */

const EXPIRED = 3_000;
const LIVE = 50;

let platform: TestPlatform;
let other: DataSource;
let deviceId: string;

/** A sweeper as a replica runs it, with its own counts of what it deleted. */
function replica(dataSource: DataSource): { sweeper: Sweeper; deleted: () => number; outcomes: string[] } {
  let deleted = 0;
  const outcomes: string[] = [];
  const observer: SweeperObserver = { deleted: (_kind, rows) => void (deleted += rows), ran: (outcome) => void outcomes.push(outcome), lastRun: () => undefined };
  const sweeper = new Sweeper(dataSource, platform.clock, createLogger('silent'), { intervalSeconds: 300, batchSize: 100, batchPauseMs: 5, retention: {} }, observer);
  return { sweeper, deleted: () => deleted, outcomes };
}

async function insertTokens(count: number, expiresAt: Date): Promise<void> {
  const now = platform.clock.now();
  for (let offset = 0; offset < count; offset += 500) {
    const rows = Array.from({ length: Math.min(500, count - offset) }, () => [newId('tok'), deviceId, 'access', newId('tok').padEnd(64, '0').slice(0, 64), newId('tok'), expiresAt, now]);
    await platform.dataSource.query(
      `INSERT INTO device_tokens (id, device_id, kind, token_hash, pair_id, expires_at, created_at) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
      rows.flat(),
    );
  }
}

async function countTokens(where: string): Promise<number> {
  const [row] = await platform.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM device_tokens WHERE device_id = ? AND ${where}`, [deviceId]);
  return Number(row!.n);
}

beforeAll(async () => {
  platform = await startPlatform();
  other = createDataSource(platform.database.config);
  await other.initialize();
  const organisation = await createOrganisation(platform);
  const person = await createPerson(platform, organisation.id);
  deviceId = (await enrolDevice(platform, { organisationId: organisation.id, personId: person.id })).device.id;
});
afterAll(async () => {
  await other?.destroy();
  await platform?.close();
});

describe('two replicas sweeping one database', () => {
  it('sweep together without an error or double work: one deletes every expired row, once; the other skips; live rows stay', async () => {
    const now = platform.clock.now().getTime();
    await insertTokens(EXPIRED, new Date(now - 2 * 86_400_000));
    await insertTokens(LIVE, new Date(now + 3_600_000));
    const live = (await countTokens('1 = 1')) - EXPIRED;
    expect(live).toBeGreaterThanOrEqual(LIVE);
    const a = replica(platform.dataSource);
    const b = replica(other);

    const [first, second] = await Promise.all([a.sweeper.sweep(), b.sweeper.sweep()]);
    const outcomes = [first.outcome, second.outcome].sort();
    expect(outcomes).toEqual(['skipped', 'swept']);
    const skipped = first.outcome === 'skipped' ? first : second;
    expect(['another replica is sweeping', 'swept less than an interval ago']).toContain(skipped.reason);
    expect(a.deleted() + b.deleted()).toBe(EXPIRED);
    expect(Math.min(a.deleted(), b.deleted())).toBe(0);
    expect(await countTokens('1 = 1')).toBe(live);
    expect([...a.outcomes, ...b.outcomes].sort()).toEqual(['skipped', 'swept']);

    // A replica whose timer fires soon after: it skips (the last sweep is recorded in the database).
    platform.clock.advance(60_000);
    expect(await b.sweeper.sweep()).toMatchObject({ outcome: 'skipped', reason: 'swept less than an interval ago', lastRun: first.lastRun ?? second.lastRun });
  });

  it('lets no other replica sweep while one is sweeping, even when told to (`platform sweep`)', async () => {
    const now = platform.clock.now().getTime();
    await insertTokens(EXPIRED, new Date(now - 2 * 86_400_000));
    const a = replica(platform.dataSource);
    const b = replica(other);
    const running = a.sweeper.sweep({ force: true });
    // Wait until A has deleted a batch or two: it holds the lock.
    for (let tries = 0; tries < 400 && a.deleted() === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(a.deleted()).toBeGreaterThan(0);
    expect(a.deleted()).toBeLessThan(EXPIRED);
    expect(await b.sweeper.sweep({ force: true })).toMatchObject({ outcome: 'skipped', reason: 'another replica is sweeping' });
    expect((await running).outcome).toBe('swept');
    expect(a.deleted()).toBe(EXPIRED);
    expect(b.deleted()).toBe(0);
  });

  it('sweeps again once the connection that held the lock is gone (a replica killed mid-sweep)', async () => {
    const { name } = (await platform.dataSource.query<{ name: string }[]>('SELECT DATABASE() AS name'))[0]!;
    const holder = await mysql.createConnection({ uri: platform.database.url.replace(/^mariadb:/, 'mysql:') });
    const [[got]] = (await holder.query('SELECT GET_LOCK(?, 0) AS got', [`platform_sweeper.${name}`])) as unknown as [{ got: number }[]];
    expect(got!.got).toBe(1);
    const b = replica(other);
    expect(await b.sweeper.sweep({ force: true })).toMatchObject({ outcome: 'skipped', reason: 'another replica is sweeping' });
    holder.destroy();
    // The server lets go of the lock when it notices the connection is gone.
    let result = await b.sweeper.sweep({ force: true });
    for (let tries = 0; tries < 100 && result.outcome === 'skipped'; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      result = await b.sweeper.sweep({ force: true });
    }
    expect(result.outcome).toBe('swept');
  });
});
