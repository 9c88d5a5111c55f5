import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention (src/sweeper): an index on the time each kind of row is swept by, so that a batch of
 * the sweeper reads and locks only the rows it deletes, never a whole table; and the row in which
 * the replicas record the last sweep (the lock itself is MySQL's GET_LOCK). Adding an index is an
 * online change in InnoDB: reads and writes go on while a large ingest table is indexed.
 */
export class Retention1763910001000 implements MigrationInterface {
  name = 'Retention1763910001000';

  async up(db: QueryRunner): Promise<void> {
    for (const [index, table, columns] of RETENTION_INDEXES) {
      await db.query(`CREATE INDEX \`${index}\` ON \`${table}\` (${columns.map((column) => `\`${column}\``).join(', ')})`);
    }
    await db.query(
      'CREATE TABLE `sweeper_runs` (`name` varchar(40) NOT NULL, `started_at` datetime(3) NULL, `finished_at` datetime(3) NULL, `replica` varchar(200) NULL, PRIMARY KEY (`name`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci',
    );
    await db.query("INSERT INTO `sweeper_runs` (`name`) VALUES ('sweeper')");
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE `sweeper_runs`');
    for (const [index, table] of RETENTION_INDEXES) await db.query(`DROP INDEX \`${index}\` ON \`${table}\``);
  }
}

/** [index, table, columns]: the same in both dialects. */
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
