import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Organisation.
 * - Anyone the organisation admits (a member person, or a device of the organisation) reads it.
 * - A person who is an owner or admin updates it (renames a team; never a device, even one whose
 *   person is an owner: devices act with their own, narrower access). Its members and
 *   invitations have rules of their own (member.ts, invitation.ts); creating a team, team.ts.
 * - Nothing of another organisation is visible (`id` must equal the caller's organisation).
 *
 * A personal organisation is one person's own: it cannot be renamed, invited into or left. That
 * is what the organisation is, not who may act on it, so the teams service refuses it (400
 * `personal_organisation`) before any rule is asked.
 */
export function organisationRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const own = { id: actor.organisationId };
  can('read', 'Organisation', own);
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) {
    can('update', 'Organisation', own);
  }
}
