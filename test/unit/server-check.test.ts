import { describe, expect, it } from '@jest/globals';
import { serverProblems, serverVersion, type ServerFacts } from '../../src/db/server-check.js';

/** What a MySQL or MariaDB server must be for the service (src/db/server-check.ts), read from its facts. */
const good: ServerFacts = {
  version: '10.11.19-MariaDB-0+deb12u1',
  database: 'platform',
  characterSet: 'utf8mb4',
  collation: 'utf8mb4_unicode_ci',
  sqlMode: 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION',
};

describe('the database server check', () => {
  it.each([
    ['MariaDB 10.11 (Debian 12)', '10.11.19-MariaDB-0+deb12u1'],
    ['MariaDB 11.4', '11.4.2-MariaDB'],
    ['MySQL 8.0', '8.0.36'],
    ['MySQL 8.4 LTS', '8.4.0'],
    ['Percona Server 8.0', '8.0.36-28'],
    ['Aurora MySQL 3', '8.0.mysql_aurora.3.05.2'],
  ])('accepts %s with a utf8mb4_unicode_ci database in strict mode', (_what, version) => {
    expect(serverProblems({ ...good, version })).toEqual([]);
  });

  it.each([
    ['MariaDB 10.6', '10.6.18-MariaDB', 'MariaDB'],
    ['MariaDB 10.5', '10.5.23-MariaDB-0+deb11u1', 'MariaDB'],
    ['MySQL 5.7', '5.7.44', 'MySQL'],
    ['something unreadable', 'unknown', 'MySQL'],
  ])('refuses %s: upgrade the server', (_what, version, product) => {
    expect(serverProblems({ ...good, version })).toEqual([
      `the server is ${product} ${version}; this service needs MariaDB 10.11 or later, or MySQL 8.0 or later: upgrade the server`,
    ]);
  });

  it('reads the product and the version', () => {
    expect(serverVersion('10.11.19-MariaDB-0+deb12u1')).toEqual({ product: 'MariaDB', numbers: [10, 11, 19] });
    expect(serverVersion('8.0.mysql_aurora.3.05.2')).toEqual({ product: 'MySQL', numbers: [8, 0] });
  });

  it.each([
    ['latin1, MariaDB\'s own default', 'latin1', 'latin1_swedish_ci'],
    ['utf8mb4_general_ci, Debian\'s default', 'utf8mb4', 'utf8mb4_general_ci'],
    ['utf8mb4_0900_ai_ci, MySQL 8\'s default', 'utf8mb4', 'utf8mb4_0900_ai_ci'],
    ['utf8mb3', 'utf8mb3', 'utf8mb3_general_ci'],
  ])('refuses a database that defaults to %s, saying the ALTER DATABASE to run', (_what, characterSet, collation) => {
    expect(serverProblems({ ...good, database: 'platform-prod', characterSet, collation })).toEqual([
      `the database platform-prod defaults to ${characterSet} / ${collation}, and its tables need utf8mb4 / utf8mb4_unicode_ci: run ALTER DATABASE \`platform-prod\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    ]);
  });

  it('quotes a database name holding a backquote in the statement it gives', () => {
    const [problem] = serverProblems({ ...good, database: 'odd`name', characterSet: 'latin1', collation: 'latin1_swedish_ci' });
    expect(problem).toContain('run ALTER DATABASE `odd``name` CHARACTER SET utf8mb4');
  });

  it('refuses a SQL mode that is not strict, saying the mode to set (the rest of it kept)', () => {
    expect(serverProblems({ ...good, sqlMode: 'ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION' })).toEqual([
      "the server's SQL mode is not strict (STRICT_TRANS_TABLES): run SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION' and set sql_mode the same in the server's configuration (or your provider's parameter group)",
    ]);
    expect(serverProblems({ ...good, sqlMode: '' })[0]).toContain("SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES'");
  });

  it('refuses NO_BACKSLASH_ESCAPES (the driver quotes with backslashes), and accepts STRICT_ALL_TABLES', () => {
    expect(serverProblems({ ...good, sqlMode: 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES' })).toEqual([
      "the server's SQL mode has NO_BACKSLASH_ESCAPES: run SET GLOBAL sql_mode = 'STRICT_ALL_TABLES' and set sql_mode the same in the server's configuration (or your provider's parameter group)",
    ]);
    expect(serverProblems({ ...good, sqlMode: 'STRICT_ALL_TABLES' })).toEqual([]);
    expect(serverProblems({ ...good, sqlMode: 'ANSI_QUOTES,STRICT_TRANS_TABLES' })).toEqual([]);
  });

  it('says every problem at once', () => {
    expect(serverProblems({ version: '10.5.1-MariaDB', database: 'p', characterSet: 'latin1', collation: 'latin1_swedish_ci', sqlMode: 'NO_BACKSLASH_ESCAPES' })).toHaveLength(3);
  });
});
