import { describe, expect, it } from '@jest/globals';
import { withinDepth } from '../../src/util/json-depth.js';

describe('withinDepth', () => {
  it('counts nested objects and arrays, not scalars', () => {
    expect(withinDepth('text', 0)).toBe(true);
    expect(withinDepth({}, 0)).toBe(false);
    expect(withinDepth({ a: 1, b: [1, 2] }, 2)).toBe(true);
    expect(withinDepth({ a: 1, b: [1, { c: [] }] }, 3)).toBe(false);
    expect(withinDepth({ a: 1, b: [1, { c: [] }] }, 4)).toBe(true);
  });

  it('checks a value nested a million deep without overflowing the stack', () => {
    const deep = JSON.parse('['.repeat(1_000_000) + ']'.repeat(1_000_000)) as unknown;
    expect(withinDepth(deep, 64)).toBe(false);
  });
});
