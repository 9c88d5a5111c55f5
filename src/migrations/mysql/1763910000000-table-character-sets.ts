import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every table states its character set and collation. Seven tables were created without one
 * (`pictures`, `signing_keys`, the three cloud agent tables, `invitations`, `auth_revocations`)
 * and took the database's default. The service refuses, before migrating, a database whose
 * default is not utf8mb4 / utf8mb4_unicode_ci (src/db/server-check.ts): on any other default those
 * migrations cannot have run (their foreign keys to utf8mb4_unicode_ci tables fail, errno 150), so
 * where they did run their tables are utf8mb4_unicode_ci already, and this states it: the table's
 * default changes, no column does (their explicit utf8mb4_bin columns stay exact). TypeORM's own
 * `schema_migrations` (no foreign key, no exact column) is converted whole, for a database that
 * was once created with another default and altered afterwards.
 */
export class TableCharacterSets1763910000000 implements MigrationInterface {
  name = 'TableCharacterSets1763910000000';

  async up(db: QueryRunner): Promise<void> {
    for (const table of TABLES_WITHOUT_CHARACTER_SET) {
      await db.query(`ALTER TABLE \`${table}\` DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    }
    await db.query('ALTER TABLE `schema_migrations` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
  }

  async down(): Promise<void> {
    // Nothing to undo: the tables keep the character set they had, now stated.
  }
}

/** The tables earlier migrations created without `CHARACTER SET … COLLATE …` (read by a test). */
export const TABLES_WITHOUT_CHARACTER_SET = ['pictures', 'signing_keys', 'cloud_agent_runs', 'cloud_agent_run_events', 'cloud_agent_run_locks', 'invitations', 'auth_revocations'] as const;
