/** A datetime as a raw query returns it: a Date from MySQL, UTC text (`YYYY-MM-DD hh:mm:ss.sss`) from SQLite. */
export function storedDate(value: unknown): Date {
  if (value instanceof Date) return value;
  return new Date(`${String(value).replace(' ', 'T')}Z`);
}
