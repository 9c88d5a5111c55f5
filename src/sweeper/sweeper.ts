import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DataSource, QueryRunner } from 'typeorm';
import { storedDate } from '../db/dates.js';
import { isDatabaseUnavailable, isSchemaMissing, reasonOf } from '../db/errors.js';
import type { Clock } from '../util/clock.js';
import { cutoffOf, SWEEP_KINDS, type RetentionDays, type SweepKind } from './kinds.js';

/**
 * The sweeper: deletes what is past its use (src/sweeper/kinds.ts says what, and after how long),
 * every SWEEPER_INTERVAL_SECONDS, in one replica at a time.
 *
 * - One at a time: on MySQL/MariaDB the sweep holds a named lock of the server (`GET_LOCK`, on a
 *   connection of its own, named after the database) that no other connection can take while
 *   it is held, and that the server lets go of when the connection dies with its replica; a
 *   replica that does not get it at once skips its turn. SQLite serves one process, which runs one
 *   sweep at a time.
 * - Once per interval, whichever replica: under the lock the sweep reads when the last one
 *   finished (`sweeper_runs`); a replica whose timer fires sooner after another's sweep skips too.
 *   Every replica reports that time (`platform_sweeper_last_run_timestamp_seconds`).
 * - Bounded: each kind goes in batches of at most SWEEPER_BATCH_SIZE rows, found by the kind's
 *   index and deleted by primary key, each batch a statement (a transaction) of its own, so a
 *   batch locks only the rows it deletes, for as long as it takes; SWEEPER_BATCH_PAUSE_MS between
 *   two batches leaves the database to live traffic. A stop ends a sweep between two batches.
 */

export interface SweeperSettings {
  intervalSeconds: number;
  batchSize: number;
  batchPauseMs: number;
  retention: RetentionDays;
}

/** Told of what the sweeper did (src/metrics.ts). */
export interface SweeperObserver {
  deleted(kind: string, rows: number): void;
  /** A sweep ended: `swept`, `skipped` (another replica holds the lock, or swept recently) or `failed`. */
  ran(outcome: 'swept' | 'skipped' | 'failed', seconds: number): void;
  /** When the last sweep of any replica finished, as the database says. */
  lastRun(at: Date): void;
}

export interface SweepResult {
  outcome: 'swept' | 'skipped';
  /** Why it skipped. */
  reason?: string;
  /** Rows deleted (or cleared) by kind, every kind listed. */
  deleted: Record<string, number>;
  /** When the last sweep finished (this one, when it swept). */
  lastRun: Date | undefined;
}

export interface SweepCount {
  kind: SweepKind;
  /** Rows past their use now; undefined when the kind keeps its rows forever. */
  rows: number | undefined;
}

const SWEEPER_NAME = 'sweeper';
const NO_OBSERVER: SweeperObserver = { deleted: () => undefined, ran: () => undefined, lastRun: () => undefined };

export class Sweeper {
  private readonly mysql: boolean;
  private readonly replica = `${hostname()}:${process.pid}`;
  private running: Promise<SweepResult> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settings: SweeperSettings,
    private readonly observer: SweeperObserver = NO_OBSERVER,
    readonly kinds: readonly SweepKind[] = SWEEP_KINDS,
  ) {
    const type = dataSource.options.type;
    this.mysql = type === 'mysql' || type === 'mariadb';
  }

  /** Sweeps every SWEEPER_INTERVAL_SECONDS (±10%, so replicas drift apart), the first time soon after start. */
  schedule(firstDelayMs = Math.min(30_000, this.settings.intervalSeconds * 1000)): void {
    if (this.timer || this.stopping) return;
    const next = (delayMs: number) => {
      this.timer = setTimeout(() => {
        void this.sweep()
          .catch(() => undefined)
          .finally(() => {
            if (!this.stopping) next(this.settings.intervalSeconds * 1000 * (0.9 + Math.random() * 0.2));
          });
      }, delayMs);
      this.timer.unref();
    };
    next(firstDelayMs);
  }

  /** Stops the timer and waits for a sweep under way to reach the end of its batch. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /**
   * One sweep, unless another replica is sweeping or swept less than an interval ago (`force`:
   * whatever the last sweep, as `platform sweep` asks). Failures are logged here and rethrown.
   */
  sweep(options: { force?: boolean } = {}): Promise<SweepResult> {
    // In this process one at a time: a second call waits for the first and skips.
    if (this.running) return this.running.then((result) => ({ ...result, outcome: 'skipped' as const, reason: 'a sweep was running in this process', deleted: zeroes(this.kinds) }));
    const started = performance.now();
    const run = this.locked(options.force ?? false)
      .then((result) => {
        this.observer.ran(result.outcome, (performance.now() - started) / 1000);
        return result;
      })
      .catch((error: unknown) => {
        if (isSchemaMissing(error)) {
          // MIGRATE_ON_START=false before `platform migrate`: nothing to sweep yet.
          this.observer.ran('skipped', (performance.now() - started) / 1000);
          this.logger.info({ ...reasonOf(error) }, 'sweep skipped: the database schema is older than this build (migrations pending)');
          return { outcome: 'skipped' as const, reason: 'migrations pending', deleted: zeroes(this.kinds), lastRun: undefined };
        }
        this.observer.ran('failed', (performance.now() - started) / 1000);
        if (isDatabaseUnavailable(error)) this.logger.warn({ dependency: 'database', ...reasonOf(error) }, 'sweep failed: database not reachable; the next one tries again');
        else this.logger.error({ err: error }, 'sweep failed');
        throw error;
      })
      .finally(() => {
        this.running = undefined;
      });
    this.running = run;
    return run;
  }

  /** What a sweep would delete now, by kind (nothing is locked or changed). */
  async count(): Promise<SweepCount[]> {
    const now = this.clock.now();
    const counts: SweepCount[] = [];
    for (const kind of this.kinds) {
      const cutoff = cutoffOf(kind, now, this.settings.retention);
      if (!cutoff) {
        counts.push({ kind, rows: undefined });
        continue;
      }
      const { sql, params } = this.bind(kind.where, cutoff);
      const rows = await this.dataSource.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${kind.table} WHERE ${sql}`, params);
      counts.push({ kind, rows: Number(rows[0]?.n ?? 0) });
    }
    return counts;
  }

  /** When the last sweep of any replica finished. */
  async lastRun(runner?: QueryRunner): Promise<Date | undefined> {
    const rows = (await (runner ?? this.dataSource).query('SELECT finished_at AS finishedAt FROM sweeper_runs WHERE name = ?', [SWEEPER_NAME])) as { finishedAt: unknown }[];
    const value = rows[0]?.finishedAt;
    return value === null || value === undefined ? undefined : storedDate(value);
  }

  private async locked(force: boolean): Promise<SweepResult> {
    if (!this.mysql) {
      const runner = this.dataSource.createQueryRunner();
      try {
        return await this.underLock(runner, force);
      } finally {
        await runner.release();
      }
    }
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      const lock = await this.lockName(runner);
      const [got] = (await runner.query('SELECT GET_LOCK(?, 0) AS got', [lock])) as { got: number | string | null }[];
      if (Number(got?.got) !== 1) {
        const lastRun = await this.lastRun(runner);
        if (lastRun) this.observer.lastRun(lastRun);
        return { outcome: 'skipped', reason: 'another replica is sweeping', deleted: zeroes(this.kinds), lastRun };
      }
      try {
        return await this.underLock(runner, force);
      } finally {
        await runner.query('SELECT RELEASE_LOCK(?)', [lock]).catch(() => undefined);
      }
    } finally {
      await runner.release();
    }
  }

  /** The lock's name: one per database (GET_LOCK names are the server's), at most 64 characters. */
  private async lockName(runner: QueryRunner): Promise<string> {
    const [row] = (await runner.query('SELECT DATABASE() AS name')) as { name: string }[];
    const name = `platform_sweeper.${row?.name ?? ''}`;
    return name.length <= 64 ? name : `platform_sweeper.${createHash('sha256').update(name).digest('hex').slice(0, 40)}`;
  }

  private async underLock(runner: QueryRunner, force: boolean): Promise<SweepResult> {
    const previous = await this.lastRun(runner);
    const now = this.clock.now();
    if (!force && previous && now.getTime() - previous.getTime() < this.settings.intervalSeconds * 1000 * 0.8) {
      this.observer.lastRun(previous);
      return { outcome: 'skipped', reason: 'swept less than an interval ago', deleted: zeroes(this.kinds), lastRun: previous };
    }
    await runner.query('UPDATE sweeper_runs SET started_at = ?, replica = ? WHERE name = ?', [this.time(now), this.replica, SWEEPER_NAME]);
    const deleted = zeroes(this.kinds);
    for (const kind of this.kinds) {
      if (this.stopping) break;
      deleted[kind.name] = await this.sweepKind(runner, kind, now);
    }
    const finished = this.clock.now();
    await runner.query('UPDATE sweeper_runs SET finished_at = ? WHERE name = ?', [this.time(finished), SWEEPER_NAME]);
    this.observer.lastRun(finished);
    const total = Object.values(deleted).reduce((sum, rows) => sum + rows, 0);
    const swept = Object.fromEntries(Object.entries(deleted).filter(([, rows]) => rows > 0));
    this.logger[total > 0 ? 'info' : 'debug']({ sweeper: { deleted: swept, total } }, total > 0 ? `sweep deleted ${total} rows` : 'sweep found nothing to delete');
    return { outcome: 'swept', deleted, lastRun: finished };
  }

  /** Every row of one kind past its cutoff, batch after batch; answers how many went. */
  private async sweepKind(runner: QueryRunner, kind: SweepKind, now: Date): Promise<number> {
    const cutoff = cutoffOf(kind, now, this.settings.retention);
    if (!cutoff) return 0;
    const { sql, params } = this.bind(kind.where, cutoff);
    const select = `SELECT ${kind.key} AS k FROM ${kind.table} WHERE ${sql} LIMIT ${this.settings.batchSize}`;
    let total = 0;
    const batch = async (runOn: QueryRunner) => {
      const keys = ((await runOn.query(select, params)) as { k: unknown }[]).map((row) => row.k);
      if (!keys.length) return { found: 0, affected: 0 };
      // By key, and only what still matches: a row that changed since it was read stays.
      const inKeys = `${kind.key} IN (${keys.map(() => '?').join(', ')})`;
      const statement = kind.clear
        ? `UPDATE ${kind.table} SET ${kind.clear} WHERE ${inKeys} AND (${sql})`
        : `DELETE FROM ${kind.table} WHERE ${inKeys} AND (${sql})`;
      const affected = (await runOn.query(statement, [...keys, ...params], true)).affected ?? 0;
      return { found: keys.length, affected };
    };
    for (;;) {
      // MySQL: two statements on the sweep's own connection, each its own transaction. SQLite has
      // one connection, on which transactions take turns (src/db/data-source.ts): a batch is one of
      // them, so that it never runs inside a request's open transaction.
      const { found, affected } = this.mysql
        ? await batch(runner)
        : await this.dataSource.manager.transaction((manager) => batch(manager.queryRunner!));
      if (!found) break;
      total += affected;
      this.observer.deleted(kind.name, affected);
      if (found < this.settings.batchSize || this.stopping) break;
      if (this.settings.batchPauseMs > 0) await sleep(this.settings.batchPauseMs);
    }
    return total;
  }

  /** `:cutoff` as a placeholder (the same on both drivers), and its values. */
  private bind(where: string, cutoff: Date): { sql: string; params: unknown[] } {
    const parts = where.split(':cutoff');
    return { sql: parts.join('?'), params: parts.slice(1).map(() => this.time(cutoff)) };
  }

  /** A time as each driver compares it with a stored one: a Date (mysql2, UTC), UTC text on SQLite. */
  private time(date: Date): Date | string {
    return this.mysql ? date : date.toISOString().replace('T', ' ').replace('Z', '');
  }
}

function zeroes(kinds: readonly SweepKind[]): Record<string, number> {
  return Object.fromEntries(kinds.map((kind) => [kind.name, 0]));
}
