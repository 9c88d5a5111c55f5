import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identities compare exactly on MySQL (SQLite always did): the tables' default collation,
 * utf8mb4_unicode_ci, takes `abc` and `ABC` (or `é` and `e`) for the same ingest item or OIDC
 * subject. Free-form ingest JSON becomes MEDIUMTEXT, so nothing that passes validation is cut.
 */
export class ExactIdentities1763800000000 implements MigrationInterface {
  name = 'ExactIdentities1763800000000';

  async up(db: QueryRunner): Promise<void> {
    const exact = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_bin';
    await db.query(`ALTER TABLE \`ingest_events\` MODIFY \`workspace_id\` varchar(200) ${exact} NOT NULL, MODIFY \`data\` mediumtext NOT NULL`);
    await db.query(`ALTER TABLE \`ingest_usage\` MODIFY \`workspace_id\` varchar(200) ${exact} NOT NULL, MODIFY \`item_id\` varchar(200) ${exact} NOT NULL`);
    await db.query(
      `ALTER TABLE \`ingest_audit\` MODIFY \`workspace_id\` varchar(200) ${exact} NOT NULL, MODIFY \`item_id\` varchar(200) ${exact} NOT NULL, MODIFY \`details\` mediumtext NULL`,
    );
    await db.query(`ALTER TABLE \`ingest_tasks\` MODIFY \`workspace_id\` varchar(200) ${exact} NOT NULL, MODIFY \`task_id\` varchar(200) ${exact} NOT NULL`);
    await db.query(`ALTER TABLE \`ingest_streams\` MODIFY \`workspace_id\` varchar(200) ${exact} NOT NULL`);
    await db.query(`ALTER TABLE \`person_identities\` MODIFY \`issuer\` varchar(500) ${exact} NOT NULL, MODIFY \`subject\` varchar(255) ${exact} NOT NULL`);
  }

  async down(db: QueryRunner): Promise<void> {
    const folded = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci';
    await db.query(`ALTER TABLE \`ingest_events\` MODIFY \`workspace_id\` varchar(200) ${folded} NOT NULL, MODIFY \`data\` text NOT NULL`);
    await db.query(`ALTER TABLE \`ingest_usage\` MODIFY \`workspace_id\` varchar(200) ${folded} NOT NULL, MODIFY \`item_id\` varchar(200) ${folded} NOT NULL`);
    await db.query(
      `ALTER TABLE \`ingest_audit\` MODIFY \`workspace_id\` varchar(200) ${folded} NOT NULL, MODIFY \`item_id\` varchar(200) ${folded} NOT NULL, MODIFY \`details\` text NULL`,
    );
    await db.query(`ALTER TABLE \`ingest_tasks\` MODIFY \`workspace_id\` varchar(200) ${folded} NOT NULL, MODIFY \`task_id\` varchar(200) ${folded} NOT NULL`);
    await db.query(`ALTER TABLE \`ingest_streams\` MODIFY \`workspace_id\` varchar(200) ${folded} NOT NULL`);
    await db.query(`ALTER TABLE \`person_identities\` MODIFY \`issuer\` varchar(500) ${folded} NOT NULL, MODIFY \`subject\` varchar(255) ${folded} NOT NULL`);
  }
}
