import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Organisation.
 * - Anyone the organisation admits (a member person, or a device of the organisation) reads it.
 * - Owners and admins update it and manage its members.
 * - Nothing of another organisation is visible (`id` must equal the caller's organisation).
 */
export function organisationRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const own = { id: actor.organisationId };
  can('read', 'Organisation', own);
  if (actor.kind === 'person' && (actor.role === 'owner' || actor.role === 'admin')) {
    can('update', 'Organisation', own);
    can('manage-members', 'Organisation', own);
  }
}
