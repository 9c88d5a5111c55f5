import { describe, expect, it } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { fastDateTime } from '../../src/http/schema.js';
import { sqlTime } from '../../src/modules/ingest/store.js';
import { canonicalStoredText, instant, isStorable, storableInstant } from '../../src/util/time.js';

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

describe('the canonical UTC form read without a Date', () => {
  const ajv = new Ajv2020({ strict: true });
  (addFormatsModule as unknown as (instance: Ajv2020) => Ajv2020)(ajv);
  const full = ajv.formats['date-time'] as { validate: (value: string) => boolean };
  const fast = fastDateTime(full);

  // Every field at and around its bounds, in the canonical form and in the forms next to it.
  const years = ['0000', '0999', '1000', '1900', '2000', '2023', '2024', '2100', '9999'];
  const months = ['00', '01', '02', '04', '12', '13'];
  const days = ['00', '01', '28', '29', '30', '31', '32'];
  const times = ['00:00:00', '23:59:59', '23:59:60', '24:00:00', '12:60:00', '12:00:61', '99:99:99'];
  const tails = ['.000Z', '.999Z', '.5Z', 'Z', '.000z', '.000+01:00', '.000-23:59', '.0000Z', '.000'];
  const candidates: string[] = [];
  for (const year of years) for (const month of months) for (const day of days) for (const time of times) for (const tail of tails) candidates.push(`${year}-${month}-${day}T${time}${tail}`);
  candidates.push('2026-11-24t14:55:24.123Z', '2026-11-24 14:55:24.123Z', '2026-11-24T14:55:24.123Z ', ' 2026-11-24T14:55:24.123Z', '2026-11-24T14:55:24.123ZZ', '', 'x');

  it(`answers as ajv-formats' date-time does (${candidates.length} strings)`, () => {
    const differing = candidates.filter((value) => fast.validate(value) !== full.validate(value));
    expect(differing).toEqual([]);
    expect(candidates.filter((value) => fast.validate(value)).length).toBeGreaterThan(1000);
  });

  it('gives the stored text of every valid canonical time as its instant would, and nothing for other forms', () => {
    let read = 0;
    for (const value of candidates) {
      if (!full.validate(value)) continue;
      const text = canonicalStoredText(value);
      if (text === undefined) continue;
      read += 1;
      expect(text).toBe(sqlTime('sqlite', storableInstant(value, 'at')));
    }
    expect(read).toBeGreaterThan(400);
    expect(canonicalStoredText('2026-11-24T14:55:24.123Z')).toBe('2026-11-24 14:55:24.123');
    for (const other of ['0999-12-31T23:59:59.999Z', '2026-12-31T23:59:60.000Z', '2026-11-24T14:55:24.123+00:00', '2026-11-24t14:55:24.123z', '2026-11-24T14:55:24Z', '2026-11-24T14:55:24.1234Z']) {
      expect(canonicalStoredText(other)).toBeUndefined();
    }
  });
});
