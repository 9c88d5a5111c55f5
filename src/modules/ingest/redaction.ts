import { isMemoryRead as builtInMemoryReads, type MemoryReadRule } from '../../../policies/memory-reads.js';
import { isMarker, keyRuleFor, marker, MAX_DEPTH, MIN_TEXT_LENGTH, TEXT_RULES, type KeyRule, type TextRule } from './redaction-rules.js';

/**
 * Redaction on receipt (spec 4.7): credentials that stray into ingested events and audit records
 * are replaced by `[REDACTED:<kind>]` before anything is stored or logged. The rules are in
 * `redaction-rules.ts`; this file walks values and applies them.
 *
 * - Input is JSON data (a parsed request body). The input is never changed: a container with
 *   anything replaced inside it is copied, one with nothing replaced is the answer as it is (most
 *   events hold no credential, and a 1,000-event envelope need not be copied to find that out).
 *   Object keys are kept as they are; only values are replaced.
 * - A string goes through every text rule (a string can hold several secrets; each is replaced).
 *   A string under a secret-like key (KEY_RULES) that the text rules did not already turn into
 *   exactly one marker is replaced whole by `[REDACTED:secret_value]`. Array items take the key of
 *   their array (`tokens: [...]` no, `token: [...]` yes). Numbers, booleans and null are kept.
 * - Containers nested MAX_DEPTH (32) levels deep become `[REDACTED:depth]`; a container met again
 *   inside itself becomes `[REDACTED:cycle]`.
 * - `count` is the number of markers written; `kinds` the distinct kinds among them, sorted.
 */

export interface RedactionResult<T> {
  value: T;
  count: number;
  kinds: string[];
}

class Findings {
  readonly kinds: string[] = [];

  add(kind: string): void {
    this.kinds.push(kind);
  }

  result<T>(value: unknown): RedactionResult<T> {
    return { value: value as T, count: this.kinds.length, kinds: this.kinds.length === 0 ? [] : [...new Set(this.kinds)].sort() };
  }
}

export function redact<T>(value: T): RedactionResult<T> {
  const findings = new Findings();
  return findings.result(walk(value, undefined, 0, new Set(), findings));
}

/**
 * Memory reads are audited by label, never by content (spec 4.7). Which actions are memory reads
 * is the rule of `policies/memory-reads.ts`, with the organisation's settings (`isMemoryRead`).
 * Their `details` and every field named in `contentFields` are dropped (not counted: dropping is
 * policy, not a found credential). Every other item keeps all its fields, with `details` and the
 * content fields redacted. In both cases `label` is redacted and never dropped, and the remaining
 * fields (`action`, ids, timestamps, actor: identifiers the store keys on) are kept exactly as
 * received.
 */
export function redactAuditItem<T extends { action: string; label?: string; details?: unknown; [k: string]: unknown }>(
  item: T,
  contentFields: readonly string[],
  isMemoryRead: MemoryReadRule = builtInMemoryReads,
): RedactionResult<T> {
  const findings = new Findings();
  const memoryRead = isMemoryRead(item.action);
  const entries: [string, unknown][] = [];
  for (const [key, value] of Object.entries(item)) {
    const content = key !== 'action' && key !== 'label' && (key === 'details' || contentFields.includes(key));
    if (content && memoryRead) continue;
    const redacted = content || key === 'label';
    entries.push([key, redacted ? walk(value, keyRuleFor(key), 1, new Set(), findings) : value]);
  }
  return findings.result(Object.fromEntries(entries));
}

function walk(value: unknown, keyRule: KeyRule | undefined, depth: number, path: Set<object>, findings: Findings): unknown {
  if (typeof value === 'string') return redactString(value, keyRule, findings);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) {
    findings.add('depth');
    return marker('depth');
  }
  if (path.has(value)) {
    findings.add('cycle');
    return marker('cycle');
  }
  path.add(value);
  try {
    // Copy on write: the copy starts at the first item a rule changed.
    if (Array.isArray(value)) {
      let copy: unknown[] | undefined;
      for (let index = 0; index < value.length; index++) {
        const item: unknown = value[index];
        const next = walk(item, keyRule, depth + 1, path, findings);
        if (copy === undefined && next !== item) copy = value.slice(0, index);
        copy?.push(next);
      }
      return copy ?? value;
    }
    const entries = Object.entries(value);
    let changed = false;
    for (const entry of entries) {
      const next = walk(entry[1], keyRuleFor(entry[0]), depth + 1, path, findings);
      if (next !== entry[1]) {
        entry[1] = next;
        changed = true;
      }
    }
    // fromEntries defines properties, so a `__proto__` key stays a key and never becomes a prototype.
    return changed ? Object.fromEntries(entries) : value;
  } finally {
    path.delete(value);
  }
}

function redactString(value: string, keyRule: KeyRule | undefined, findings: Findings): string {
  const found: string[] = [];
  const text = redactText(value, found);
  if (keyRule !== undefined && !isMarker(text) && keyRule.test(value)) {
    findings.add(keyRule.kind);
    return marker(keyRule.kind);
  }
  for (const kind of found) findings.add(kind);
  return text;
}

/** Every rule's hints in one pattern: most strings contain none, and one scan tells. */
const ANY_HINT = new RegExp([...new Set(TEXT_RULES.flatMap((rule) => rule.hints))].map((hint) => hint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));

/** Every text rule, in order, over one string; the kinds replaced are pushed onto `found`. */
export function redactText(text: string, found: string[]): string {
  if (text.length < MIN_TEXT_LENGTH) return text;
  let current = text;
  let lower = text.toLowerCase();
  if (!ANY_HINT.test(lower)) return text;
  for (const rule of TEXT_RULES) {
    if (!rule.hints.some((hint) => lower.includes(hint))) continue;
    const next = applyRule(current, rule, found);
    if (next !== current) {
      current = next;
      lower = next.toLowerCase();
    }
  }
  return current;
}

function applyRule(text: string, rule: TextRule, found: string[]): string {
  const pattern = rule.pattern;
  pattern.lastIndex = 0;
  let out = '';
  let copied = 0;
  let replaced = false;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match[0].length === 0) {
      pattern.lastIndex += 1;
      continue;
    }
    const [start, end] = match.indices?.groups?.secret ?? [match.index, match.index + match[0].length];
    const secret = text.slice(start, end);
    if (isMarker(secret) || (rule.accept !== undefined && !rule.accept(secret, match))) {
      // Look again from the next character: a refused look-alike may end inside a real secret
      // (`eyJx.` just before a JWT). Rule patterns start only at run boundaries, so this stays linear.
      pattern.lastIndex = match.index + 1;
      continue;
    }
    out += text.slice(copied, start) + marker(rule.kind);
    copied = end;
    replaced = true;
    found.push(rule.kind);
  }
  pattern.lastIndex = 0;
  return replaced ? out + text.slice(copied) : text;
}
