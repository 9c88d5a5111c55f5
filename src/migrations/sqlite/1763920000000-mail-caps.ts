import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Emailed codes by time alone: the service-wide cap per minute counts them, the purge deletes the old. */
export class MailCaps1763920000000 implements MigrationInterface {
  name = 'MailCaps1763920000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('CREATE INDEX "email_codes_created" ON "email_codes" ("created_at")');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX "email_codes_created"');
  }
}
