import type { DataSource } from 'typeorm';
import { utcText } from '../util/time.js';

export type Dialect = 'sqlite' | 'mysql';

export function dialectOf(dataSource: DataSource): Dialect {
  return dataSource.options.type === 'better-sqlite3' ? 'sqlite' : 'mysql';
}

/** How a timestamp is bound: better-sqlite3 binds no Date; TypeORM keeps UTC text there. */
export function sqlTime(dialect: Dialect, date: Date): Date | string {
  return dialect === 'sqlite' ? utcText(date) : date;
}

/** A datetime as a raw query returns it: a Date from MySQL, UTC text (`YYYY-MM-DD hh:mm:ss.sss`) from SQLite. */
export function storedDate(value: unknown): Date {
  if (value instanceof Date) return value;
  return new Date(`${String(value).replace(' ', 'T')}Z`);
}
