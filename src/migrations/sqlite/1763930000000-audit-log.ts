import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit trail (docs/api/audit-trail.md): one row per administrative change, by organisation and row id, and by time for the sweeper. */
export class AuditLog1763930000000 implements MigrationInterface {
  name = 'AuditLog1763930000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE \"audit_log\" (\"row_id\" integer PRIMARY KEY AUTOINCREMENT NOT NULL, \"organisation_id\" varchar(40) NOT NULL, \"at\" datetime(3) NOT NULL, \"actor_kind\" varchar(20) NOT NULL, \"actor_person_id\" varchar(40), \"actor_device_id\" varchar(40), \"action\" varchar(100) NOT NULL, \"target\" text NOT NULL, \"source_address\" varchar(100), \"user_agent\" varchar(500), \"request_id\" varchar(100))");
    await db.query('CREATE INDEX "audit_log_organisation_row" ON "audit_log" ("organisation_id", "row_id")');
    await db.query('CREATE INDEX "audit_log_at" ON "audit_log" ("at")');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE "audit_log"');
  }
}
