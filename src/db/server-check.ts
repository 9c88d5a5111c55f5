import type { DataSource } from 'typeorm';

/**
 * What the service needs of a MySQL or MariaDB server and database, checked at start and by
 * `platform migrate` before any migration runs (a migration that fails halfway leaves tables
 * behind that the next attempt trips over):
 *
 * - the server's version: MariaDB 10.11 or later, or MySQL 8.0 or later (docs/operations/deployments.md "Supported
 *   databases");
 * - the database's default character set and collation: utf8mb4 / utf8mb4_unicode_ci. Tables
 *   made by early migrations take the database's default, and their foreign keys to the tables
 *   that state utf8mb4_unicode_ci fail (errno 150) under any other default: latin1 (MariaDB's own
 *   default), utf8mb4_general_ci (Debian's), utf8mb4_0900_ai_ci (MySQL 8's);
 * - the SQL mode of its connections: strict (`STRICT_TRANS_TABLES` or `STRICT_ALL_TABLES`: a
 *   value too long for its column is refused, never cut, so an id or a hash is stored whole or
 *   not at all), and without `NO_BACKSLASH_ESCAPES` (the driver quotes values with backslash
 *   escapes; under that mode a quote inside a value would end the string).
 *
 * What does not hold is said in one line with the statement to run (or the upgrade to make);
 * the service then exits 2, and `platform migrate` too. SQLite needs none of this.
 */

export const MINIMUM_MARIADB = [10, 11] as const;
export const MINIMUM_MYSQL = [8, 0] as const;
export const REQUIRED_CHARACTER_SET = 'utf8mb4';
export const REQUIRED_COLLATION = 'utf8mb4_unicode_ci';

/** What the check reads from the server, in one query. */
export interface ServerFacts {
  /** `SELECT VERSION()`: `10.11.6-MariaDB-0+deb12u1`, `8.0.36`, `8.0.mysql_aurora.3.05.2`. */
  version: string;
  /** The database of the connection URL. */
  database: string;
  characterSet: string;
  collation: string;
  /** The session's `sql_mode`, as every connection of the pool starts with it. */
  sqlMode: string;
}

export async function readServerFacts(dataSource: DataSource): Promise<ServerFacts> {
  const rows = await dataSource.query<{ version: string; name: string; characterSet: string; collation: string; sqlMode: string }[]>(
    'SELECT VERSION() AS version, DATABASE() AS name, s.DEFAULT_CHARACTER_SET_NAME AS characterSet, s.DEFAULT_COLLATION_NAME AS collation, @@SESSION.sql_mode AS sqlMode ' +
      'FROM information_schema.SCHEMATA s WHERE s.SCHEMA_NAME = DATABASE()',
  );
  const row = rows[0];
  if (!row) throw new Error('the database of DATABASE_URL does not exist, or this user cannot see it');
  return { version: String(row.version), database: String(row.name), characterSet: String(row.characterSet), collation: String(row.collation), sqlMode: String(row.sqlMode ?? '') };
}

function atLeast(found: readonly number[], minimum: readonly number[]): boolean {
  for (let i = 0; i < minimum.length; i++) {
    const have = found[i] ?? 0;
    if (have !== minimum[i]) return have > minimum[i]!;
  }
  return true;
}

/** The server's product and version as numbers, from `VERSION()`. */
export function serverVersion(version: string): { product: 'MariaDB' | 'MySQL'; numbers: number[] } {
  const numbers = (/^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version) ?? []).slice(1).filter((part) => part !== undefined).map(Number);
  return { product: /mariadb/i.test(version) ? 'MariaDB' : 'MySQL', numbers };
}

/** An identifier in backquotes, for a statement the operator copies. */
function quoted(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

/** What is wrong, each with what to run; empty when the server and database will do. */
export function serverProblems(facts: ServerFacts): string[] {
  const problems: string[] = [];
  const { product, numbers } = serverVersion(facts.version);
  const minimum = product === 'MariaDB' ? MINIMUM_MARIADB : MINIMUM_MYSQL;
  if (numbers.length < 2 || !atLeast(numbers, minimum)) {
    problems.push(
      `the server is ${product} ${facts.version}; this service needs MariaDB ${MINIMUM_MARIADB.join('.')} or later, or MySQL ${MINIMUM_MYSQL.join('.')} or later: upgrade the server`,
    );
  }
  if (facts.characterSet !== REQUIRED_CHARACTER_SET || facts.collation !== REQUIRED_COLLATION) {
    problems.push(
      `the database ${facts.database} defaults to ${facts.characterSet} / ${facts.collation}, and its tables need ${REQUIRED_CHARACTER_SET} / ${REQUIRED_COLLATION}: ` +
        `run ALTER DATABASE ${quoted(facts.database)} CHARACTER SET ${REQUIRED_CHARACTER_SET} COLLATE ${REQUIRED_COLLATION}`,
    );
  }
  const modes = facts.sqlMode
    .split(',')
    .map((mode) => mode.trim().toUpperCase())
    .filter(Boolean);
  const strict = modes.includes('STRICT_TRANS_TABLES') || modes.includes('STRICT_ALL_TABLES');
  const backslash = modes.includes('NO_BACKSLASH_ESCAPES');
  if (!strict || backslash) {
    const wanted = [...(strict ? [] : ['STRICT_TRANS_TABLES']), ...modes.filter((mode) => mode !== 'NO_BACKSLASH_ESCAPES')];
    const reasons = [...(strict ? [] : ['is not strict (STRICT_TRANS_TABLES)']), ...(backslash ? ['has NO_BACKSLASH_ESCAPES'] : [])];
    problems.push(
      `the server's SQL mode ${reasons.join(' and ')}: run SET GLOBAL sql_mode = '${wanted.join(',')}' and set sql_mode the same in the server's configuration (or your provider's parameter group)`,
    );
  }
  return problems;
}

/** The one line that says why the service cannot use this database, or undefined when it can. */
export async function databaseRefusal(dataSource: DataSource): Promise<string | undefined> {
  if (dataSource.options.type !== 'mysql' && dataSource.options.type !== 'mariadb') return undefined;
  const problems = serverProblems(await readServerFacts(dataSource));
  return problems.length ? `cannot use this database: ${problems.join('; ')}` : undefined;
}
