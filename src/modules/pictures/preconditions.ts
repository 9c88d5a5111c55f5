import { ApiError, invalidRequest } from '../../errors.js';

/**
 * Conditional writes (RFC 9110 section 13, RFC 6585 section 3) with the spec's one addition:
 * `If-Match: "0"` means "only if the picture does not exist yet".
 *
 * - A write must rest on the version its client saw, or else 428 `precondition_required`, so no
 *   client overwrites or deletes a version it has not seen:
 *   - a save: `If-Match: "<version>"` (the version the change is based on; `"0"` for a new
 *     picture) or `If-None-Match: *` (a new picture);
 *   - a delete: `If-Match: "<version>"`.
 *   `If-Match: *` (any version) and `If-None-Match` naming versions (only which versions it is
 *   not at) say nothing of which version the client saw: alone they are no guard (428).
 * - `If-Match`: a list of versions (strong comparison: `W/` tags never match; `"0"` matches a
 *   picture that does not exist), or `*` (the picture exists).
 * - `If-None-Match`: `*` (the picture does not exist), or a list of versions it must not be at
 *   (weak comparison). On reads, a match answers 304.
 * A failed condition is 412 `precondition_failed`; every condition sent is evaluated.
 */

export interface EntityTag {
  value: string;
  weak: boolean;
}

export type TagList = '*' | EntityTag[];

export interface Preconditions {
  ifMatch: TagList | undefined;
  ifNoneMatch: TagList | undefined;
}

/** The version that stands for "no picture" in `If-Match`. */
export const ABSENT = '0';

const TAG = /^(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

/** An `If-Match`/`If-None-Match` value; malformed is 400 `invalid_request` naming the header. */
export function parseTagList(header: string | undefined, name: string): TagList | undefined {
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (trimmed === '*') return '*';
  const tags: EntityTag[] = [];
  for (const part of trimmed.split(',')) {
    const match = TAG.exec(part.trim());
    if (!match || tags.length >= 50) throw invalidRequest(`${name} must be * or a list of quoted versions such as "ver_…"`, { field: `headers.${name.toLowerCase()}` });
    tags.push({ value: match[2] as string, weak: match[1] !== undefined });
  }
  return tags;
}

export function readPreconditions(headers: { 'if-match'?: string | undefined; 'if-none-match'?: string | undefined }): Preconditions {
  return {
    ifMatch: parseTagList(headers['if-match'], 'If-Match'),
    ifNoneMatch: parseTagList(headers['if-none-match'], 'If-None-Match'),
  };
}

export const preconditionRequired = (write: 'save' | 'delete' = 'save'): ApiError =>
  new ApiError(
    428,
    'precondition_required',
    write === 'save'
      ? 'send If-Match: "<version>" (the version you changed, or "0" for a new picture) or If-None-Match: * (a new picture), so a save cannot overwrite a version you have not seen; If-Match: * and If-None-Match naming versions do not say which version you saw'
      : 'send If-Match: "<version>" (the version you are deleting), so a delete cannot remove a version you have not seen; If-Match: * and If-None-Match do not say which version you saw',
  );

/** Refuses (428) a write whose conditions do not name the version its client saw. */
export function requireGuard(conditions: Preconditions, write: 'save' | 'delete'): void {
  const namesVersions = conditions.ifMatch !== undefined && conditions.ifMatch !== '*';
  const onlyNew = write === 'save' && conditions.ifNoneMatch === '*';
  if (!namesVersions && !onlyNew) throw preconditionRequired(write);
}

export const preconditionFailed = (current: string | undefined): ApiError =>
  new ApiError(
    412,
    'precondition_failed',
    current === undefined ? 'the picture does not exist (any more)' : `the picture is at version ${current}, not the one your request names; read it again, then save`,
    current === undefined ? {} : { headers: { ETag: `"${current}"` } },
  );

/** Whether a write's conditions hold for the current version (undefined: no picture). */
export function conditionsHold(conditions: Preconditions, current: string | undefined): boolean {
  const { ifMatch, ifNoneMatch } = conditions;
  if (ifMatch !== undefined) {
    const holds =
      ifMatch === '*'
        ? current !== undefined
        : ifMatch.some((tag) => !tag.weak && (current === undefined ? tag.value === ABSENT : tag.value === current));
    if (!holds) return false;
  }
  if (ifNoneMatch !== undefined) {
    if (current === undefined) return true;
    if (ifNoneMatch === '*' || ifNoneMatch.some((tag) => tag.value === current)) return false;
  }
  return true;
}

/** For reads: whether `If-None-Match` names the current version (answer 304). */
export function notModified(header: string | undefined, version: string): boolean {
  let tags: TagList | undefined;
  try {
    tags = parseTagList(header, 'If-None-Match');
  } catch {
    // A malformed validator on a read is ignored (RFC 9110 13.1.2: the condition is then false).
    return false;
  }
  if (tags === undefined) return false;
  return tags === '*' || tags.some((tag) => tag.value === version);
}
