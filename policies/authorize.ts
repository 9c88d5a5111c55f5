import { subject } from '@casl/ability';
import { forbidden, type ApiError } from '../src/errors.js';
import type { Action, AppAbility, SubjectRecords, SubjectType, TaggedSubject } from './subjects.js';

/**
 * The one place a caller's ability is asked about a record (this project, this member, this
 * picture's project). A route declares the action and subject type it needs (`permission`,
 * src/http/route.ts) and the request chain asks the caller's ability about the type before the
 * handler runs; the handler or service then loads the record and asks about it here, and the
 * refusal is the answer the route gives for it (403 `forbidden` unless it names another: a
 * project the caller may not see is 404, as if it did not exist).
 */

/** The record tagged with its subject type: a copy, since `subject` of @casl/ability tags the object it is given. */
export function record<T extends SubjectType>(type: T, fields: SubjectRecords[T]) {
  return subject(type, { ...fields });
}

/** Whether the ability allows `action` on the record of subject type `type`. */
export function permits<T extends SubjectType>(ability: AppAbility, action: Action, type: T, fields: SubjectRecords[T]): boolean {
  // `T` is one subject type, so this is that type's TaggedSubject; the compiler does not follow a
  // type parameter through the union TaggedSubject distributes into, hence this one widening.
  return ability.can(action, record(type, fields) as TaggedSubject);
}

/**
 * Refuse unless the ability allows `action` on the record: with 403 `forbidden`, or `refusal`.
 * The same question `ForbiddenError.throwUnlessCan` asks, without building its error object (and
 * its message) on every allowed request: the refusal is made only when refusing.
 */
export function authorize<T extends SubjectType>(ability: AppAbility, action: Action, type: T, fields: SubjectRecords[T], refusal: () => ApiError = forbidden): void {
  if (!permits(ability, action, type, fields)) throw refusal();
}
