import { z } from 'zod';

/**
 * How one environment variable is declared (src/config/variables.ts holds them all): its type as a
 * zod schema from the variable's text to its value, its default, whether it is a secret, and what
 * it means. Everything else is derived from the declaration: the typed configuration
 * (src/config.ts), the configuration table (docs/operations/configuration.md) and the Helm chart's values.schema.json (both
 * generated, test/deploy/config-variables.test.ts fails when they drift).
 *
 * A refusal's message completes "VARIABLE: …" on one line; a secret's value is never in it.
 *
 * Why zod rather than envalid: each check carries its own message (the refusals stay word for word
 * what they were), a value's type is inferred from its schema (so `Config` is too), and a parser of
 * our own (a URL list, a key) is a transform like any other. envalid's built-in readers take
 * other spellings than the service always has, so nearly every variable would need a custom
 * validator there, and its reporting would have to be replaced to keep the lines and exit 2.
 */

/** A JSON Schema (draft-07) fragment: what the Helm chart's values.schema.json accepts for a value. */
export type JsonSchema = Record<string, unknown>;

/** A value a parser refuses; the message completes "VARIABLE: …". */
export class Refusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refusal';
  }
}

export interface VariableDoc {
  /** What it does, for the configuration table (Markdown, one paragraph). */
  description: string;
  /** Holds a credential or a key: the chart keeps it in a Secret, never in a ConfigMap. */
  secret?: boolean;
  /** The table: said of the default; with one, in parentheses after it ("30 days"); without, instead of "none". */
  defaultNote?: string;
}

export interface Variable<T = unknown> {
  /** From the environment's text (trimmed; unset or empty: undefined) to the value, the default applied. */
  readonly field: z.ZodType<T, string | undefined>;
  /** The text that applies when the variable is unset or empty, parsed as a set value would be; none: undefined. */
  readonly default: string | undefined;
  readonly secret: boolean;
  readonly description: string;
  readonly defaultNote: string | undefined;
  /** The table: the values it takes, where its type bounds them ("1–3600", "`true`, `false`"). */
  readonly values: string | undefined;
  /** The chart's JSON Schema of its value. */
  readonly json: JsonSchema;
}

/** The value type of a declaration: what its field parses to (undefined when unset without a default). */
export type ValueOf<V> = V extends Variable<infer T> ? T : never;

type Defaulted<O, T> = O extends { default: NonNullable<unknown> } ? T : T | undefined;

/** `R`: the value type, undefined included when there is no default (the builders say which). */
function declare<R>(type: z.ZodType<unknown, string>, options: VariableDoc & { default?: string | undefined; values?: string | undefined; json: JsonSchema }): Variable<R> {
  const field = options.default === undefined ? type.optional() : type.prefault(options.default);
  return {
    field: field as z.ZodType<R, string | undefined>,
    default: options.default,
    secret: options.secret ?? false,
    description: options.description,
    defaultNote: options.defaultNote,
    values: options.values,
    json: options.json,
  };
}

const WHOLE_NUMBER = /^\d+$/;

function rangeMessage(min: number, max: number) {
  return (issue: { input?: unknown }) => `must be between ${min} and ${max} (got ${String(issue.input)})`;
}

/** Empty, or the digits of a number from `min` to `max` as far as their count says (`^([1-9][0-9]{0,4})?$` for 1 to 36500). */
function digitsPattern(min: number, max: number): string {
  const more = String(max).length - 1;
  return `^(${min === 0 ? '0|' : ''}[1-9][0-9]{0,${more}})?$`;
}

/** A whole number from `min` to `max` (digits only: no sign, no exponent, no fraction). */
export function integer<const O extends VariableDoc & { min: number; max: number; default?: number }>(options: O): Variable<Defaulted<O, number>> {
  const { min, max } = options;
  const type = z
    .string()
    .regex(WHOLE_NUMBER, { error: (issue) => `must be a whole number (got "${String(issue.input)}")` })
    .transform(Number)
    .pipe(z.number().min(min, { error: rangeMessage(min, max) }).max(max, { error: rangeMessage(min, max) }));
  const json: JsonSchema = { type: 'integer', minimum: min, maximum: max };
  return declare<Defaulted<O, number>>(type, {
    ...options,
    default: options.default === undefined ? undefined : String(options.default),
    values: `${min}–${max}`,
    // Unset in the chart: an empty string (or the number's digits, as the service reads them).
    json: options.default === undefined ? { anyOf: [json, { type: 'string', pattern: digitsPattern(min, max) }] } : json,
  });
}

/** `true` or `false` (`1` or `0`). */
export function flag<const O extends VariableDoc & { default: boolean }>(options: O): Variable<boolean> {
  const type = z
    .enum(['true', '1', 'false', '0'], { error: (issue) => `must be true or false (got "${String(issue.input)}")` })
    .transform((value) => value === 'true' || value === '1');
  return declare<boolean>(type, { ...options, default: String(options.default), values: '`true`, `false`', json: { type: 'boolean' } });
}

/** One of a few words. */
export function choice<const T extends string, const O extends VariableDoc & { default: NoInfer<T> }>(allowed: readonly T[], options: O): Variable<T> {
  const type = z.enum(allowed as readonly [T, ...T[]], { error: (issue) => `must be one of ${allowed.join(', ')} (got "${String(issue.input)}")` });
  return declare<T>(type, {
    ...options,
    values: allowed.map((value) => `\`${value}\``).join(', '),
    // Empty in the chart: the service's default.
    json: { type: 'string', enum: ['', ...allowed] },
  });
}

const SIZE = /^(\d+)\s*(b|kb|mb)?$/i;
const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, mb: 1024 * 1024 };
const SIZE_MIN = 1024;
const SIZE_MAX = 64 * 1024 * 1024;

/** A size in bytes, `kb` or `mb` (`512kb`, `2mb`, `1048576`), from 1kb to 64mb. */
export function size<const O extends VariableDoc & { default: string }>(options: O): Variable<number> {
  const type = z
    .string()
    .regex(SIZE, { error: (issue) => `must be a size such as 1mb, 512kb or 1048576 (got "${String(issue.input)}")` })
    .transform((value) => {
      const match = SIZE.exec(value)!;
      return Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? 1);
    })
    .pipe(z.number().min(SIZE_MIN, { error: 'must be between 1kb and 64mb' }).max(SIZE_MAX, { error: 'must be between 1kb and 64mb' }));
  return declare<number>(type, {
    ...options,
    values: '1kb–64mb',
    json: { anyOf: [{ type: 'integer', minimum: SIZE_MIN, maximum: SIZE_MAX }, { type: 'string', pattern: '^[0-9]+\\s*([kKmM]?[bB])?$' }] },
  });
}

/** Any text (checked, where it is, by a rule that reads other variables too: src/config.ts). */
export function text<const O extends VariableDoc & { default?: string; values?: string }>(options: O): Variable<Defaulted<O, string>> {
  return declare<Defaulted<O, string>>(z.string(), { ...options, json: { type: 'string' } });
}

/**
 * A value read by a parser of its own, which throws a `Refusal`. `json` is what the chart accepts
 * (as close to the parser as a JSON Schema says simply; the service checks the rest at start).
 */
export function parsed<T, const O extends VariableDoc & { default?: string; json: JsonSchema; values?: string }>(
  parse: (value: string) => T,
  options: O,
): Variable<Defaulted<O, T>> {
  const type = z.string().transform((value, context) => {
    try {
      return parse(value);
    } catch (error) {
      if (!(error instanceof Refusal)) throw error;
      // The value stays out of the issue: it may be a secret.
      context.issues.push({ code: 'custom', message: error.message, input: undefined });
      return z.NEVER;
    }
  });
  return declare<Defaulted<O, T>>(type, options);
}
