import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sign-in flows bound to whoever started them (issue 21): see the MySQL migration of the same
 * name for what each column is and why existing methods are backfilled as they are.
 */
export class SignInBinding1763880000000 implements MigrationInterface {
  name = 'SignInBinding1763880000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('ALTER TABLE "sign_in_methods" ADD COLUMN "confirmed_email" varchar(320)');
    await db.query('ALTER TABLE "sign_in_flows" ADD COLUMN "browser_hash" varchar(64)');
    await db.query('ALTER TABLE "sign_in_codes" ADD COLUMN "link_ticket_id" varchar(40)');
    await db.query('ALTER TABLE "sign_in_codes" ADD COLUMN "pending_method" text');
    await db.query('ALTER TABLE "email_codes" ADD COLUMN "link_ticket_id" varchar(40)');
    await db.query('ALTER TABLE "link_tickets" ADD COLUMN "session_id" varchar(40)');
    await db.query('CREATE INDEX "sign_in_methods_confirmed_email" ON "sign_in_methods" ("confirmed_email")');
    await db.query(
      'UPDATE "sign_in_methods" SET "confirmed_email" = "email" WHERE "email_verified" = 1 AND "email" IS NOT NULL AND ("provider" = \'email\' OR "id" IN (' +
        'SELECT "m"."id" FROM "sign_in_methods" "m" WHERE NOT EXISTS (SELECT 1 FROM "sign_in_methods" "o" WHERE "o"."person_id" = "m"."person_id" ' +
        'AND ("o"."created_at" < "m"."created_at" OR ("o"."created_at" = "m"."created_at" AND "o"."id" < "m"."id")))))',
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP INDEX "sign_in_methods_confirmed_email"');
    for (const [table, column] of [
      ['link_tickets', 'session_id'],
      ['email_codes', 'link_ticket_id'],
      ['sign_in_codes', 'pending_method'],
      ['sign_in_codes', 'link_ticket_id'],
      ['sign_in_flows', 'browser_hash'],
      ['sign_in_methods', 'confirmed_email'],
    ] as const) {
      await db.query(`ALTER TABLE "${table}" DROP COLUMN "${column}"`);
    }
  }
}
