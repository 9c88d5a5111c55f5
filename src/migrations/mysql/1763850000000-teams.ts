import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Teams: invitations to a Cloud team (one open invitation per address and team; the token only as a hash). Addresses and the token hash compare exactly (utf8mb4_bin): addresses are stored lower-cased, and the default collation would take josé@ and jose@ for one address. An index of each ingest table by project (a project is checked for data and deleted with it without reading, or locking, whole tables). */
export class Teams1763850000000 implements MigrationInterface {
  name = 'Teams1763850000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("CREATE TABLE `invitations` (`id` varchar(40) NOT NULL, `organisation_id` varchar(40) NOT NULL, `email` varchar(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `open_email` varchar(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, `role` varchar(20) NOT NULL, `token_hash` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, `invited_by` varchar(40) NOT NULL, `created_at` datetime(3) NOT NULL, `expires_at` datetime(3) NOT NULL, `used_at` datetime(3) NULL, `used_by` varchar(40) NULL, `withdrawn_at` datetime(3) NULL, UNIQUE INDEX `invitations_token_hash` (`token_hash`), UNIQUE INDEX `invitations_open_email` (`organisation_id`, `open_email`), INDEX `invitations_organisation_created` (`organisation_id`, `created_at`), INDEX `invitations_invited_by` (`invited_by`), INDEX `invitations_used_by` (`used_by`), PRIMARY KEY (`id`)) ENGINE=InnoDB");
    await db.query("CREATE INDEX `ingest_events_project` ON `ingest_events` (`project_id`)");
    await db.query("CREATE INDEX `ingest_usage_project` ON `ingest_usage` (`project_id`)");
    await db.query("CREATE INDEX `ingest_audit_project` ON `ingest_audit` (`project_id`)");
    await db.query("CREATE INDEX `ingest_tasks_project` ON `ingest_tasks` (`project_id`)");
    await db.query("ALTER TABLE `invitations` ADD CONSTRAINT `fk_invitations_organisation` FOREIGN KEY (`organisation_id`) REFERENCES `organisations`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `invitations` ADD CONSTRAINT `fk_invitations_invited_by` FOREIGN KEY (`invited_by`) REFERENCES `people`(`id`) ON DELETE CASCADE ON UPDATE NO ACTION");
    await db.query("ALTER TABLE `invitations` ADD CONSTRAINT `fk_invitations_used_by` FOREIGN KEY (`used_by`) REFERENCES `people`(`id`) ON DELETE SET NULL ON UPDATE NO ACTION");
  }

  async down(db: QueryRunner): Promise<void> {
    for (const table of ["ingest_events", "ingest_usage", "ingest_audit", "ingest_tasks"]) {
      await db.query('DROP INDEX `' + table + '_project` ON `' + table + '`');
    }
    for (const table of ["invitations"]) {
      await db.query('DROP TABLE `' + table + '`');
    }
  }
}
