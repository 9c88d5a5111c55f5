import { invalidRequest } from '../errors.js';

/**
 * Timestamps a request asks the service to store, or to compare with stored ones.
 *
 * RFC 3339 allows the years 0000 to 9999 and offsets up to ±23:59, so `9999-12-31T23:30:00-01:00`
 * (the year 10000 in UTC) and `0000-01-01T00:00:00Z` are valid timestamps, yet no stored timestamp
 * column holds them: MySQL's and MariaDB's DATETIME holds the years 1000 to 9999, and every time is
 * stored in UTC (SQLite keeps the same text). Out of that range MariaDB refuses the row, or, under
 * `INSERT IGNORE`, stores a zero date that cannot be read back. One rule for every such time,
 * checked before anything is stored or compared: an instant in the UTC years 1000 to 9999.
 */

export const EARLIEST_STORED_TIME = Date.UTC(1000, 0, 1);
export const LATEST_STORED_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** How refusals name the rule. */
export const STORED_YEARS = 'in the years 1000 to 9999 (UTC)';

/**
 * An RFC 3339 timestamp as an instant. A leap second (`…:60`) is valid RFC 3339 but not a
 * JavaScript date: it is taken as the last millisecond of the minute it closes.
 */
export function instant(value: string): Date {
  const date = new Date(value);
  if (!Number.isNaN(date.getTime())) return date;
  return new Date(new Date(value.replace(/:60(\.\d+)?(?=Z|[+-]|$)/i, ':59.999')).getTime());
}

/** Whether a stored timestamp column holds the instant. */
export function isStorable(date: Date): boolean {
  const time = date.getTime();
  return time >= EARLIEST_STORED_TIME && time <= LATEST_STORED_TIME;
}

/** The instant of a request's RFC 3339 `value`, or 400 `invalid_request` naming `field` when no stored timestamp holds it. */
export function storableInstant(value: string, field: string): Date {
  const date = instant(value);
  if (!isStorable(date)) throw invalidRequest(`${field} must be a time ${STORED_YEARS}`, { field });
  return date;
}

/** The form `toISOString` writes, in a stored year (1000 to 9999), seconds below 60. */
const CANONICAL_UTC = /^[1-9]\d{3}-\d\d-\d\dT\d\d:[0-5]\d:[0-5]\d\.\d{3}Z$/;

/**
 * The UTC text a stored timestamp column holds (`YYYY-MM-DD HH:MM:SS.sss`), read straight off a
 * timestamp sent in the form `toISOString` writes (`YYYY-MM-DDTHH:MM:SS.sssZ`: what workbenches
 * send) in a stored year; undefined for any other form, year or a leap second, which
 * `storableInstant` reads. `value` must already be a valid RFC 3339 date-time (the schema's
 * `date-time` format checked its month and day): the text is then exactly what
 * `toISOString` of its instant gives, so nothing is parsed into a Date and written out again.
 */
export function canonicalStoredText(value: string): string | undefined {
  return CANONICAL_UTC.test(value) ? storedTextOfIso(value) : undefined;
}

/**
 * The UTC text of an instant as a stored timestamp column holds it (`YYYY-MM-DD HH:MM:SS.sss`):
 * what TypeORM keeps on SQLite, and what mysql2 writes for a Date on a `timezone: 'Z'` connection.
 */
export function utcText(date: Date): string {
  return storedTextOfIso(date.toISOString());
}

/** `YYYY-MM-DDTHH:mm:ss.sssZ` (every stored year, 1000 to 9999) as stored: two slices, no search. */
function storedTextOfIso(iso: string): string {
  return iso.length === 24 ? `${iso.slice(0, 10)} ${iso.slice(11, 23)}` : iso.replace('T', ' ').replace('Z', '');
}
