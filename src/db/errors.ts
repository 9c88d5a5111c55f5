import { QueryFailedError } from 'typeorm';

/** A unique or primary key was violated: someone else inserted the same row first. */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_DUP_ENTRY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** A row another row refers to is gone (or a referring row remains): someone deleted it meanwhile. */
export function isForeignKeyViolation(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_NO_REFERENCED_ROW_2' || code === 'ER_ROW_IS_REFERENCED_2' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

/** InnoDB chose this transaction to undo (a deadlock) or it waited too long for a lock: run it again. */
export function isRetryableConflict(error: unknown): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const code = (error.driverError as { code?: string } | undefined)?.code ?? '';
  return code === 'ER_LOCK_DEADLOCK' || code === 'ER_LOCK_WAIT_TIMEOUT';
}

/**
 * Runs a transaction, again (at most `attempts` times in all) when the database undid it for a
 * deadlock: the work must be safe to repeat, as a whole transaction is.
 */
export async function withRetries<T>(attempts: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt < attempts && isRetryableConflict(error)) continue;
      throw error;
    }
  }
}

/**
 * What the drivers say when the database itself cannot be used just now (stopped, restarting,
 * unreachable, out of connections, its file not openable), as opposed to a query it refused.
 * mysql2 reports a lost or refused connection with the socket's code (`ECONNREFUSED`,
 * `ECONNRESET`, `ETIMEDOUT`, …) or its own (`PROTOCOL_CONNECTION_LOST`, a fatal error followed by
 * `PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR`), and the server's shutdown or a killed connection with
 * `ER_*` codes; TypeORM passes a failed connection acquisition through unwrapped and wraps a
 * failed query in QueryFailedError (`driverError`). better-sqlite3 reports a busy or locked file
 * once its busy timeout ran out, a file it cannot open or read, and a closed handle (a TypeError).
 */
const UNAVAILABLE_CODES = new Set([
  // The socket (net, dns).
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // mysql2.
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'PROTOCOL_ENQUEUE_HANDSHAKE_TWICE',
  // The server: shutting down, connection killed, too many connections, lost mid-query.
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_NET_READ_ERROR',
  'ER_NET_READ_INTERRUPTED',
  'ER_NET_ERROR_ON_WRITE',
  'ER_NET_WRITE_INTERRUPTED',
  'ER_QUERY_INTERRUPTED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'CR_SERVER_GONE_ERROR',
  'CR_SERVER_LOST',
  'CR_CONNECTION_ERROR',
  'CR_CONN_HOST_ERROR',
  // better-sqlite3.
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_CANTOPEN',
  'SQLITE_IOERR',
]);

/** Messages of errors that carry no code: a closed pool or handle, a data source not connected. */
const UNAVAILABLE_MESSAGES = [/^Pool is closed\.?$/, /^The database connection is not open$/, /^Connection is not established with \w+ database$/, /^Can't add new command when connection is in closed state$/];

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 3) return false;
  const code = codeOf(error);
  if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_CANTOPEN'))) return true;
  const message = (error as { message?: unknown }).message;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message.replace(/^TypeError: /, '')))) return true;
  const { driverError, cause } = error as { driverError?: unknown; cause?: unknown };
  return isDatabaseUnavailable(driverError, depth + 1) || isDatabaseUnavailable(cause, depth + 1);
}

/**
 * A table or a column the query names does not exist: the schema is older than this build (the
 * service was started with MIGRATE_ON_START=false and `platform migrate` has not run yet), or a
 * table was dropped by hand. Not a bug of the request: 503 `unavailable`, like an outage.
 * MySQL/MariaDB say so with codes; better-sqlite3 with SQLITE_ERROR and the message.
 */
const SCHEMA_CODES = new Set(['ER_NO_SUCH_TABLE', 'ER_BAD_FIELD_ERROR', 'ER_NO_SUCH_TABLE_IN_ENGINE']);
const SQLITE_SCHEMA_MESSAGE = /^(?:no such (?:table|column): |table \S+ has no column named )/;

export function isSchemaMissing(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 3) return false;
  const code = codeOf(error);
  if (code && SCHEMA_CODES.has(code)) return true;
  const message = (error as { message?: unknown }).message;
  if (code === 'SQLITE_ERROR' && typeof message === 'string' && SQLITE_SCHEMA_MESSAGE.test(message)) return true;
  const { driverError, cause } = error as { driverError?: unknown; cause?: unknown };
  return isSchemaMissing(driverError, depth + 1) || isSchemaMissing(cause, depth + 1);
}

/** What a log line says about a failure: its message's first line and its code, never a stack. */
export function reasonOf(error: unknown): { reason: string; errorCode?: string } {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return {
    reason: (message.split('\n')[0] ?? '').slice(0, 300) || 'unknown',
    // Not `code`: that field name is redacted in every log line (it is the OAuth authorization code).
    ...(typeof code === 'string' ? { errorCode: code } : {}),
  };
}

/**
 * Where a database is, for a line a person reads: host:port of MySQL/MariaDB or the SQLite file's
 * path. Never a user or password (DATABASE_URL may carry one).
 */
export function databaseAddress(database: { kind: 'sqlite' | 'mysql'; location: string }): string {
  if (database.kind === 'sqlite') return database.location;
  try {
    const url = new URL(database.location);
    return `${url.hostname}:${url.port || '3306'}`;
  } catch {
    return 'DATABASE_URL';
  }
}
