/**
 * Times on the approval page, relative to the server's clock ("1 minute ago", "in 9 minutes"):
 * the page runs no script, so it cannot read the browser's time zone; the exact time is in the
 * element's `title` and `datetime`, in UTC.
 */
export function relativeTime(at: Date, now: Date): string {
  const seconds = Math.round((at.getTime() - now.getTime()) / 1000);
  const past = seconds <= 0;
  const size = Math.abs(seconds);
  if (size < 45) return past ? 'just now' : 'in less than a minute';
  const [amount, unit] = size < 45 * 60 ? [Math.round(size / 60), 'minute'] : size < 36 * 3600 ? [Math.round(size / 3600), 'hour'] : [Math.round(size / 86_400), 'day'];
  const words = `${amount} ${unit}${amount === 1 ? '' : 's'}`;
  return past ? `${words} ago` : `in ${words}`;
}

/** The exact time for a `title`: `2026-11-27 19:33:19 UTC`. */
export function exactTime(at: Date): string {
  return `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
