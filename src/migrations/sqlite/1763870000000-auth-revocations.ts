import type { MigrationInterface, QueryRunner } from 'typeorm';

/** One counter row that every revoking change adds one to; servers read it at most once a second
 * to drop their caches of verified credentials (src/auth/revocations.ts). */
export class AuthRevocations1763870000000 implements MigrationInterface {
  name = 'AuthRevocations1763870000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query('CREATE TABLE "auth_revocations" ("id" integer PRIMARY KEY NOT NULL, "counter" bigint NOT NULL DEFAULT 0)');
    await db.query('INSERT INTO "auth_revocations" ("id", "counter") VALUES (1, 0)');
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE "auth_revocations"');
  }
}
