import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { readRevocationCounter } from '../auth/revocations.js';
import type { DatabaseConfig } from '../config.js';
import { createReadDataSource } from './data-source.js';
import type { Clock } from '../util/clock.js';
import { SingleFlight } from '../util/single-flight.js';
import type { Reads } from './reads.js';

/** The driver's error code (`ECONNREFUSED`, `ER_ACCESS_DENIED_ERROR`), or the message's first line: never the URL. */
function failureReason(error: unknown): string {
  const found = error as { code?: unknown; driverError?: { code?: unknown } };
  const code = found.driverError?.code ?? found.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.name) : String(error);
}

export interface ReadReplicaOptions {
  /** How long a counter reading is trusted (default 1 s, the bound the spec promises for revocations seen through the counter). */
  counterMaxAgeMs?: number;
  /** How long a failed replica is left alone (default 5 s). */
  retryMs?: number;
  /** A replica read that takes longer counts as a failure and the primary answers (default 500 ms): a replica that hangs never holds a request. */
  timeoutMs?: number;
}

/** Reads answered, by server and kind (`platform_database_reads_total`). */
export interface ReadCounts {
  replica: { credential: number; settled: number };
  primary: { credential: number; settled: number };
}

/**
 * The reads of `src/db/reads.ts` on a MySQL/MariaDB read replica (`DATABASE_READ_URL`), with the
 * primary behind every one of them.
 *
 * **The fence.** A credential's row on a replica that lags can still say "not revoked" after the
 * primary says otherwise. Every change that may end an access moves the revocation counter in the
 * same transaction (src/auth/revocations.ts), and the counter row replicates like any row, in
 * commit order: a replica whose counter has reached the primary's has applied every revocation
 * before it. So a credential is read on the replica only while
 * - the primary's counter was read in this process's current revocation generation (it moves at
 *   once on a revocation made here, and on another replica's Redis message) and less than a
 *   second ago (a process without Redis, the command line, is seen within that second, as the
 *   caches see it: src/auth/auth-cache.ts); and
 * - the replica's counter, read within the same second, has reached it.
 * Otherwise, and whenever the replica fails, the primary answers. A revoked token is therefore
 * refused at once however far the replica lags: the request reads the primary until the replica
 * has caught up.
 *
 * **Misses.** A credential the replica does not know (issued a moment ago) is read again on the
 * primary; a settled read the replica cannot answer whole likewise.
 *
 * **Failures.** A replica that fails is left alone for `retryMs` (the primary answers meanwhile),
 * and the failure is logged once per outage; it never fails a request or the readiness probe.
 */
export class ReplicaReads implements Reads {
  readonly counts: ReadCounts = { replica: { credential: 0, settled: 0 }, primary: { credential: 0, settled: 0 } };
  private readonly counterMaxAgeMs: number;
  private readonly retryMs: number;
  private readonly timeoutMs: number;
  /** The primary's counter, the generation it was read in, and when. */
  private required: { value: number; generation: number; at: number } | undefined;
  /** The replica's counter and when it was read. */
  private applied: { value: number; at: number } | undefined;
  private failedUntil = Number.NEGATIVE_INFINITY;
  private failing = false;
  private readonly readings = new SingleFlight<string, number | undefined>();

  constructor(
    private readonly primary: DataSource,
    /** The replica's DataSource once connected (`ReplicaConnection`). */
    private readonly connection: { readonly current: DataSource | undefined },
    /** The process's revocations (src/auth/revocations.ts): `generation` moves on every drop. */
    private readonly revocations: { readonly generation: number },
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: ReadReplicaOptions = {},
  ) {
    this.counterMaxAgeMs = options.counterMaxAgeMs ?? 1_000;
    this.retryMs = options.retryMs ?? 5_000;
    this.timeoutMs = options.timeoutMs ?? 500;
  }

  async credential<T>(read: (manager: EntityManager) => Promise<T | null>): Promise<T | null> {
    if (await this.caughtUp()) {
      const found = await this.onReplica(read);
      if (found !== undefined && found !== null) {
        this.counts.replica.credential += 1;
        return found;
      }
    }
    this.counts.primary.credential += 1;
    return read(this.primary.manager);
  }

  async settled<T>(read: (manager: EntityManager) => Promise<T>, whole: (answer: T) => boolean): Promise<T> {
    if (this.available()) {
      const answer = await this.onReplica(read);
      if (answer !== undefined && whole(answer)) {
        this.counts.replica.settled += 1;
        return answer;
      }
    }
    this.counts.primary.settled += 1;
    return read(this.primary.manager);
  }

  /** Whether the replica has applied every revocation this process knows of. */
  async caughtUp(): Promise<boolean> {
    if (!this.available()) return false;
    const now = this.clock.now().getTime();
    const generation = this.revocations.generation;
    let required = this.required;
    if (!required || required.generation !== generation || now - required.at >= this.counterMaxAgeMs) {
      // Read after the generation began: whatever revocation moved it is in this reading.
      const value = await this.readings.run(`primary\n${generation}`, () => readRevocationCounter(this.primary));
      if (value === undefined) return false;
      required = { value, generation, at: now };
      if (generation === this.revocations.generation) this.required = required;
    }
    const applied = this.applied;
    if (applied && applied.value >= required.value && now - applied.at < this.counterMaxAgeMs) return true;
    // Behind when last read, or read too long ago (a replica may be swapped for one further behind).
    if (applied && applied.value < required.value && now - applied.at < Math.min(100, this.counterMaxAgeMs)) return false;
    const value = await this.readings.run('replica', async () => {
      try {
        return await this.bounded(readRevocationCounter(this.connection.current as DataSource, { throwing: true }));
      } catch (error) {
        this.failed(error);
        return undefined;
      }
    });
    if (value === undefined) return false;
    this.applied = { value, at: now };
    this.recovered();
    return value >= required.value;
  }

  private available(): boolean {
    return this.connection.current !== undefined && this.clock.now().getTime() >= this.failedUntil;
  }

  /** The read on the replica; undefined when it failed (then left alone a while). */
  private async onReplica<T>(read: (manager: EntityManager) => Promise<T>): Promise<T | undefined> {
    try {
      const answer = await this.bounded(read((this.connection.current as DataSource).manager));
      this.recovered();
      return answer;
    } catch (error) {
      this.failed(error);
      return undefined;
    }
  }

  /** The read, or a failure once it has taken `timeoutMs` (the query itself may still finish: its answer is not used). */
  private bounded<T>(read: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('the read replica did not answer in time'), { code: 'TIMEOUT' })), this.timeoutMs);
    });
    read.catch(() => undefined);
    return Promise.race([read, late]).finally(() => clearTimeout(timer));
  }

  private failed(error: unknown): void {
    this.failedUntil = this.clock.now().getTime() + this.retryMs;
    this.applied = undefined;
    if (this.failing) return;
    this.failing = true;
    this.logger.warn({ dependency: 'database-read', reason: failureReason(error) }, 'the read replica (DATABASE_READ_URL) failed: reading from the primary, trying it again in a few seconds');
  }

  private recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.logger.info({ dependency: 'database-read' }, 'the read replica (DATABASE_READ_URL) answers again');
  }
}

/**
 * The replica's connection, opened beside the service and never in its way: a replica that cannot
 * be reached at start is tried again every `retryMs` (the primary answers meanwhile).
 */
export class ReplicaConnection {
  current: DataSource | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private attempts = 0;

  constructor(
    private readonly database: DatabaseConfig,
    private readonly logger: Logger,
    private readonly retryMs = 5_000,
  ) {}

  /** Connects now, or keeps trying in the background; resolves after the first attempt. */
  async start(): Promise<void> {
    const dataSource = createReadDataSource(this.database);
    try {
      await dataSource.initialize();
      if (this.stopped) {
        await dataSource.destroy().catch(() => undefined);
        return;
      }
      this.current = dataSource;
      this.logger.info({ dependency: 'database-read' }, 'reading from the replica of DATABASE_READ_URL where a lag is harmless');
    } catch (error) {
      this.attempts += 1;
      if (this.attempts === 1) {
        this.logger.warn({ dependency: 'database-read', reason: failureReason(error) }, 'cannot reach the read replica (DATABASE_READ_URL): reading from the primary, still trying');
      }
      if (!this.stopped) {
        this.timer = setTimeout(() => void this.start(), this.retryMs);
        this.timer.unref();
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    const current = this.current;
    this.current = undefined;
    if (current?.isInitialized) await current.destroy().catch(() => undefined);
  }
}
