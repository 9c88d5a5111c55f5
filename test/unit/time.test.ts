import { describe, expect, it } from '@jest/globals';
import { instant, isStorable, storableInstant } from '../../src/util/time.js';

describe('stored times (src/util/time.ts)', () => {
  it('reads RFC 3339 as an instant, a leap second as the last millisecond of its minute', () => {
    expect(instant('2026-12-31T23:59:60Z').toISOString()).toBe('2026-12-31T23:59:59.999Z');
    expect(instant('2026-06-30T23:59:60.5+02:00').toISOString()).toBe('2026-06-30T21:59:59.999Z');
    expect(instant('2026-01-01T01:00:00+01:00').toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  it('holds the UTC years 1000 to 9999, to the millisecond, whatever the offset said', () => {
    expect(isStorable(instant('1000-01-01T00:00:00.000Z'))).toBe(true);
    expect(isStorable(instant('9999-12-31T23:59:59.999Z'))).toBe(true);
    expect(isStorable(instant('0999-12-31T23:59:59.999Z'))).toBe(false);
    expect(isStorable(instant('1000-01-01T00:30:00+01:00'))).toBe(false);
    expect(isStorable(instant('9999-12-31T23:30:00-01:00'))).toBe(false);
    expect(isStorable(instant('0000-01-01T00:00:00Z'))).toBe(false);
  });

  it('refuses what it does not hold with 400 invalid_request naming the field, and nothing of the value', () => {
    expect(() => storableInstant('9999-12-31T23:30:00-01:00', 'body.events[2].at')).toThrow(
      expect.objectContaining({ status: 400, code: 'invalid_request', extra: { field: 'body.events[2].at' }, message: 'body.events[2].at must be a time in the years 1000 to 9999 (UTC)' }),
    );
    expect(storableInstant('2026-11-24T08:00:00Z', 'query.since').toISOString()).toBe('2026-11-24T08:00:00.000Z');
  });
});
