import type { MigrationInterface } from 'typeorm';
import { Foundation1763740000000 as SqliteFoundation } from './sqlite/1763740000000-foundation.js';
import { Foundation1763740000000 as MysqlFoundation } from './mysql/1763740000000-foundation.js';
import { Devices1763750000000 as SqliteDevices } from './sqlite/1763750000000-devices.js';
import { Devices1763750000000 as MysqlDevices } from './mysql/1763750000000-devices.js';

type MigrationClass = new () => MigrationInterface;

/** Migrations per dialect, in order. Listed by hand so they load the same in ESM, tests and builds. */
export const SQLITE_MIGRATIONS: MigrationClass[] = [SqliteFoundation, SqliteDevices];
export const MYSQL_MIGRATIONS: MigrationClass[] = [MysqlFoundation, MysqlDevices];
