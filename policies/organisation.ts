import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Organisation.
 * - Anyone the organisation admits (a member person, or a device of the organisation) reads it.
 * - A person who is an owner or admin updates it and manages its members (never a device, even
 *   one whose person is an owner: devices act with their own, narrower access).
 * - Nothing of another organisation is visible (`id` must equal the caller's organisation).
 */
export function organisationRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const own = { id: actor.organisationId };
  can('read', 'Organisation', own);
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) {
    can('update', 'Organisation', own);
    can('manage-members', 'Organisation', own);
  }
}
