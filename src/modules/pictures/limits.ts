import { ApiError, invalidRequest } from '../../http/errors.js';
import { PICTURE_LIMITS } from './schemas.js';

/**
 * The limits of spec section 8, checked on the parsed body before anything else looks at it
 * (the route's precheck: before schema validation, the SVG rules or any query): the SVG's size,
 * the spec's shape (depth, entries, key length: walked with an explicit stack, nothing recursive
 * touches the spec before this) and its size as JSON. The body itself is limited to 3 MB before
 * it is read (the route's `bodyLimitBytes`).
 */

const tooLarge = (field: string, what: string, limit: number) =>
  new ApiError(413, 'payload_too_large', `${what} is larger than ${limit} bytes`, { extra: { field } });

/** Refuses a spec nested deeper, holding more entries or longer keys than PICTURE_LIMITS allows. */
export function checkSpecShape(spec: unknown): void {
  const stack: { value: unknown; depth: number }[] = [{ value: spec, depth: 1 }];
  let entries = 0;
  while (stack.length > 0) {
    const { value, depth } = stack.pop() as { value: unknown; depth: number };
    if (value === null || typeof value !== 'object') continue;
    if (depth > PICTURE_LIMITS.specDepth) throw invalidRequest(`body.spec is nested deeper than ${PICTURE_LIMITS.specDepth} levels`, { field: 'body.spec' });
    const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
    if (!Array.isArray(value)) {
      for (const key of Object.keys(value as object)) {
        if (key.length > PICTURE_LIMITS.specKeyLength) throw invalidRequest(`body.spec has a key longer than ${PICTURE_LIMITS.specKeyLength} characters`, { field: 'body.spec' });
      }
    }
    entries += children.length;
    if (entries > PICTURE_LIMITS.specEntries) throw invalidRequest(`body.spec holds more than ${PICTURE_LIMITS.specEntries} keys and items`, { field: 'body.spec' });
    for (const child of children) if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
  }
}

export function precheckPictureWrite(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return; // the schema names it
  const { spec, svg } = body as { spec?: unknown; svg?: unknown };
  if (typeof svg === 'string' && Buffer.byteLength(svg, 'utf8') > PICTURE_LIMITS.svgBytes) throw tooLarge('body.svg', 'the SVG', PICTURE_LIMITS.svgBytes);
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return;
  checkSpecShape(spec);
  if (Buffer.byteLength(JSON.stringify(spec), 'utf8') > PICTURE_LIMITS.specBytes) throw tooLarge('body.spec', 'the spec (as JSON)', PICTURE_LIMITS.specBytes);
  const version = (spec as { version?: unknown }).version;
  if (typeof version === 'number' && version !== 1) {
    throw new ApiError(400, 'unsupported_schema_version', `spec.version ${version} is not supported; this service accepts spec version 1`, {
      extra: { field: 'body.spec.version', supported: [1] },
    });
  }
}
