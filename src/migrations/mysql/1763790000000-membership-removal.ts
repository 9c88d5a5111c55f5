import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Memberships remember when a person was removed. */
export class MembershipRemoval1763790000000 implements MigrationInterface {
  name = 'MembershipRemoval1763790000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query("ALTER TABLE `memberships` ADD `removed_at` datetime(3) NULL");
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE `memberships` DROP COLUMN `removed_at`');
  }
}
