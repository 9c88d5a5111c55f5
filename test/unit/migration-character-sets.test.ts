import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { TABLES_WITHOUT_CHARACTER_SET } from '../../src/migrations/mysql/1763910000000-table-character-sets.js';

/**
 * Every MySQL table states its character set and collation: created with
 * `DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci` (or `CHARACTER SET utf8mb4 COLLATE
 * utf8mb4_unicode_ci`), or, for the seven early tables that took the database's default, stated
 * by migration 1763910000000. A new migration that creates a table without them fails here (the
 * database check refuses other defaults, but a table should never depend on one).
 */

const DIR = join(process.cwd(), 'src/migrations/mysql');
const STATES = /(?:DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci|CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci)\s*$/;

/** Every `CREATE TABLE` of the MySQL migrations: its name, file and whether its options state the character set. */
function createdTables(): { table: string; file: string; states: boolean }[] {
  const found: { table: string; file: string; states: boolean }[] = [];
  for (const file of readdirSync(DIR).filter((name) => name.endsWith('.ts')).sort()) {
    const text = readFileSync(join(DIR, file), 'utf8');
    for (const match of text.matchAll(/CREATE TABLE [`\\]*`?(\w+)`?/g)) {
      // The statement runs to the end of its string: the closing quote before `)` of db.query(…).
      const rest = text.slice(match.index);
      const end = rest.search(/["'`][\s,]*\)\s*;/);
      const statement = rest.slice(0, end === -1 ? undefined : end).replace(/\$\{table\}/g, 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci');
      found.push({ table: match[1]!, file, states: STATES.test(statement) });
    }
  }
  return found;
}

describe('MySQL migrations', () => {
  it('create every table stating utf8mb4 / utf8mb4_unicode_ci, or state it later for the seven that did not', () => {
    const tables = createdTables();
    expect(tables.length).toBeGreaterThan(30);
    const unstated = tables.filter((entry) => !entry.states).map((entry) => entry.table);
    expect(unstated.sort()).toEqual([...TABLES_WITHOUT_CHARACTER_SET].sort());
  });

  it('has a check that can fail: a table without its character set is seen', () => {
    expect(STATES.test('CREATE TABLE `x` (`id` int NOT NULL) ENGINE=InnoDB')).toBe(false);
    expect(STATES.test('CREATE TABLE `x` (`id` int NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci')).toBe(true);
  });
});
