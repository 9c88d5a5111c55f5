import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * The audit trail: the organisation's administrative changes (docs/api/audit-trail.md).
 * - A person who is an owner or admin reads (and exports) their organisation's trail: on Cloud,
 *   the team's owners and admins, in the organisation `X-Platform-Organisation` names.
 * - Members do not; devices and run credentials never do.
 * - Never another organisation's rows: every query is bound to the caller's organisation.
 */
export function auditLogRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) {
    can('read', 'AuditLog', { organisationId: actor.organisationId });
  }
}
