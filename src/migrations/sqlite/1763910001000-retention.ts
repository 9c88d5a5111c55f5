import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Retention (src/sweeper): the indexes the sweeper reads by, and the row of the last sweep. */
export class Retention1763910001000 implements MigrationInterface {
  name = 'Retention1763910001000';

  async up(db: QueryRunner): Promise<void> {
    for (const [index, table, columns] of RETENTION_INDEXES) {
      await db.query(`CREATE INDEX "${index}" ON "${table}" (${columns.map((column) => `"${column}"`).join(', ')})`);
    }
    await db.query('CREATE TABLE "sweeper_runs" ("name" varchar(40) PRIMARY KEY NOT NULL, "started_at" datetime(3), "finished_at" datetime(3), "replica" varchar(200))');
    await db.query('INSERT INTO "sweeper_runs" ("name") VALUES (\'sweeper\')');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE "sweeper_runs"');
    for (const [index] of RETENTION_INDEXES) await db.query(`DROP INDEX "${index}"`);
  }
}

/** [index, table, columns]: as in the MySQL migration. */
const RETENTION_INDEXES: readonly (readonly [string, string, readonly string[]])[] = [
  ['device_authorizations_expires', 'device_authorizations', ['expires_at']],
  ['device_tokens_expires', 'device_tokens', ['expires_at']],
  ['join_keys_expires', 'join_keys', ['expires_at']],
  ['cloud_session_tokens_expires', 'cloud_session_tokens', ['expires_at']],
  ['cloud_sessions_ended', 'cloud_sessions', ['ended_at', 'created_at']],
  ['email_codes_expires', 'email_codes', ['expires_at']],
  ['link_tickets_expires', 'link_tickets', ['expires_at']],
  ['invitations_expires', 'invitations', ['expires_at']],
  ['cloud_agent_runs_expires', 'cloud_agent_runs', ['expires_at']],
  ['cloud_agent_run_events_received', 'cloud_agent_run_events', ['received_at']],
  ['ingest_events_received', 'ingest_events', ['received_at']],
  ['ingest_usage_received', 'ingest_usage', ['received_at']],
  ['ingest_audit_received', 'ingest_audit', ['received_at']],
  ['ingest_tasks_received', 'ingest_tasks', ['received_at']],
];
