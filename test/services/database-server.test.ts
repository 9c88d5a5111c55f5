import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import mysql from 'mysql2/promise';
import { createDataSource } from '../../src/db/data-source.js';
import { runCliCapturing } from '../support/cli.js';
import { MariaDbServer } from '../support/mariadb-server.js';
import { LoggedService } from '../support/service-process.js';

/**
 * Installs on any MariaDB (src/db/server-check.ts): `platform migrate` and the service's start
 * check the server's version, the database's default character set and collation and the SQL
 * mode before any migration runs, and refuse what they cannot work with in one line saying what
 * to run, exit 2, having created nothing. Run what the line says, and the same database migrates;
 * every table and column then states utf8mb4 (utf8mb4_unicode_ci, or utf8mb4_bin where values
 * compare exactly).
 *
 * On the real MariaDB: the shared server (Debian's configuration: utf8mb4 / utf8mb4_general_ci),
 * and servers of the test's own, one with MariaDB's compiled-in defaults (latin1) and one whose
 * SQL mode is neither strict nor free of NO_BACKSLASH_ESCAPES.
 */

const SHARED = (process.env.TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306').replace(/^mariadb:/, 'mysql:').replace(/\/$/, '');

async function onServer(serverUrl: string, sql: string): Promise<unknown> {
  const connection = await mysql.createConnection({ uri: serverUrl });
  try {
    const [rows] = await connection.query(sql);
    return rows;
  } finally {
    await connection.end();
  }
}

const cleanUp: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanUp.splice(0).reverse()) await step().catch(() => undefined);
});

/** A new database on the server, made by `create` (`CREATE DATABASE <name>` plus what follows). */
async function newDatabase(serverUrl: string, options = ''): Promise<{ name: string; url: string }> {
  const name = `charset_test_${randomBytes(5).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE \`${name}\`${options}`);
  cleanUp.push(() => onServer(serverUrl, `DROP DATABASE IF EXISTS \`${name}\``));
  return { name, url: `${serverUrl}/${name}` };
}

async function migrate(url: string) {
  return runCliCapturing(['migrate'], { env: { DATABASE_URL: url, LOG_LEVEL: 'warn' } });
}

async function tablesOf(serverUrl: string, database: string): Promise<string[]> {
  const rows = (await onServer(serverUrl, `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${database}' ORDER BY TABLE_NAME`)) as { name: string }[];
  return rows.map((row) => row.name);
}

/** Every table and text column that does not state utf8mb4 as the service needs it. */
async function characterSetDefects(serverUrl: string, database: string): Promise<string[]> {
  const tables = (await onServer(
    serverUrl,
    `SELECT TABLE_NAME AS name, TABLE_COLLATION AS collation FROM information_schema.TABLES WHERE TABLE_SCHEMA = '${database}' AND TABLE_COLLATION <> 'utf8mb4_unicode_ci'`,
  )) as { name: string; collation: string }[];
  const columns = (await onServer(
    serverUrl,
    `SELECT TABLE_NAME AS tableName, COLUMN_NAME AS name, COLLATION_NAME AS collation FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '${database}' AND COLLATION_NAME IS NOT NULL AND COLLATION_NAME NOT IN ('utf8mb4_unicode_ci', 'utf8mb4_bin')`,
  )) as { tableName: string; name: string; collation: string }[];
  return [...tables.map((t) => `table ${t.name}: ${t.collation}`), ...columns.map((c) => `column ${c.tableName}.${c.name}: ${c.collation}`)];
}

/** The statement the refusal says to run, as the operator would copy it. */
function statementIn(line: string): string {
  const statement = /run (.+?)(?: and set sql_mode|$)/.exec(line.trim())?.[1];
  if (!statement) throw new Error(`no statement in: ${line}`);
  return statement;
}

describe('a database made with the shared server\'s defaults (utf8mb4 / utf8mb4_general_ci, as Debian configures MariaDB)', () => {
  it('is refused by `platform migrate` in one line with the ALTER DATABASE to run, exit 2, nothing created; after it, migrates', async () => {
    const database = await newDatabase(SHARED);
    const refused = await migrate(database.url);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `platform: cannot use this database: the database ${database.name} defaults to utf8mb4 / utf8mb4_general_ci, and its tables need utf8mb4 / utf8mb4_unicode_ci: run ALTER DATABASE \`${database.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n`,
    );
    expect(await tablesOf(SHARED, database.name)).toEqual([]);

    await onServer(database.url, statementIn(refused.stderr));
    const migrated = await migrate(database.url);
    expect(migrated.stderr).toBe('');
    expect(migrated.code).toBe(0);
    expect(migrated.stdout).toMatch(/^Applied \d+ migrations to the mysql database:\n/);
    expect(await characterSetDefects(SHARED, database.name)).toEqual([]);
    expect((await migrate(database.url)).stdout).toBe('The mysql database is up to date; no migration to apply.\n');
  });
});

describe('a database made as docs/operations/deployments.md says', () => {
  it('migrates at once, every table and column utf8mb4 (utf8mb4_unicode_ci, or utf8mb4_bin where values compare exactly)', async () => {
    const database = await newDatabase(SHARED, ' CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
    const migrated = await migrate(database.url);
    expect(migrated.code).toBe(0);
    const tables = await tablesOf(SHARED, database.name);
    expect(tables).toEqual(expect.arrayContaining(['pictures', 'signing_keys', 'cloud_agent_runs', 'invitations', 'auth_revocations', 'sweeper_runs', 'schema_migrations']));
    expect(await characterSetDefects(SHARED, database.name)).toEqual([]);
    // The exact columns kept their binary collation (the conversion changed table defaults only).
    const exact = (await onServer(
      SHARED,
      `SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME) AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '${database.name}' AND COLLATION_NAME = 'utf8mb4_bin' ORDER BY 1`,
    )) as { name: string }[];
    expect(exact.map((row) => row.name)).toEqual(expect.arrayContaining(['pictures.slug', 'cloud_agent_runs.id', 'invitations.email', 'person_identities.subject']));
  });
});

describe('a server left with MariaDB\'s compiled-in defaults (latin1 / latin1_swedish_ci)', () => {
  let server: MariaDbServer;
  beforeAll(async () => {
    server = await MariaDbServer.create([]);
  }, 90_000);
  afterAll(() => server?.close());

  it('would fail half-way without the check: the first table made without a character set cannot refer to the others (errno 150)', async () => {
    const database = await newDatabase(server.url('').replace(/\/$/, ''));
    const dataSource = createDataSource({ kind: 'mysql', flavour: 'mariadb', location: database.url });
    await dataSource.initialize();
    try {
      await expect(dataSource.runMigrations({ transaction: 'each' })).rejects.toThrow(/errno: 150 "Foreign key constraint is incorrectly formed"/);
    } finally {
      await dataSource.destroy();
    }
  });

  it('refuses `platform migrate` with the statement to run; after it, migrates', async () => {
    const serverUrl = server.url('').replace(/\/$/, '');
    const database = await newDatabase(serverUrl);
    const refused = await migrate(database.url);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `platform: cannot use this database: the database ${database.name} defaults to latin1 / latin1_swedish_ci, and its tables need utf8mb4 / utf8mb4_unicode_ci: run ALTER DATABASE \`${database.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n`,
    );
    expect(await tablesOf(serverUrl, database.name)).toEqual([]);
    await onServer(database.url, statementIn(refused.stderr));
    expect((await migrate(database.url)).code).toBe(0);
    expect(await characterSetDefects(serverUrl, database.name)).toEqual([]);
  });

  it('stops the service at start in one JSON line saying what to run, exit 2, without a stack trace and without creating anything', async () => {
    const serverUrl = server.url('').replace(/\/$/, '');
    const database = await newDatabase(serverUrl);
    for (const migrateOnStart of ['true', 'false']) {
      const service = new LoggedService({ DATABASE_URL: database.url, MIGRATE_ON_START: migrateOnStart });
      cleanUp.push(() => service.stop());
      expect(await service.exited).toBe(2);
      const fatal = service.lines.filter((line) => line.level === 60);
      expect(fatal).toEqual([
        expect.objectContaining({
          dependency: 'database',
          msg: `cannot use this database: the database ${database.name} defaults to latin1 / latin1_swedish_ci, and its tables need utf8mb4 / utf8mb4_unicode_ci: run ALTER DATABASE \`${database.name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
        }),
      ]);
      expect(service.raw.join('\n')).not.toMatch(/"stack"|\n[ \t]+at /);
      expect(service.stderr).toBe('');
    }
    expect(await tablesOf(serverUrl, database.name)).toEqual([]);
  });
});

describe('a server whose SQL mode is not strict and has NO_BACKSLASH_ESCAPES', () => {
  let server: MariaDbServer;
  beforeAll(async () => {
    server = await MariaDbServer.create(['--character-set-server=utf8mb4', '--collation-server=utf8mb4_unicode_ci', '--sql-mode=NO_BACKSLASH_ESCAPES,NO_ENGINE_SUBSTITUTION']);
  }, 90_000);
  afterAll(() => server?.close());

  it('is refused with the SET GLOBAL sql_mode to run; after it, the database migrates', async () => {
    const serverUrl = server.url('').replace(/\/$/, '');
    const database = await newDatabase(serverUrl);
    const refused = await migrate(database.url);
    expect(refused.code).toBe(2);
    // The mode kept as the connection has it, strict added and NO_BACKSLASH_ESCAPES taken out.
    expect(refused.stderr).toMatch(
      /^platform: cannot use this database: the server's SQL mode is not strict \(STRICT_TRANS_TABLES\) and has NO_BACKSLASH_ESCAPES: run SET GLOBAL sql_mode = 'STRICT_TRANS_TABLES,[A-Z_,]*NO_ENGINE_SUBSTITUTION' and set sql_mode the same in the server's configuration \(or your provider's parameter group\)\n$/,
    );
    expect(refused.stderr).not.toMatch(/= '[^']*NO_BACKSLASH_ESCAPES/);
    expect(await tablesOf(serverUrl, database.name)).toEqual([]);
    await onServer(serverUrl, statementIn(refused.stderr));
    expect((await migrate(database.url)).code).toBe(0);
  });
});

describe('the service started with MIGRATE_ON_START=false on an empty database (as the chart\'s replicas start)', () => {
  it('starts, answers 503 `unavailable` where the database is needed, and serves once `platform migrate` has run, without a restart', async () => {
    const database = await newDatabase(SHARED, ' CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
    const service = new LoggedService({
      DATABASE_URL: database.url,
      MIGRATE_ON_START: 'false',
      SIGNING_KEYS_SECRET: 'c2lnbmluZy1rZXlzLXNlY3JldC1mb3ItdW5taWdyYXRlZC10ZXN0cw',
    });
    cleanUp.push(() => service.stop());
    const port = await service.port();
    const discovery = () => fetch(`http://127.0.0.1:${port}/.well-known/platform.json`, { headers: { Host: 'localhost' } });
    const before = await discovery();
    expect(before.status).toBe(503);
    expect(before.headers.get('retry-after')).toBe('5');
    expect(await before.json()).toEqual({ error: 'unavailable', message: 'the service is being upgraded (its database migrations have not run yet); try again shortly' });
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
    // Nothing was written: not even the migrations table.
    expect(await tablesOf(SHARED, database.name)).toEqual([]);

    expect((await migrate(database.url)).code).toBe(0);
    // The service reads the migrations table again at most once a second.
    const deadline = Date.now() + 10_000;
    let after = await discovery();
    while (after.status === 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      after = await discovery();
    }
    // Served: no organisation at localhost (the first-start organisation waits for a start on a migrated schema).
    expect(after.status).toBe(404);
    expect(((await after.json()) as { error: string }).error).toBe('unknown_tenant');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    expect(service.lines.filter((line) => (line.msg as string | undefined)?.startsWith('unexpected'))).toEqual([]);
    expect(service.stderr).toBe('');
  });
});
