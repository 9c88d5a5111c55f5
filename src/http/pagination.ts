import { invalidRequest } from '../errors.js';

/**
 * Keyset pagination of the lists that page by creation (oldest first): a page asks for one row
 * more than its `limit`, and the cursor of the next page is where this one ended, opaque to
 * clients (base64url of `[createdAt, id]`). The last page answers `nextCursor: null`.
 */

export interface PageAfter {
  createdAt: Date;
  id: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 200;

export const pageQuerySchema = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, description: `Items per page, 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}).` },
    cursor: { type: 'string', minLength: 1, maxLength: 200, description: 'The `nextCursor` of the previous page.' },
  },
  additionalProperties: false,
} as const;

export const nextCursorSchema = {
  type: ['string', 'null'],
  description: 'Pass as `cursor` for the next page; null on the last page.',
} as const;

export function encodeCursor(after: PageAfter): string {
  return Buffer.from(JSON.stringify([after.createdAt.toISOString(), after.id]), 'utf8').toString('base64url');
}

/** The position a cursor names; a cursor this service did not give out is 400 `invalid_request`. */
export function decodeCursor(cursor: string | undefined): PageAfter | undefined {
  if (cursor === undefined) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const createdAt = new Date(typeof at === 'string' ? at : Number.NaN);
    if (typeof id === 'string' && id.length <= 40 && !Number.isNaN(createdAt.getTime())) return { createdAt, id };
  } catch {
    // Falls through to the refusal below.
  }
  throw invalidRequest('query.cursor is not a cursor this list gave out', { field: 'query.cursor' });
}

/** A page from rows fetched with one more than `limit`; `position` says where a row sits. */
export function pageOf<T>(rows: readonly T[], limit: number, position: (row: T) => PageAfter): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null };
}
