import { createHash } from 'node:crypto';

/**
 * The two pure rules of the effective policy: how a project's override combines with the
 * organisation's policy, and how a document gets its revision.
 *
 * Merge rule: the override is a part of the document laid over the organisation's. Objects
 * merge key by key, at every depth; anything else the override holds (an array, a string, a
 * number, a boolean) replaces the organisation's value whole. Last layer wins, in both
 * directions: an override may loosen as well as tighten. That is deliberate, because the same
 * people (the organisation's owners and admins) publish both layers; a restrictive-wins rule
 * would need an order on every value and a union or intersection for every list, and would
 * leave them no way to relax one project on purpose. What you publish is what applies.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * `override` laid over `base` (see the merge rule above). Neither input is changed; the answer
 * shares no object with `override`, so a caller's later edits cannot reach a cached result.
 * Keys are written as own data properties (`Object.fromEntries`), so a `__proto__` key in a
 * free-form section stays a key and never becomes a prototype.
 */
export function mergeOverride<T>(base: T, override: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(override)) return structuredClone(override) as T;
  const keys = new Set([...Object.keys(base), ...Object.keys(override)]);
  return Object.fromEntries(
    [...keys].map((key) => {
      if (!Object.hasOwn(override, key)) return [key, base[key]];
      if (!Object.hasOwn(base, key)) return [key, structuredClone(override[key])];
      return [key, mergeOverride(base[key], override[key])];
    }),
  ) as T;
}

/**
 * Canonical JSON: object keys sorted by UTF-16 code units at every depth, no whitespace,
 * strings and numbers as `JSON.stringify` writes them. For JSON values this is RFC 8785 (JCS),
 * so the same document gives the same text whatever order its keys arrived in.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  if (isPlainObject(value)) {
    const entries = Object.keys(value)
      .filter((key) => value[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${entries.join(',')}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('a policy holds only finite numbers');
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') {
    throw new TypeError(`a policy holds only JSON values, not ${typeof value}`);
  }
  return JSON.stringify(value);
}

/** The revision of a document: SHA-256 of its canonical JSON, base64url (43 characters). */
export function revisionOf(document: unknown): string {
  return createHash('sha256').update(canonicalJson(document), 'utf8').digest('base64url');
}
