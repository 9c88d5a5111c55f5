import { spawn } from 'node:child_process';
import mysql from 'mysql2/promise';
import { newId } from '../../src/util/ids.js';
import { createDpopKey } from './dpop.js';
import { seedPlatform } from './fixtures.js';
import { createMariadbDatabase } from './ingest.js';
import { load, problemWith, type Measurement } from './measure.js';
import type { Scenario } from './scenarios.js';
import { freePort, startChild } from './servers.js';

/**
 * The sweep under load (`npm run bench -- --only sweep`): does deleting a million expired rows
 * hold up the service's readers? On a fresh MariaDB database: one million device tokens that
 * expired two days ago (the table every device request reads), and a platform child (src/main.ts,
 * AUTH_CACHE_MAX_AGE_SECONDS=0 so that every request reads its token from that table) serving
 * GET /policy/v1 to a Bearer workbench. The p99 of those reads is measured idle, then while
 * `platform sweep` (another process: as another replica would, with the defaults,
 * SWEEPER_BATCH_SIZE=1000, SWEEPER_BATCH_PAUSE_MS=20) deletes the million rows, then idle again.
 * The target (issue 25): the p99 during the sweep at most 2× the idle one. The sweep must delete
 * every expired row and nothing else, and the measurement window must lie inside the sweep.
 */

export interface SweepBenchOptions {
  script: string;
  /** The compiled command line (dist-bench/src/cli/main.js). */
  cli: string;
  host: string;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  mariadb: string;
  rows: number;
  warmupSeconds: number;
  durationSeconds: number;
  connections: number;
  log: (line: string) => void;
}

export interface SweepBenchResult {
  ok: boolean;
  problem?: string;
  rows: number;
  seedSeconds: number;
  sweepSeconds: number;
  deleted: number;
  idle: Measurement;
  during: Measurement;
  after: Measurement;
  ratio: number;
  /** The part of the measurement window the sweep was running. */
  covered: number;
  /** InnoDB's history list length (undo records its purge threads have yet to remove), when the sweep ended and after the second idle run. */
  historyAfterSweep: number | undefined;
  historyAfterIdle: number | undefined;
}

async function historyLength(url: string): Promise<number | undefined> {
  const connection = await mysql.createConnection({ uri: url });
  try {
    const [rows] = (await connection.query("SELECT `count` AS n FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'")) as unknown as [{ n: number }[]];
    return rows[0] === undefined ? undefined : Number(rows[0].n);
  } catch {
    return undefined;
  } finally {
    await connection.end();
  }
}

const TARGET_RATIO = 2;

export async function runSweepBench(options: SweepBenchOptions): Promise<SweepBenchResult | { ok: false; problem: string; skipped: true }> {
  const { log } = options;
  const made = await createMariadbDatabase(options.mariadb);
  if (!made.database) return { ok: false, skipped: true, problem: `MariaDB unreachable (${made.unreachable})` };
  const database = made.database;
  let child: Awaited<ReturnType<typeof startChild>> | undefined;
  try {
    const env: Record<string, string> = {
      NODE_ENV: 'production',
      DATABASE_URL: database.platformUrl,
      LOG_LEVEL: 'silent',
      RATE_LIMITS_ENABLED: 'false',
      PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
      SWEEPER_ENABLED: 'false',
      AUTH_CACHE_MAX_AGE_SECONDS: '0',
    };
    const seeded = await seedPlatform({ env, host: options.host, oidc: options.oidc, policyDpopJkt: createDpopKey().thumbprint, ingestDevices: 0 });
    const token = seeded.policy!.bearerToken;

    log(`sweep: seeding ${options.rows} expired device tokens into ${database.name}…`);
    const seedStarted = performance.now();
    const connection = await mysql.createConnection({ uri: database.url });
    let deviceId: string;
    try {
      const [devices] = (await connection.query('SELECT id FROM devices ORDER BY id LIMIT 1')) as unknown as [{ id: string }[]];
      deviceId = devices[0]!.id;
      const expired = new Date(Date.now() - 2 * 86_400_000);
      const batch = 2_000;
      for (let done = 0; done < options.rows; done += batch) {
        const count = Math.min(batch, options.rows - done);
        const values: unknown[] = [];
        for (let i = 0; i < count; i++) values.push(newId('tok'), deviceId, i % 2 ? 'access' : 'refresh', `${newId('tok')}${newId('tok')}`.slice(0, 64), newId('tok'), expired, expired);
        await connection.query(`INSERT INTO device_tokens (id, device_id, kind, token_hash, pair_id, expires_at, created_at) VALUES ${Array(count).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')}`, values);
      }
      await connection.query('ANALYZE TABLE device_tokens');
    } finally {
      await connection.end();
    }
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    log(`sweep: seeded in ${seedSeconds.toFixed(1)} s`);

    child = await startChild({ name: 'platform (sweep bench)', script: options.script, env, port: await freePort(), ready: { path: '/readyz' } });
    const scenario: Scenario = {
      name: 'device token (Bearer): GET /policy/v1',
      target: 'platform',
      method: 'GET',
      path: '/policy/v1',
      headers: () => ({ Host: options.host, Authorization: `Bearer ${token}` }),
    };
    const measure = async (what: string): Promise<Measurement> => {
      const measurement = await load(scenario, child!.origin, { connections: options.connections, durationSeconds: options.durationSeconds, serverPid: child!.pid });
      log(`sweep: ${what}: ${measurement.requestsPerSecond.toFixed(0)} req/s, p50 ${measurement.p50} ms, p99 ${measurement.p99} ms`);
      return measurement;
    };
    await load(scenario, child.origin, { connections: options.connections, durationSeconds: options.warmupSeconds });
    const idle = await measure('idle');

    // The sweep, in a process of its own (another replica, or an operator's `platform sweep`).
    const sweepStarted = performance.now();
    const sweeper = spawn(process.execPath, [options.cli, 'sweep', '--json'], {
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.platformUrl, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    sweeper.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    sweeper.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    let sweepEnded: number | undefined;
    const exited = new Promise<number | null>((resolve) =>
      sweeper.once('exit', (code) => {
        sweepEnded = performance.now();
        resolve(code);
      }),
    );
    // Let it begin (open its connection, take the lock), then measure while it deletes.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const windowStart = performance.now();
    const during = await measure('during the sweep');
    const windowEnd = performance.now();
    const code = await exited;
    const sweepSeconds = ((sweepEnded ?? performance.now()) - sweepStarted) / 1000;
    const covered = Math.max(0, Math.min(windowEnd, sweepEnded ?? windowEnd) - windowStart) / (windowEnd - windowStart);
    const answer = (() => {
      try {
        return JSON.parse(out) as { deleted: Record<string, number>; total: number };
      } catch {
        return undefined;
      }
    })();
    const deleted = answer?.deleted.device_tokens ?? 0;
    log(`sweep: platform sweep exited ${code} after ${sweepSeconds.toFixed(1)} s, deleted ${deleted} device tokens (${(deleted / sweepSeconds).toFixed(0)} rows/s)`);
    // InnoDB removes deleted rows for good afterwards, in its purge threads: how much is left to purge.
    const historyAfterSweep = await historyLength(database.url);
    const after = await measure('idle again');
    const historyAfterIdle = await historyLength(database.url);
    log(`sweep: InnoDB history list length (undo left to purge): ${historyAfterSweep} when the sweep ended, ${historyAfterIdle} after the second idle run`);

    const check = await mysql.createConnection({ uri: database.url });
    let left: number;
    try {
      const [rows] = (await check.query('SELECT COUNT(*) AS n FROM device_tokens WHERE expires_at < NOW() - INTERVAL 1 DAY')) as unknown as [{ n: number }[]];
      left = Number(rows[0]!.n);
    } finally {
      await check.end();
    }
    const ratio = during.p99 / idle.p99;
    const problems = [
      code !== 0 ? `platform sweep exited ${code}: ${err.slice(-500)}` : undefined,
      deleted !== options.rows ? `deleted ${deleted} device tokens, not ${options.rows}` : undefined,
      left !== 0 ? `${left} expired rows left` : undefined,
      covered < 1 ? `the sweep ended ${((1 - covered) * 100).toFixed(0)}% before the end of the measurement: raise the rows or shorten --duration` : undefined,
      ratio > TARGET_RATIO ? `p99 during the sweep ${during.p99} ms is ${ratio.toFixed(2)}× the idle ${idle.p99} ms (target at most ${TARGET_RATIO}×)` : undefined,
      ...[idle, during, after].map(problemWith),
    ].filter((problem): problem is string => problem !== undefined);
    log(`sweep: p99 during / idle = ${ratio.toFixed(2)} (target ≤ ${TARGET_RATIO}) ${problems.length ? 'FAILED' : 'met'}`);
    return { ok: problems.length === 0, ...(problems.length ? { problem: problems.join('; ') } : {}), rows: options.rows, seedSeconds, sweepSeconds, deleted, idle, during, after, ratio, covered, historyAfterSweep, historyAfterIdle };
  } finally {
    await child?.stop();
    await database.drop();
  }
}
