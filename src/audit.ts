import type { Logger } from 'pino';
import type { EntityManager } from 'typeorm';
import type { Principal } from './auth/principal.js';
import type { RequestFacts } from './util/request-scope.js';

/**
 * Administrative changes leave one `info` line each, naming who did what in which organisation,
 * whether the change came through the API or the command line. The line carries ids and names
 * only, never a secret (a join key's id, never the key; a policy's revision, never its text).
 *
 * ```json
 * {"level":30,"audit":{"action":"join_key.created","organisationId":"org_…",
 *  "actor":{"kind":"person","personId":"usr_…"},"target":{"joinKeyId":"jk_…"}},"msg":"audit join_key.created"}
 * ```
 */

export type AuditAction =
  | 'policy.published'
  | 'policy.restored'
  | 'join_key.created'
  | 'join_key.revoked'
  | 'device.approved'
  | 'device.denied'
  | 'device.revoked'
  | 'person.removed'
  | 'person.role_changed'
  | 'organisation.created'
  | 'organisation.configured'
  | 'project.created'
  | 'project.role_changed'
  | 'project.renamed'
  | 'project.deleted'
  | 'project.member_added'
  | 'project.member_role_set'
  | 'project.member_removed'
  | 'project.member_left'
  | 'person.added'
  | 'person.left'
  | 'invitation.created'
  | 'invitation.withdrawn'
  | 'invitation.accepted'
  | 'team.created'
  | 'organisation.renamed'
  | 'sign_in_method.added'
  | 'sign_in_method.removed'
  | 'account.deleted'
  | 'cloud_agent_run.registered'
  | 'cloud_agent_run.ended'
  | (string & {});

export interface AuditActor {
  /** `cli` for the admin command line; otherwise the token kind of the request. */
  kind: Principal['kind'] | 'cli';
  personId?: string | undefined;
  deviceId?: string | undefined;
}

export interface AuditEntry {
  action: AuditAction;
  organisationId: string;
  actor: AuditActor;
  /** What was changed: ids and plain values only. */
  target?: Record<string, string | number | boolean | null>;
}

/** The actor of a request, as an audit line names it. */
export function actorOf(principal: Principal | undefined): AuditActor {
  if (!principal) return { kind: 'cli' };
  return { kind: principal.kind, personId: principal.personId, deviceId: principal.deviceId };
}

export const CLI_ACTOR: AuditActor = { kind: 'cli' };

export function audit(logger: Logger, entry: AuditEntry): void {
  logger.info({ audit: entry }, `audit ${entry.action}`);
}

/**
 * The stored audit trail (docs/api/audit-trail.md): one row per administrative change, written
 * with the transaction's own manager, so a change that rolls back leaves no row. Services receive
 * it from the composition root (src/app.ts, src/admin-services.ts); the row's request facts come
 * from the request scope unless given. The log line (`audit` above) is written as before.
 */
export interface AuditTrail {
  record(manager: EntityManager, entry: AuditEntry, request?: RequestFacts): Promise<void>;
}

/** A trail that keeps nothing (the bench's baseline, unit tests). */
export const NO_AUDIT_TRAIL: AuditTrail = { record: async () => undefined };
