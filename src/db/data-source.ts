import { DataSource, type DataSourceOptions } from 'typeorm';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, type DatabaseConfig } from '../config.js';
import { entitiesFor } from './entities.js';
import { MYSQL_MIGRATIONS, SQLITE_MIGRATIONS } from '../migrations/index.js';
import { RevocationSubscriber } from '../auth/revocations.js';

/**
 * The one place a DataSource is made. SQLite (better-sqlite3, WAL) is the embedded default;
 * MySQL/MariaDB serves production. Schema changes come only from migrations, never `synchronize`.
 */
export function dataSourceOptions(database: DatabaseConfig): DataSourceOptions {
  if (database.kind === 'sqlite') {
    if (database.location !== ':memory:') writableDirectory(dirname(database.location));
    return {
      type: 'better-sqlite3',
      database: database.location,
      enableWAL: database.location !== ':memory:',
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('foreign_keys = ON');
        db.pragma('busy_timeout = 5000');
      },
      entities: entitiesFor('sqlite'),
      migrations: SQLITE_MIGRATIONS,
      // Every change that may end an access tells the caches of verified credentials, in this
      // process and (through a counter row) in every other (src/auth/revocations.ts).
      subscribers: [RevocationSubscriber],
      migrationsTableName: 'schema_migrations',
      synchronize: false,
      logging: false,
    };
  }
  return {
    // 'mariadb' and 'mysql' share TypeORM's mysql2 driver; the type only tunes schema reading.
    type: database.flavour,
    url: database.location,
    charset: 'utf8mb4_unicode_ci',
    timezone: 'Z',
    entities: entitiesFor('mysql'),
    migrations: MYSQL_MIGRATIONS,
    subscribers: [RevocationSubscriber],
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    logging: false,
    poolSize: 10,
    connectTimeout: 5_000,
  };
}

/**
 * The SQLite file's directory, created when missing, must be writable (the file, its journal and
 * its WAL live there). In a container that is a mounted volume; say so rather than let SQLite fail
 * later with "unable to open database file".
 */
function writableDirectory(directory: string): void {
  try {
    mkdirSync(directory, { recursive: true });
    accessSync(directory, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new ConfigError(
      'DATABASE_URL',
      `the SQLite directory ${resolve(directory)} cannot be written (${code}): mount a writable volume there (in the container image: /app/data), or use MySQL or MariaDB`,
    );
  }
}

/**
 * SQLite has one connection, and a transaction spans awaits: a second transaction started while
 * one is open would begin inside it ("cannot start a transaction within a transaction"), or
 * commit or roll back the other's work. Transactions therefore take turns on SQLite; MySQL gives
 * each its own pooled connection.
 */
function serialiseTransactions(dataSource: DataSource): void {
  const manager = dataSource.manager;
  const transaction = manager.transaction.bind(manager) as (...args: unknown[]) => Promise<unknown>;
  let queue: Promise<unknown> = Promise.resolve();
  (manager as { transaction: (...args: unknown[]) => Promise<unknown> }).transaction = (...args: unknown[]) => {
    const turn = queue.then(() => transaction(...args));
    queue = turn.catch(() => undefined);
    return turn;
  };
}

export function createDataSource(database: DatabaseConfig): DataSource {
  const dataSource = new DataSource(dataSourceOptions(database));
  if (database.kind === 'sqlite') serialiseTransactions(dataSource);
  return dataSource;
}

/**
 * A read replica's DataSource (`DATABASE_READ_URL`, src/db/read-replica.ts): the same entities,
 * no migrations (the replica receives the primary's schema through replication), no subscribers
 * (nothing is written through it).
 */
export function createReadDataSource(database: DatabaseConfig): DataSource {
  const options = dataSourceOptions(database);
  if (options.type !== 'mysql' && options.type !== 'mariadb') throw new ConfigError('DATABASE_READ_URL', 'must be a MySQL or MariaDB database');
  return new DataSource({ ...options, migrations: [], subscribers: [], migrationsRun: false });
}
