import { describe, expect, it } from '@jest/globals';
import { assertJsonBounds, jsonBoundsViolation, withinJsonBounds, type JsonLimits } from '../../src/http/json-bounds.js';

const LIMITS: JsonLimits = { maxDepth: 4, maxKeys: 10, maxStringLength: 8 };

/** `[[[…]]]` `depth` levels deep, built without recursion. */
function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let i = 1; i < depth; i += 1) value = [value];
  return value;
}

function nestedObjects(depth: number, key = 'a'): unknown {
  let value: unknown = {};
  for (let i = 1; i < depth; i += 1) value = { [key]: value };
  return value;
}

describe('jsonBoundsViolation', () => {
  it('accepts values within every limit, at the limits exactly', () => {
    expect(jsonBoundsViolation(nestedArrays(4), LIMITS)).toBeUndefined();
    expect(jsonBoundsViolation({ a: { b: { c: ['12345678'] } } }, LIMITS)).toBeUndefined();
    expect(jsonBoundsViolation(Array.from({ length: 10 }, () => 1), LIMITS)).toBeUndefined();
    expect(jsonBoundsViolation({ a: [1, 2, 3], b: { c: 1, d: 2 }, e: 'x' }, LIMITS)).toBeUndefined();
    for (const scalar of [null, true, 0, -1.5, 'short', '']) expect(jsonBoundsViolation(scalar, LIMITS)).toBeUndefined();
    expect(withinJsonBounds({ a: 1 }, LIMITS)).toBe(true);
  });

  it('counts depth in containers: the first one nested too deeply is named', () => {
    expect(jsonBoundsViolation(nestedArrays(5), LIMITS)).toEqual({ limit: 'depth', max: 4, path: 'body[0][0][0][0]' });
    expect(jsonBoundsViolation(nestedObjects(5), LIMITS)).toEqual({ limit: 'depth', max: 4, path: 'body.a.a.a.a' });
    expect(jsonBoundsViolation({ settings: { x: [{ 'odd key': {} }] } }, LIMITS, 'body')).toEqual({
      limit: 'depth',
      max: 4,
      path: 'body.settings.x[0]["odd key"]',
    });
    // Scalars at the deepest level are fine; only containers add a level.
    expect(jsonBoundsViolation([[[[1, 'a', null]]]], LIMITS)).toBeUndefined();
  });

  it('counts object keys and array items of the whole value together', () => {
    expect(jsonBoundsViolation(Array.from({ length: 11 }, () => 0), LIMITS)).toEqual({ limit: 'keys', max: 10, path: 'body' });
    const wide = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i]));
    expect(jsonBoundsViolation(wide, LIMITS)).toMatchObject({ limit: 'keys', path: 'body' });
    // Six at the top, five below: eleven in all, passed inside `b`.
    expect(jsonBoundsViolation({ a: 1, b: [1, 2, 3, 4, 5], c: 1, d: 1, e: 1, f: 1 }, LIMITS)).toEqual({ limit: 'keys', max: 10, path: 'body.b' });
  });

  it('bounds every string, values and keys, and names where it is', () => {
    expect(jsonBoundsViolation('123456789', LIMITS)).toEqual({ limit: 'stringLength', max: 8, path: 'body' });
    expect(jsonBoundsViolation({ a: ['ok', '123456789'] }, LIMITS)).toEqual({ limit: 'stringLength', max: 8, path: 'body.a[1]' });
    expect(jsonBoundsViolation({ a: { '123456789': 1 } }, LIMITS)).toEqual({ limit: 'stringLength', max: 8, path: 'body.a["123456789"]' });
  });

  it('reports the first violation in the order of the text', () => {
    const value = { first: '123456789', second: nestedArrays(9) };
    expect(jsonBoundsViolation(value, LIMITS)?.path).toBe('body.first');
    expect(jsonBoundsViolation({ first: nestedArrays(9), second: '123456789' }, LIMITS)?.path).toBe('body.first[0][0][0]');
  });

  it('shortens long keys and long paths in what it reports', () => {
    const key = 'k'.repeat(500);
    const limits = { maxDepth: 3, maxKeys: 100, maxStringLength: 1000 };
    const { path } = jsonBoundsViolation({ [key]: { [key]: { [key]: {} } } }, limits)!;
    expect(path).toBe(`body["${'k'.repeat(64)}…"]["${'k'.repeat(64)}…"]["${'k'.repeat(64)}…"]`);
    const deep = jsonBoundsViolation(nestedObjects(300, 'x'.repeat(60)), { maxDepth: 200, maxKeys: 1000, maxStringLength: 100 })!;
    expect(deep.path.length).toBeLessThanOrEqual(1001);
    expect(deep.path.endsWith('…')).toBe(true);
  });

  it('is iterative: a million levels of nesting are refused without a RangeError, quickly', () => {
    const text = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
    const value: unknown = JSON.parse(text);
    // What it protects: anything recursive fails on such a value.
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    const started = process.hrtime.bigint();
    expect(jsonBoundsViolation(value, { maxDepth: 32, maxKeys: 10_000, maxStringLength: 1000 })).toMatchObject({ limit: 'depth', max: 32 });
    // Even with no depth limit worth the name, it walks a million levels on its own stack.
    expect(jsonBoundsViolation(value, { maxDepth: 2_000_000, maxKeys: 10_000_000, maxStringLength: 1000 })).toBeUndefined();
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5_000);
    const objects = nestedObjects(1_000_000);
    expect(jsonBoundsViolation(objects, { maxDepth: 2_000_000, maxKeys: 10_000_000, maxStringLength: 1000 })).toBeUndefined();
  });

  it('stops at the key limit rather than walking a huge value', () => {
    const huge = Array.from({ length: 2_000_000 }, () => ({ a: 1 }));
    const started = process.hrtime.bigint();
    expect(jsonBoundsViolation(huge, { maxDepth: 32, maxKeys: 10_000, maxStringLength: 1000 })).toEqual({ limit: 'keys', max: 10_000, path: 'body' });
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1_000);
  });

  it('treats a value met again inside itself as nested without end', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(jsonBoundsViolation(cycle, LIMITS)).toEqual({ limit: 'depth', max: 4, path: 'body.self.self.self.self' });
  });
});

describe('assertJsonBounds', () => {
  it('throws 400 json_too_complex naming the limit and the field', () => {
    expect(() => assertJsonBounds({ a: '123456789' }, LIMITS, 'stored')).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'json_too_complex',
        message: 'stored.a is too long: a JSON string (or key) may be at most 8 characters',
        extra: { field: 'stored.a', limit: 'stringLength', max: 8 },
      }),
    );
    expect(() => assertJsonBounds(nestedArrays(6), LIMITS)).toThrow('body[0][0][0][0] is nested too deeply: JSON may nest objects and arrays at most 4 levels deep');
    expect(() => assertJsonBounds(Array.from({ length: 11 }, () => 0), LIMITS)).toThrow('body passes the key limit: JSON may hold at most 10 object keys and array items in all');
    expect(() => assertJsonBounds({ ok: true }, LIMITS)).not.toThrow();
  });
});
