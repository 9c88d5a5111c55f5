import type { DataSource, EntityManager } from 'typeorm';

interface Statement {
  all(...params: unknown[]): unknown[];
}
interface SqliteHandle {
  prepare(sql: string): Statement;
}

const statements = new WeakMap<object, Map<string, Statement>>();

/**
 * A read on the request's hot path (a token look-up, an identity): one plain SQL text, the same on
 * SQLite and MySQL. On SQLite it runs as a better-sqlite3 statement prepared once per connection,
 * without TypeORM's query runner, logger and event broadcast around it (SQLite has one connection,
 * so this sees what every other query sees, an open transaction's writes included). On MySQL it
 * is one raw query through the data source's pool. Rows come back as the driver gives them (dates
 * as text on SQLite: `storedDate`).
 */
export async function hotRead(db: DataSource | EntityManager, sql: string, params: readonly unknown[]): Promise<Record<string, unknown>[]> {
  const manager = 'manager' in db ? db.manager : db;
  const driver = manager.connection.driver as { options: { type: string }; databaseConnection?: SqliteHandle };
  if (driver.options.type === 'better-sqlite3' && driver.databaseConnection) {
    const handle = driver.databaseConnection;
    let cache = statements.get(handle);
    if (!cache) statements.set(handle, (cache = new Map()));
    let statement = cache.get(sql);
    if (!statement) cache.set(sql, (statement = handle.prepare(sql)));
    return statement.all(...params) as Record<string, unknown>[];
  }
  return await manager.query<Record<string, unknown>[]>(sql, params as unknown[]);
}
