import { DataSource, type DataSourceOptions } from 'typeorm';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DatabaseConfig } from '../config.js';
import { ENTITIES } from './entities.js';
import { MYSQL_MIGRATIONS, SQLITE_MIGRATIONS } from '../migrations/index.js';

/**
 * The one place a DataSource is made. SQLite (better-sqlite3, WAL) is the embedded default;
 * MySQL/MariaDB serves production. Schema changes come only from migrations, never `synchronize`.
 */
export function dataSourceOptions(database: DatabaseConfig): DataSourceOptions {
  if (database.kind === 'sqlite') {
    if (database.location !== ':memory:') mkdirSync(dirname(database.location), { recursive: true });
    return {
      type: 'better-sqlite3',
      database: database.location,
      enableWAL: database.location !== ':memory:',
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('foreign_keys = ON');
        db.pragma('busy_timeout = 5000');
      },
      entities: ENTITIES,
      migrations: SQLITE_MIGRATIONS,
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
    entities: ENTITIES,
    migrations: MYSQL_MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    logging: false,
    poolSize: 10,
    connectTimeout: 5_000,
  };
}

export function createDataSource(database: DatabaseConfig): DataSource {
  return new DataSource(dataSourceOptions(database));
}
