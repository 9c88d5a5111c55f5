import { ApiError, invalidRequest } from '../../errors.js';
import { PICTURE_LIMITS } from './schemas.js';

/**
 * The limits of spec section 8, checked on the parsed body before anything else looks at it
 * (the route's precheck: before schema validation, the SVG rules or any query): the SVG's size,
 * the spec's key length (its depth and entries are the route's JSON limits, checked before) and
 * its size as JSON. The body itself is limited to 3 MB before
 * it is read (the route's `bodyLimitBytes`).
 */

const tooLarge = (field: string, what: string, limit: number) =>
  new ApiError(413, 'payload_too_large', `${what} is larger than ${limit} bytes`, { extra: { field } });

/**
 * Refuses a spec with a key longer than PICTURE_LIMITS allows. Its depth and entries were bounded
 * before (the route's JSON limits), so this walk is short; it keeps an explicit stack anyway.
 */
export function checkSpecKeys(spec: unknown): void {
  const stack: unknown[] = [spec];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object') continue;
    if (!Array.isArray(value)) {
      for (const key of Object.keys(value)) {
        if (key.length > PICTURE_LIMITS.specKeyLength) throw invalidRequest(`body.spec has a key longer than ${PICTURE_LIMITS.specKeyLength} characters`, { field: 'body.spec' });
      }
    }
    for (const child of Array.isArray(value) ? value : Object.values(value as Record<string, unknown>)) {
      if (child !== null && typeof child === 'object') stack.push(child);
    }
  }
}

export function precheckPictureWrite(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return; // the schema names it
  const { spec, svg } = body as { spec?: unknown; svg?: unknown };
  if (typeof svg === 'string' && Buffer.byteLength(svg, 'utf8') > PICTURE_LIMITS.svgBytes) throw tooLarge('body.svg', 'the SVG', PICTURE_LIMITS.svgBytes);
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return;
  checkSpecKeys(spec);
  if (Buffer.byteLength(JSON.stringify(spec), 'utf8') > PICTURE_LIMITS.specBytes) throw tooLarge('body.spec', 'the spec (as JSON)', PICTURE_LIMITS.specBytes);
  const version = (spec as { version?: unknown }).version;
  if (typeof version === 'number' && version !== 1) {
    throw new ApiError(400, 'unsupported_schema_version', `spec.version ${version} is not supported; this service accepts spec version 1`, {
      extra: { field: 'body.spec.version', supported: [1] },
    });
  }
}
