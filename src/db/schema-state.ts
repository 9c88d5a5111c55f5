import { MigrationExecutor, type DataSource } from 'typeorm';
import type { Clock } from '../util/clock.js';

/**
 * Whether every migration this build knows has been applied to the database. With
 * MIGRATE_ON_START=false (the Helm chart's replicas) the service starts on whatever schema it
 * finds and waits for `platform migrate`: until then every request that needs the database is
 * refused with 503 `unavailable` (src/app.ts puts `isMigrated` in front of those routes), never
 * let through to meet a missing table. Once none is pending none will be (a running build never
 * gains a migration), so the answer is then kept for good and costs nothing; while some are
 * pending, the migrations table is read again at most once per `recheckMs`, so the service serves
 * as soon as the migrations have run, without a restart. It only reads: it never creates the
 * migrations table.
 */
export class SchemaState {
  private migrated = false;
  private checking: Promise<boolean> | undefined;
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly recheckMs = 1_000,
  ) {}

  /** Known to be migrated (no read needed). */
  get ready(): boolean {
    return this.migrated;
  }

  /**
   * Whether no migration is pending; a database that cannot answer rejects (the caller's 503).
   * `fresh`: read now however recently it was read (readiness probes, a few a minute).
   */
  async isMigrated(options: { fresh?: boolean } = {}): Promise<boolean> {
    if (this.migrated) return true;
    if (this.checking) return this.checking;
    const now = this.clock.now().getTime();
    if (!options.fresh && now - this.checkedAt < this.recheckMs) return false;
    this.checking = new MigrationExecutor(this.dataSource)
      .getPendingMigrations()
      .then((pending) => {
        this.checkedAt = this.clock.now().getTime();
        this.migrated = pending.length === 0;
        return this.migrated;
      })
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }
}
