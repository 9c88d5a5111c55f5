import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../errors.js';

/**
 * Bounds on free-form JSON, checked before anything recursive touches a value: ajv on recursive
 * schemas, canonical JSON and hashing, merging, redaction, `structuredClone`, `JSON.stringify`.
 * `JSON.parse` itself is iterative in V8 (a megabyte of `[` parses), but most of what follows it
 * recurses and would end in a `RangeError` (a 500) on a body nested a hundred thousand levels deep.
 *
 * The check is iterative (an explicit stack, never recursion), stops at the first value over a
 * limit, and costs one visit per container plus one per key or item up to the key limit:
 *
 * - depth: containers (objects and arrays) nested in one another; `{}` is 1, `{"a":[]}` is 2;
 * - keys: object members and array items of the whole value, counted together;
 * - string length: every string, object keys included, in UTF-16 code units (`String.length`).
 *
 * Every JSON body of every route is checked right after it is parsed (`boundedBody`), before its
 * precheck and schema validation; a route may declare limits of its own (`jsonLimits`). Stored
 * JSON read back from the database is checked again before it is worked on (`withinJsonBounds`).
 */

export interface JsonLimits {
  maxDepth: number;
  maxKeys: number;
  maxStringLength: number;
}

export type JsonLimitKind = 'depth' | 'keys' | 'stringLength';

export interface JsonBoundsViolation {
  limit: JsonLimitKind;
  max: number;
  /** Where the limit was passed, written as a field path from `root` (`body.settings.a[3]`). */
  path: string;
}

/** A container being walked: its keys (objects) and how far the walk has got. */
interface Frame {
  container: object;
  names: string[] | undefined;
  size: number;
  next: number;
  /** The key this container sits under in its parent; undefined for the root. */
  key: string | number | undefined;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const MAX_SHOWN_KEY = 64;
const MAX_SHOWN_PATH = 1000;

function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  if (IDENTIFIER.test(key) && key.length <= MAX_SHOWN_KEY) return `.${key}`;
  const shown = key.length > MAX_SHOWN_KEY ? `${key.slice(0, MAX_SHOWN_KEY)}…` : key;
  return `[${JSON.stringify(shown)}]`;
}

function pathOf(root: string, stack: readonly Frame[], last?: string | number): string {
  let path = root;
  for (const frame of stack) {
    if (frame.key !== undefined) path += segment(frame.key);
    if (path.length > MAX_SHOWN_PATH) return `${path.slice(0, MAX_SHOWN_PATH)}…`;
  }
  if (last !== undefined) path += segment(last);
  return path.length > MAX_SHOWN_PATH ? `${path.slice(0, MAX_SHOWN_PATH)}…` : path;
}

function frameOf(container: object, key: string | number | undefined): Frame {
  const names = Array.isArray(container) ? undefined : Object.keys(container);
  return { container, names, size: names ? names.length : (container as unknown[]).length, next: 0, key };
}

/**
 * The first place `value` passes a limit, in the order of its text, or undefined when it stays
 * within all of them. The stack holds one frame per level of the current path, never more than
 * `maxDepth`, whatever the value's breadth.
 */
export function jsonBoundsViolation(value: unknown, limits: JsonLimits, root = 'body'): JsonBoundsViolation | undefined {
  if (typeof value === 'string') {
    return value.length > limits.maxStringLength ? { limit: 'stringLength', max: limits.maxStringLength, path: root } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (limits.maxDepth < 1) return { limit: 'depth', max: limits.maxDepth, path: root };
  const stack: Frame[] = [frameOf(value, undefined)];
  let keys = stack[0]!.size;
  if (keys > limits.maxKeys) return { limit: 'keys', max: limits.maxKeys, path: root };
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next >= frame.size) {
      stack.pop();
      continue;
    }
    const index = frame.next;
    frame.next += 1;
    const key: string | number = frame.names ? frame.names[index]! : index;
    if (typeof key === 'string' && key.length > limits.maxStringLength) {
      return { limit: 'stringLength', max: limits.maxStringLength, path: pathOf(root, stack, key) };
    }
    const child: unknown = (frame.container as Record<string | number, unknown>)[key];
    if (typeof child === 'string') {
      if (child.length > limits.maxStringLength) return { limit: 'stringLength', max: limits.maxStringLength, path: pathOf(root, stack, key) };
    } else if (child !== null && typeof child === 'object') {
      if (stack.length + 1 > limits.maxDepth) return { limit: 'depth', max: limits.maxDepth, path: pathOf(root, stack, key) };
      const inner = frameOf(child, key);
      keys += inner.size;
      if (keys > limits.maxKeys) return { limit: 'keys', max: limits.maxKeys, path: pathOf(root, stack, key) };
      stack.push(inner);
    }
  }
  return undefined;
}

/** True when `value` stays within every limit: for stored JSON read back before it is worked on. */
export function withinJsonBounds(value: unknown, limits: JsonLimits): boolean {
  return jsonBoundsViolation(value, limits) === undefined;
}

function describe(violation: JsonBoundsViolation): string {
  switch (violation.limit) {
    case 'depth':
      return `${violation.path} is nested too deeply: JSON may nest objects and arrays at most ${violation.max} levels deep`;
    case 'keys':
      return `${violation.path} passes the key limit: JSON may hold at most ${violation.max} object keys and array items in all`;
    case 'stringLength':
      return `${violation.path} is too long: a JSON string (or key) may be at most ${violation.max} characters`;
  }
}

/** 400 `json_too_complex`, naming the limit and where it was passed; 413 stays for byte size. */
export function jsonTooComplex(violation: JsonBoundsViolation): ApiError {
  return new ApiError(400, 'json_too_complex', describe(violation), {
    extra: { field: violation.path, limit: violation.limit, max: violation.max },
  });
}

/** Throws `json_too_complex` unless `value` stays within `limits`. */
export function assertJsonBounds(value: unknown, limits: JsonLimits, root = 'body'): void {
  const violation = jsonBoundsViolation(value, limits, root);
  if (violation) throw jsonTooComplex(violation);
}

/** The route-chain step right after the body parsers: a parsed body over the limits goes no further. */
export function boundedBody(limits: JsonLimits): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const violation = req.body === undefined ? undefined : jsonBoundsViolation(req.body, limits);
    next(violation ? jsonTooComplex(violation) : undefined);
  };
}

/** The fields `json_too_complex` adds to the error body, for answers that declare theirs closed. */
export const jsonTooComplexFields = {
  limit: { type: 'string', enum: ['depth', 'keys', 'stringLength'], description: 'On `json_too_complex`: which limit the body passed.' },
  max: { type: 'integer', description: 'On `json_too_complex`: the value of that limit.' },
} as const;
