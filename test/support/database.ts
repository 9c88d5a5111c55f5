import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import type { DatabaseConfig } from '../../src/config.js';

/**
 * A fresh database for one test file: SQLite in memory for the http project, a new MariaDB
 * database for the services project (TEST_DATABASE=mariadb), dropped when the file is done.
 */
export interface TestDatabase {
  config: DatabaseConfig;
  url: string;
  drop(): Promise<void>;
}

export function usingMariadb(): boolean {
  return process.env.TEST_DATABASE === 'mariadb';
}

export async function freshDatabase(onServer?: string): Promise<TestDatabase> {
  if (!usingMariadb() && onServer === undefined) {
    return { config: { kind: 'sqlite', flavour: 'mysql', location: ':memory:' }, url: 'sqlite::memory:', drop: async () => undefined };
  }
  const server = (onServer ?? process.env.TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306').replace(/\/$/, '');
  const name = `platform_t_${randomBytes(6).toString('hex')}`;
  const admin = await mysql.createConnection({ uri: server.replace(/^mariadb:/, 'mysql:') });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await admin.end();
  const url = `${server}/${name}`;
  return {
    config: { kind: 'mysql', flavour: 'mariadb', location: url.replace(/^mariadb:/, 'mysql:') },
    url,
    drop: async () => {
      const connection = await mysql.createConnection({ uri: server.replace(/^mariadb:/, 'mysql:') });
      await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await connection.end();
    },
  };
}
