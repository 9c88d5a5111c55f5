import { setImmediate as nextTurn } from 'node:timers/promises';
import { isMemoryRead as builtInMemoryReads, type MemoryReadRule } from '../../../policies/memory-reads.js';
import { assignmentSteps } from './assignments.js';
import {
  classifyName,
  isMarker,
  isWorkingDirectory,
  marker,
  MAX_DEPTH,
  MIN_TEXT_LENGTH,
  PAIR_NAME_FIELDS,
  PAIR_VALUE_FIELDS,
  secretUnder,
  stronger,
  TEXT_RULES,
  type SecretStrength,
  type TextRule,
} from './redaction-rules.js';

/**
 * Redaction on receipt (spec 4.7): credentials that stray into ingested events and audit records
 * are replaced by `[REDACTED:<kind>]` before anything is stored or logged. The rules are in
 * `redaction-rules.ts` and `assignments.ts`; this file walks values and applies them.
 *
 * - Input is JSON data (a parsed request body). The input is never changed: a container with
 *   anything replaced inside it is copied, one with nothing replaced is the answer as it is (most
 *   events hold no credential, and a 1,000-event envelope need not be copied to find that out).
 * - Every string, value or object key, goes through the text rules: the token shapes of
 *   TEXT_RULES, then the `name = value` scanner. A string that is JSON (an object, an array or a
 *   JSON string, as `{\"password\": …}` arrives) is parsed and walked like any value, and written
 *   back as JSON when something in it was replaced; up to MAX_ENCODINGS levels of JSON in JSON.
 * - A key whose name says secret (`classifyName`) reaches everything beneath it: a string is
 *   replaced whole by `[REDACTED:secret_value]` (`always`: any non-blank one; `random`: one that
 *   looks generated), and so is a number under an `always` name; objects and arrays beneath are
 *   walked under the same rule (the stronger of the two when a deeper key names one too).
 *   Booleans and null are kept.
 * - Header-like shapes are judged by their name: an object with a name field (`name`, `key`,
 *   `header`, …) holding a secret name applies it to its value fields (`value`, `values`, `val`);
 *   a two-item array `[name, value]` and a flat list `[name, value, name, value, …]` of header-like
 *   names apply each name to the item after it; a Kubernetes Secret's `data` and `stringData` are
 *   secret whole.
 * - A key is replaced like any other text (a token used as a key becomes `[REDACTED:<kind>]`); when
 *   that would repeat a key of the object, ` #2`, ` #3`… are added.
 * - Containers nested MAX_DEPTH (32) levels deep become `[REDACTED:depth]`; a container met again
 *   inside itself becomes `[REDACTED:cycle]`.
 * - `count` is the number of markers written; `kinds` the distinct kinds among them, sorted.
 *
 * Work is done in steps (generators): `RedactionBudget` runs them in slices, giving the event loop
 * back between slices, and stops with RedactionBudgetExceeded past its total. Every step is linear
 * in what it reads.
 */

export interface RedactionResult<T> {
  value: T;
  count: number;
  kinds: string[];
}

/** JSON in a JSON string in a JSON string…: read this many levels deep. */
export const MAX_ENCODINGS = 4;
/** Names longer than this are not names (a pair's first item, a header field's value). */
const MAX_NAME_LENGTH = 200;
/** A walk yields to its runner after about this much work (characters read, plus a little per node). */
const STEP_WORK = 32_768;

/** Work in steps: each `yield` is a point where the runner may give the event loop back. */
export type Steps<T> = Generator<void, T, void>;

class Findings {
  readonly kinds: string[] = [];

  add(kind: string): void {
    this.kinds.push(kind);
  }

  /** Forgets what was found since `mark` (a string replaced whole holds no markers of its own). */
  rewind(mark: number): void {
    this.kinds.length = mark;
  }

  result<T>(value: unknown): RedactionResult<T> {
    return { value: value as T, count: this.kinds.length, kinds: this.kinds.length === 0 ? [] : [...new Set(this.kinds)].sort() };
  }
}

interface Walk {
  findings: Findings;
  path: Set<object>;
  encodings: number;
  /** Shared by every walk of one run: work done since the last yield. */
  meter: { work: number };
}

/** Counts work; true when the walk should yield to its runner. */
function spend(walk: Walk, work: number): boolean {
  walk.meter.work += work;
  if (walk.meter.work < STEP_WORK) return false;
  walk.meter.work = 0;
  return true;
}

/** Runs steps to their end at once: for small pieces of work, which need no yield. */
function drain<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** The steps of redacting any JSON value. */
export function* redactSteps<T>(value: T, meter: { work: number } = { work: 0 }): Steps<RedactionResult<T>> {
  const findings = new Findings();
  const result = yield* walk(value, undefined, 0, { findings, path: new Set(), encodings: 0, meter });
  return findings.result(result);
}

/** Redacts a value synchronously (tests, small values); with a budget, past it throws RedactionBudgetExceeded. */
export function redact<T>(value: T, budget?: RedactionBudget): RedactionResult<T> {
  return (budget ?? UNLIMITED).runSync(redactSteps(value));
}

/** The steps of redacting one text (a stored field such as an actor or a title); kinds are pushed onto `found`. */
export function* redactTextSteps(text: string, found: string[], meter: { work: number } = { work: 0 }): Steps<string> {
  const findings = new Findings();
  const result = yield* textSteps(text, 0, { findings, path: new Set(), encodings: 0, meter });
  found.push(...findings.kinds);
  return result;
}

/** Every text rule over one string, synchronously; the kinds replaced are pushed onto `found`. */
export function redactText(text: string, found: string[]): string {
  return UNLIMITED.runSync(redactTextSteps(text, found));
}

/**
 * Memory reads are audited by label, never by content (spec 4.7). Which actions are memory reads
 * is the rule of `policies/memory-reads.ts`, with the organisation's settings (`isMemoryRead`).
 * Their `details` and every field named in `contentFields` are dropped (not counted: dropping is
 * policy, not a found credential). Every other item keeps all its fields, with `details` and the
 * content fields redacted. In both cases `label` is redacted and never dropped, and the remaining
 * fields (`action`, ids, timestamps, actor) are kept exactly as received (the service redacts
 * `actor` and `action` as stored text).
 */
export function* auditItemSteps<T extends { action: string; label?: string; details?: unknown; [k: string]: unknown }>(
  item: T,
  contentFields: readonly string[],
  isMemoryRead: MemoryReadRule = builtInMemoryReads,
  meter: { work: number } = { work: 0 },
): Steps<RedactionResult<T>> {
  const findings = new Findings();
  const memoryRead = isMemoryRead(item.action);
  const entries: [string, unknown][] = [];
  for (const [key, value] of Object.entries(item)) {
    const content = key !== 'action' && key !== 'label' && (key === 'details' || contentFields.includes(key));
    if (content && memoryRead) continue;
    const redacted = content || key === 'label';
    entries.push([key, redacted ? yield* walk(value, classifyName(key), 1, { findings, path: new Set(), encodings: 0, meter }) : value]);
  }
  return findings.result(Object.fromEntries(entries));
}

export function redactAuditItem<T extends { action: string; label?: string; details?: unknown; [k: string]: unknown }>(
  item: T,
  contentFields: readonly string[],
  isMemoryRead: MemoryReadRule = builtInMemoryReads,
): RedactionResult<T> {
  return UNLIMITED.runSync(auditItemSteps(item, contentFields, isMemoryRead));
}

// --- Budget -------------------------------------------------------------------------------------

/** Redaction would take longer than its budget: the caller answers 413 rather than stall. */
export class RedactionBudgetExceeded extends Error {
  constructor(readonly budgetMs: number) {
    super(`redaction took longer than its budget of ${budgetMs} ms`);
    this.name = 'RedactionBudgetExceeded';
  }
}

/**
 * How much time redaction may take, counted in CPU time this process spends on it (not time
 * waiting for the event loop, nor time the machine gives to other processes: the same envelope
 * gets the same answer on a busy machine as on an idle one). `run` gives the event loop back
 * every `sliceMs` of wall time, so one large envelope never holds it longer than a slice and one
 * step; `runSync` cannot, and only counts (wall time: it serves tests and small values).
 */
export class RedactionBudget {
  private spentMs = 0;

  constructor(
    readonly totalMs: number,
    readonly sliceMs = 10,
  ) {}

  get spent(): number {
    return this.spentMs;
  }

  private charge(ms: number): void {
    this.spentMs += ms;
    if (this.spentMs > this.totalMs) throw new RedactionBudgetExceeded(this.totalMs);
  }

  /** Charges the CPU time since `since` (process.cpuUsage: user and system, microseconds). */
  private chargeCpu(since: NodeJS.CpuUsage): void {
    const used = process.cpuUsage(since);
    this.charge((used.user + used.system) / 1000);
  }

  async run<T>(steps: Steps<T>): Promise<T> {
    let sliceStart = performance.now();
    let cpuStart = process.cpuUsage();
    for (;;) {
      const step = steps.next();
      const now = performance.now();
      if (step.done) {
        this.chargeCpu(cpuStart);
        return step.value;
      }
      if (now - sliceStart >= this.sliceMs) {
        this.chargeCpu(cpuStart);
        await nextTurn();
        sliceStart = performance.now();
        cpuStart = process.cpuUsage();
      }
    }
  }

  runSync<T>(steps: Steps<T>): T {
    const started = performance.now();
    let last = started;
    for (;;) {
      const step = steps.next();
      const now = performance.now();
      if (Number.isFinite(this.totalMs)) this.charge(now - last);
      last = now;
      if (step.done) return step.value;
    }
  }
}

const UNLIMITED = new RedactionBudget(Number.POSITIVE_INFINITY);

// --- Walker -------------------------------------------------------------------------------------

/** Strings up to this length are redacted in one step (no yield inside). */
const SMALL_TEXT = 4096;

function* walk(value: unknown, strength: SecretStrength | undefined, depth: number, w: Walk): Steps<unknown> {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'string' && value.length > SMALL_TEXT) return yield* redactString(value, strength, depth, w);
    return leaf(value, strength, depth, w);
  }
  if (depth >= MAX_DEPTH) {
    w.findings.add('depth');
    return marker('depth');
  }
  if (w.path.has(value)) {
    w.findings.add('cycle');
    return marker('cycle');
  }
  w.path.add(value);
  try {
    return Array.isArray(value) ? yield* walkArray(value, strength, depth, w) : yield* walkObject(value as Record<string, unknown>, strength, depth, w);
  } finally {
    w.path.delete(value);
  }
}

/** `X-Api-Key`, `content-type`, `DB_PASSWORD`: a word a header list or an environment would hold. */
const HEADER_NAME = /^[A-Za-z0-9_.:-]{1,200}$/;

/** For each item of an array, the strength its pair's name gives it (`[name, value]`, `[n, v, n, v…]`). */
function pairStrengths(array: readonly unknown[]): (SecretStrength | undefined)[] | undefined {
  if (array.length === 2) {
    const [name] = array;
    if (typeof name !== 'string' || !HEADER_NAME.test(name)) return undefined;
    const strength = classifyName(name);
    return strength ? [undefined, strength] : undefined;
  }
  if (array.length < 4 || array.length % 2 !== 0) return undefined;
  for (let index = 0; index < array.length; index += 2) {
    const name = array[index];
    if (typeof name !== 'string' || !HEADER_NAME.test(name)) return undefined;
  }
  let any = false;
  const strengths = array.map((item, index) => {
    if (index % 2 === 0) return undefined;
    const strength = classifyName(array[index - 1] as string);
    if (strength) any = true;
    return strength;
  });
  return any ? strengths : undefined;
}

function* walkArray(array: readonly unknown[], strength: SecretStrength | undefined, depth: number, w: Walk): Steps<unknown> {
  const pairs = pairStrengths(array);
  let copy: unknown[] | undefined;
  for (let index = 0; index < array.length; index++) {
    const item: unknown = array[index];
    const itemStrength = stronger(strength, pairs?.[index]);
    const next = isSmallLeaf(item) ? leaf(item, itemStrength, depth + 1, w) : yield* walk(item, itemStrength, depth + 1, w);
    if (copy === undefined && next !== item) copy = array.slice(0, index);
    copy?.push(next);
    if (spend(w, typeof item === 'string' ? item.length + 16 : 16)) yield;
  }
  return copy ?? array;
}

/** The strength an object's name fields give its value fields (`{name: "X-Api-Key", value: …}`). */
function pairStrengthOf(object: Record<string, unknown>, keys: readonly string[]): SecretStrength | undefined {
  let strength: SecretStrength | undefined;
  let hasValue = false;
  for (const key of keys) {
    if (key.length > 10) continue;
    const lower = key.toLowerCase();
    const field = object[key];
    if (PAIR_NAME_FIELDS.has(lower) && typeof field === 'string' && field.length <= MAX_NAME_LENGTH) strength = stronger(strength, classifyName(field));
    else if (PAIR_VALUE_FIELDS.has(lower)) hasValue = true;
  }
  return hasValue ? strength : undefined;
}

function* walkObject(object: Record<string, unknown>, strength: SecretStrength | undefined, depth: number, w: Walk): Steps<unknown> {
  // Object.keys, not Object.entries: far cheaper on an object of many keys, and most objects are kept as they are.
  const keys = Object.keys(object);
  const pair = pairStrengthOf(object, keys);
  // A Kubernetes Secret: every value of `data` and `stringData` is secret, whatever its key.
  const kubernetesSecret = object.kind === 'Secret' && ('data' in object || 'stringData' in object);
  // Copy on write: entries start at the first key or value a rule changed.
  let entries: [string, unknown][] | undefined;
  let renamed = false;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const child = object[key];
    let childStrength = stronger(strength, classifyName(key));
    if (pair && key.length <= 10 && PAIR_VALUE_FIELDS.has(key.toLowerCase())) childStrength = stronger(childStrength, pair);
    if (kubernetesSecret && (key === 'data' || key === 'stringData')) childStrength = 'always';
    if (childStrength !== undefined && typeof child === 'string' && isWorkingDirectory(key, child)) childStrength = strength;
    const next = isSmallLeaf(child) ? leaf(child, childStrength, depth + 1, w) : yield* walk(child, childStrength, depth + 1, w);
    const newKey = key.length < MIN_TEXT_LENGTH ? key : key.length <= SMALL_TEXT ? drain(textSteps(key, depth, w, false)) : yield* textSteps(key, depth, w, false);
    if (newKey !== key) renamed = true;
    if (entries === undefined && (next !== child || newKey !== key)) entries = keys.slice(0, index).map((kept) => [kept, object[kept]]);
    entries?.push([newKey, next]);
    if (spend(w, key.length + (typeof child === 'string' ? child.length : 0) + 16)) yield;
  }
  if (entries === undefined) return object;
  if (renamed) {
    // A replaced key must not take the place of another: `[REDACTED:github_token] #2`.
    const taken = new Set(keys);
    for (const [index, entry] of entries.entries()) {
      if (entry[0] === keys[index]) continue;
      let candidate = entry[0];
      for (let n = 2; taken.has(candidate); n++) candidate = `${entry[0]} #${n}`;
      entry[0] = candidate;
      taken.add(candidate);
    }
  }
  // fromEntries defines properties, so a `__proto__` key stays a key and never becomes a prototype.
  return Object.fromEntries(entries);
}

/** A value handled in one step without a generator: no container, no long string. */
function isSmallLeaf(value: unknown): boolean {
  return value === null || typeof value !== 'object' ? typeof value !== 'string' || value.length <= SMALL_TEXT : false;
}

/** A value that is no container: a string at once, a number under an `always` name replaced. */
function leaf(value: unknown, strength: SecretStrength | undefined, depth: number, w: Walk): unknown {
  if (typeof value === 'string') {
    if (value.length >= MIN_TEXT_LENGTH) return drain(redactString(value, strength, depth, w));
    // Too short for any text rule: only a name above can make it a secret.
    if (strength === undefined || !secretUnder(strength, value)) return value;
    w.findings.add('secret_value');
    return marker('secret_value');
  }
  if (typeof value === 'number' && strength === 'always') {
    w.findings.add('secret_value');
    return marker('secret_value');
  }
  return value;
}

function* redactString(value: string, strength: SecretStrength | undefined, depth: number, w: Walk): Steps<string> {
  const mark = w.findings.kinds.length;
  const text = value.length < MIN_TEXT_LENGTH ? value : yield* textSteps(value, depth, w);
  if (strength !== undefined && !isMarker(text) && secretUnder(strength, value)) {
    w.findings.rewind(mark);
    w.findings.add('secret_value');
    return marker('secret_value');
  }
  return text;
}

/** `{…}`, `[…]` or `"…"` from end to end (white space aside): worth a JSON parse. */
function looksLikeJson(text: string): boolean {
  let first = 0;
  while (first < text.length && text.charCodeAt(first) <= 32) first++;
  let last = text.length - 1;
  while (last > first && text.charCodeAt(last) <= 32) last--;
  const open = text[first];
  const close = text[last];
  return (open === '{' && close === '}') || (open === '[' && close === ']') || (open === '"' && close === '"' && last > first);
}

const NOT_JSON = Symbol('not JSON');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

/** Every text rule over one string (and JSON inside it); kinds go to `w.findings`. */
function* textSteps(text: string, depth: number, w: Walk, json = true): Steps<string> {
  if (text.length < MIN_TEXT_LENGTH) return text;
  const long = text.length > SMALL_TEXT;
  if (json && w.encodings < MAX_ENCODINGS && looksLikeJson(text)) {
    const parsed = parseJson(text);
    if (parsed !== NOT_JSON) {
      const mark = w.findings.kinds.length;
      const next = yield* walk(parsed, undefined, depth + 1, { ...w, path: new Set(), encodings: w.encodings + 1 });
      if (next === parsed) {
        w.findings.rewind(mark);
        return text;
      }
      return JSON.stringify(next);
    }
  }
  const found = w.findings.kinds;
  let current = text;
  if (ANY_HINT.test(text)) {
    // Which hints the text holds, in one scan; a marker a rule writes is a hint for the rules after it.
    const hints = hintsIn(text);
    for (const rule of TEXT_RULES) {
      if (!rule.hints.some((hint) => hints.has(hint))) continue;
      const next = long ? yield* ruleSteps(current, rule, found, w) : drain(ruleSteps(current, rule, found, w));
      if (next !== current) {
        current = next;
        hints.add(marker(rule.kind).toLowerCase());
      }
    }
  }
  // Every assignment has a sign (`=`, `:`, `>` of XML), is a flag (`--name value`, `-u`, a
  // command's `-p`), or a quoted name and a comma (`define('DB_PASSWORD', …)`).
  if (!MAY_ASSIGN.test(current)) return current;
  const meter = (work: number) => long && spend(w, work);
  return long ? yield* assignmentSteps(current, found, meter) : drain(assignmentSteps(current, found, meter));
}

const MAY_ASSIGN = /[=:>]|-[-uUp]|["'`][ \t]*,/;

/** Every rule's hints in one pattern: most strings hold none, and one scan tells (alternatives of literals: linear). */
const ANY_HINT = new RegExp([...new Set(TEXT_RULES.flatMap((rule) => rule.hints))].map((hint) => hint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'i');

const EVERY_HINT = new RegExp(ANY_HINT.source, 'gi');

/** The hints (lower case) a text holds, in one scan (every position tried once). */
function hintsIn(text: string): Set<string> {
  const hints = new Set<string>();
  EVERY_HINT.lastIndex = 0;
  for (let match = EVERY_HINT.exec(text); match !== null; match = EVERY_HINT.exec(text)) {
    hints.add(match[0].toLowerCase());
    // From the next character, not the match's end: hints may overlap.
    EVERY_HINT.lastIndex = match.index + 1;
  }
  EVERY_HINT.lastIndex = 0;
  for (const [hint, inside] of NESTED_HINTS) if (!hints.has(hint) && inside.some((outer) => hints.has(outer))) hints.add(hint);
  return hints;
}

/** Hints inside longer hints (`sk-` of `sk-ant-`): the alternation answers the longer one first, so each brings the shorter. */
const NESTED_HINTS: [string, string[]][] = (() => {
  const all = [...new Set(TEXT_RULES.flatMap((rule) => rule.hints))];
  return all.map((hint): [string, string[]] => [hint, all.filter((other) => other !== hint && other.includes(hint))]).filter(([, outer]) => outer.length > 0);
})();

/**
 * One rule over one text, as steps (a rule pattern is shared by every walk in the process: its
 * `lastIndex` is set before each `exec` and never relied on across a yield).
 */
function* ruleSteps(text: string, rule: TextRule, found: string[], w: Walk): Steps<string> {
  const pattern = rule.pattern;
  let position = 0;
  let out = '';
  let copied = 0;
  let replaced = false;
  while (position <= text.length) {
    pattern.lastIndex = position;
    const match = pattern.exec(text);
    if (match === null) break;
    position = match.index + Math.max(match[0].length, 1);
    if (spend(w, match[0].length + 64)) yield;
    // The secret group, when there is one, follows the `pre` group the match starts with.
    const pre = match.groups?.pre;
    const secret = match.groups?.secret;
    const start = secret === undefined ? match.index : match.index + (pre?.length ?? 0);
    const end = secret === undefined ? match.index + match[0].length : start + secret.length;
    const value = text.slice(start, end);
    if (match[0].length === 0 || isMarker(value) || (rule.accept !== undefined && !rule.accept(value, match))) {
      // Look again from the next character: a refused look-alike may end inside a real secret
      // (`eyJx.` just before a JWT). Rule patterns start only at run boundaries or fixed words and
      // no match holds more than a bounded number of those, so this stays linear.
      position = match.index + 1;
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
