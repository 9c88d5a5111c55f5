import type { DataSource, EntityManager } from 'typeorm';
import {
  CloudAgentRunEntity,
  type CloudAgentRunEventRecord,
  type CloudAgentRunRecord,
} from './entities.js';

import { sqlTime, storedDate, type Dialect } from '../../db/dates.js';

export interface CredentialHolder {
  run: Pick<CloudAgentRunRecord, 'id' | 'organisationId' | 'deviceId' | 'personId' | 'expiresAt' | 'endedAt'>;
  deviceRevoked: boolean;
  /** The run's person still belongs to its organisation (not removed, not gone). */
  personIsMember: boolean;
}

/** The only code that queries cloud agent runs and their events. */
export class CloudAgentStore {
  private readonly dialect: Dialect;

  constructor(private readonly manager: EntityManager) {
    this.dialect = manager.connection.options.type === 'better-sqlite3' ? 'sqlite' : 'mysql';
  }

  static of(dataSource: DataSource): CloudAgentStore {
    return new CloudAgentStore(dataSource.manager);
  }

  /**
   * Takes the person's registration lock for the rest of the transaction: a write to their lock
   * row, so two registrations of one person count and insert one after the other on MySQL (the
   * row's exclusive lock, taken at once by ON DUPLICATE KEY) and on SQLite (the database's write
   * lock, taken by the first write of the transaction).
   */
  async lockPerson(organisationId: string, personId: string, now: Date): Promise<void> {
    const at = sqlTime(this.dialect, now);
    const sql =
      this.dialect === 'mysql'
        ? 'INSERT INTO `cloud_agent_run_locks` (`organisation_id`, `person_id`, `updated_at`) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE `updated_at` = VALUES(`updated_at`)'
        : 'INSERT INTO "cloud_agent_run_locks" ("organisation_id", "person_id", "updated_at") VALUES (?, ?, ?) ON CONFLICT ("organisation_id", "person_id") DO UPDATE SET "updated_at" = excluded."updated_at"';
    await this.manager.query(sql, [organisationId, personId, at]);
  }

  /** Runs of the person that still count: not ended, credential not expired. */
  async countRunning(organisationId: string, personId: string, now: Date): Promise<number> {
    return this.manager
      .createQueryBuilder(CloudAgentRunEntity, 'run')
      .where('run.organisationId = :organisationId AND run.personId = :personId', { organisationId, personId })
      .andWhere('run.endedAt IS NULL AND run.expiresAt > :now', { now })
      .getCount();
  }

  async insertRun(run: CloudAgentRunRecord): Promise<void> {
    await this.manager.insert(CloudAgentRunEntity, run);
  }

  /** A run of the organisation, locked for the rest of the transaction on MySQL (SQLite's
   * transactions already take turns). */
  async findRunForUpdate(organisationId: string, runId: string): Promise<CloudAgentRunRecord | null> {
    const query = this.manager
      .createQueryBuilder(CloudAgentRunEntity, 'run')
      .where('run.id = :runId AND run.organisationId = :organisationId', { runId, organisationId });
    if (this.dialect === 'mysql') query.setLock('pessimistic_write');
    return query.getOne();
  }

  async countEvents(runId: string): Promise<number> {
    const rows = await this.manager.query<{ n: number | string }[]>(this.dialect === 'mysql' ? 'SELECT COUNT(*) AS n FROM `cloud_agent_run_events` WHERE `run_id` = ?' : 'SELECT COUNT(*) AS n FROM "cloud_agent_run_events" WHERE "run_id" = ?', [runId]);
    return Number(rows[0]?.n ?? 0);
  }

  async insertEvents(events: Omit<CloudAgentRunEventRecord, 'rowId'>[]): Promise<void> {
    if (events.length) await this.manager.insert('CloudAgentRunEvent', events);
  }

  /** Ends the run and forgets its credential; answers whether this call ended it. */
  async endRun(runId: string, now: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(CloudAgentRunEntity)
      .set({ endedAt: now, credentialHash: null })
      .where('id = :runId AND endedAt IS NULL', { runId })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * A run credential's run, with whether its device was revoked and its person still belongs to
   * the organisation: every MCP request asks this, so it is one plain SQL query (the same text on
   * both databases).
   */
  async findCredential(credentialHash: string): Promise<CredentialHolder | null> {
    const rows = await this.manager.query<Record<string, unknown>[]>(
      'SELECT r.id, r.organisation_id AS organisationId, r.device_id AS deviceId, r.person_id AS personId, r.expires_at AS expiresAt, ' +
        'r.ended_at AS endedAt, d.revoked_at AS deviceRevokedAt, m.person_id AS memberId, m.removed_at AS memberRemovedAt FROM cloud_agent_runs r ' +
        'INNER JOIN devices d ON d.id = r.device_id LEFT JOIN memberships m ON m.organisation_id = r.organisation_id AND m.person_id = r.person_id WHERE r.credential_hash = ?',
      [credentialHash],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      run: {
        id: String(row.id),
        organisationId: String(row.organisationId),
        deviceId: String(row.deviceId),
        personId: String(row.personId),
        expiresAt: storedDate(row.expiresAt),
        endedAt: row.endedAt === null || row.endedAt === undefined ? null : storedDate(row.endedAt),
      },
      deviceRevoked: row.deviceRevokedAt !== null && row.deviceRevokedAt !== undefined,
      personIsMember: row.memberId !== null && row.memberId !== undefined && (row.memberRemovedAt === null || row.memberRemovedAt === undefined),
    };
  }
}
