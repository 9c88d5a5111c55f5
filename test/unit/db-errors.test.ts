import { describe, expect, it } from '@jest/globals';
import { QueryFailedError, TypeORMError } from 'typeorm';
import { isDatabaseUnavailable, isSchemaMissing } from '../../src/db/errors.js';

/** What the drivers throw when the database cannot be used, against what a query it refused looks like. */
const coded = (code: string, message = code) => Object.assign(new Error(message), { code });
const failedQuery = (driverError: Error) => new QueryFailedError('SELECT 1', [], driverError);

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection (mysql2, pool acquisition, unwrapped)', coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:3306')],
    ['a connection lost mid-query', failedQuery(coded('PROTOCOL_CONNECTION_LOST', 'Connection lost: The server closed the connection.'))],
    ['a command after a fatal error', failedQuery(coded('PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR'))],
    ['the server shutting down', failedQuery(coded('ER_SERVER_SHUTDOWN'))],
    ['a killed connection', failedQuery(coded('ER_CONNECTION_KILLED'))],
    ['too many connections', coded('ER_CON_COUNT_ERROR')],
    ['a reset socket', failedQuery(coded('ECONNRESET'))],
    ['a connect timeout', coded('ETIMEDOUT')],
    ['SQLite busy past its timeout', failedQuery(coded('SQLITE_BUSY'))],
    ['SQLite failing to read its file', failedQuery(coded('SQLITE_IOERR_READ'))],
    ['a closed better-sqlite3 handle', failedQuery(new TypeError('The database connection is not open'))],
    ['a closed mysql2 pool', new Error('Pool is closed.')],
    ['a data source no longer connected', new TypeORMError('Connection is not established with mysql database')],
    ['the cause of a wrapping error', new Error('wrapped', { cause: coded('ECONNREFUSED') })],
  ])('is true for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a duplicate key', failedQuery(coded('ER_DUP_ENTRY'))],
    ['a deadlock (retried elsewhere)', failedQuery(coded('ER_LOCK_DEADLOCK'))],
    ['a syntax error', failedQuery(coded('ER_PARSE_ERROR'))],
    ['a SQLite constraint', failedQuery(coded('SQLITE_CONSTRAINT_UNIQUE'))],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['nothing', undefined],
    ['a string', 'ECONNREFUSED'],
  ])('is false for %s', (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});

describe('isSchemaMissing', () => {
  it.each([
    ['a missing table (MySQL, MariaDB)', failedQuery(coded('ER_NO_SUCH_TABLE', "Table 'platform.organisations' doesn't exist"))],
    ['a missing column (MySQL, MariaDB)', failedQuery(coded('ER_BAD_FIELD_ERROR', "Unknown column 'removed_at' in 'field list'"))],
    ['a table InnoDB lost', failedQuery(coded('ER_NO_SUCH_TABLE_IN_ENGINE'))],
    ['a missing table (SQLite)', failedQuery(coded('SQLITE_ERROR', 'no such table: organisation_hosts'))],
    ['a missing column (SQLite)', failedQuery(coded('SQLITE_ERROR', 'no such column: removed_at'))],
    ['a column missing from an insert (SQLite)', failedQuery(coded('SQLITE_ERROR', 'table memberships has no column named removed_at'))],
  ])('is true for %s', (_what, error) => {
    expect(isSchemaMissing(error)).toBe(true);
    expect(isDatabaseUnavailable(error)).toBe(false);
  });

  it.each([
    ['a SQLite syntax error', failedQuery(coded('SQLITE_ERROR', 'near "SELEC": syntax error'))],
    ['a SQLite error that only mentions a table', failedQuery(coded('SQLITE_ERROR', 'cannot drop table: no such table: x'))],
    ['a duplicate key', failedQuery(coded('ER_DUP_ENTRY'))],
    ['an outage', coded('ECONNREFUSED')],
    ['a bug', new TypeError('no such table: x')],
    ['nothing', undefined],
  ])('is false for %s', (_what, error) => {
    expect(isSchemaMissing(error)).toBe(false);
  });
});
