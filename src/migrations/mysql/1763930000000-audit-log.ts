import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit trail (docs/api/audit-trail.md): one row per administrative change, by organisation and row id, and by time for the sweeper. */
export class AuditLog1763930000000 implements MigrationInterface {
  name = 'AuditLog1763930000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `audit_log` (`row_id` bigint NOT NULL AUTO_INCREMENT, `organisation_id` varchar(40) NOT NULL, `at` datetime(3) NOT NULL, `actor_kind` varchar(20) NOT NULL, `actor_person_id` varchar(40) NULL, `actor_device_id` varchar(40) NULL, `action` varchar(100) NOT NULL, `target` text NOT NULL, `source_address` varchar(100) NULL, `user_agent` varchar(500) NULL, `request_id` varchar(100) NULL, INDEX `audit_log_organisation_row` (`organisation_id`, `row_id`), INDEX `audit_log_at` (`at`), PRIMARY KEY (`row_id`)) ENGINE=InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE `audit_log`');
  }
}
