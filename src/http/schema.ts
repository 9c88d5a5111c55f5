import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { JSONSchema } from 'json-schema-to-ts';

/**
 * Schemas are plain JSON Schema 2020-12 objects written `as const`; their TypeScript types are
 * derived with `FromSchema`, never written twice. A schema given a name with `named()` becomes
 * a component of the OpenAPI document and is referenced there by `$ref`.
 */
export type Schema = Exclude<JSONSchema, boolean>;

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface StringFormat {
  type?: 'string';
  validate: (value: string) => boolean;
  compare?: (a: string, b: string) => number | undefined;
}

/** `YYYY-MM-DDTHH:MM:SS.sssZ` with hours, minutes and seconds in range: what `toISOString` writes. */
const CANONICAL_DATE_TIME = /^(\d{4})-(\d\d)-(\d\d)T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * ajv-formats' `date-time`, with a first look for the form workbenches send (thousands per
 * envelope): a string of that form is valid exactly when its month and day are (its time is, by
 * the pattern), which is what ajv-formats would answer after splitting it and matching two more
 * patterns; every other string goes to ajv-formats as before. Same answers, same errors.
 */
export function fastDateTime(full: StringFormat): StringFormat {
  return {
    ...full,
    validate: (value: string) => {
      const match = CANONICAL_DATE_TIME.exec(value);
      if (!match) return full.validate(value);
      const year = Number(match[1]);
      const month = Number(match[2]);
      const day = Number(match[3]);
      const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
      return month >= 1 && month <= 12 && day >= 1 && day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month]!);
    },
  };
}

function makeAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: false,
    strict: true,
    strictRequired: false,
    coerceTypes: coerce,
    useDefaults: false,
    // `description`, `example` and our `x-` keywords are documentation, not validation.
    keywords: ['example', 'x-platform-extension'],
  });
  addFormats(ajv);
  ajv.addFormat('date-time', fastDateTime(ajv.formats['date-time'] as StringFormat));
  return ajv;
}

/** Bodies and answers: types exactly as sent. */
export const bodyAjv = makeAjv(false);
/** Query strings and path parameters arrive as text: coerce to the declared type. */
export const textAjv = makeAjv(true);

const names = new Map<object, string>();
const byName = new Map<string, Schema>();

/** Give a schema a component name for the OpenAPI document. Returns the same object. */
export function named<S extends Schema>(name: string, schema: S): S {
  const existing = byName.get(name);
  if (existing && existing !== schema) throw new Error(`schema name ${name} is used twice`);
  names.set(schema, name);
  byName.set(name, schema);
  return schema;
}

export function schemaName(schema: object): string | undefined {
  return names.get(schema);
}

export function namedSchemas(): ReadonlyMap<string, Schema> {
  return byName;
}

const compiled = new WeakMap<object, ValidateFunction>();

export function compile(schema: Schema, kind: 'body' | 'text'): ValidateFunction {
  const cached = compiled.get(schema);
  if (cached && kind === 'body') return cached;
  const validate = (kind === 'body' ? bodyAjv : textAjv).compile(schema as object);
  if (kind === 'body') compiled.set(schema, validate);
  return validate;
}

/** "body.name is required", "query.limit must be <= 100": the field first, in plain words. */
export function describeError(where: string, error: ErrorObject | undefined): { field: string; message: string } {
  if (!error) return { field: where, message: `${where} is invalid` };
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('');
  const base = `${where}${path}`;
  switch (error.keyword) {
    case 'required': {
      const field = `${base}.${(error.params as { missingProperty: string }).missingProperty}`;
      return { field, message: `${field} is required` };
    }
    case 'additionalProperties': {
      const field = `${base}.${(error.params as { additionalProperty: string }).additionalProperty}`;
      return { field, message: `${field} is not allowed` };
    }
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v));
      return { field: base, message: `${base} must be one of ${allowed.join(', ')}` };
    }
    default:
      return { field: base, message: `${base} ${error.message ?? 'is invalid'}` };
  }
}

// Shared pieces -----------------------------------------------------------------------------

export const errorBodySchema = named('Error', {
  type: 'object',
  description: 'The error body of every JSON error answer (spec 2.1).',
  required: ['error'],
  properties: {
    error: { type: 'string', description: 'Error code (spec section 7).' },
    message: { type: 'string', description: 'Plain-words explanation.' },
    error_description: { type: 'string', description: 'Plain-words explanation (OAuth endpoints).' },
    field: { type: 'string', description: 'The request field at fault, on `invalid_request` from schema validation and on `json_too_complex`.' },
    limit: { type: 'string', enum: ['depth', 'keys', 'stringLength'], description: 'On `json_too_complex`: which limit the body passed.' },
    max: { type: 'integer', description: 'On `json_too_complex`: the value of that limit; on `picture_limit_reached`: how many pictures a project may hold; on `max_concurrent_runs`: how many cloud agent runs a person may have going; on `run_event_limit`: how many events a run keeps.' },
    where: { type: 'string', description: 'On `unsafe_svg` and `invalid_svg`: the element path (`/svg/g[2]/use[1]/@href`) or line and column.' },
  },
  additionalProperties: true,
} as const);

export const timestampSchema = {
  type: 'string',
  format: 'date-time',
  description: 'RFC 3339 UTC timestamp with milliseconds.',
} as const;
