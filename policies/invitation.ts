import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Invitation (to join a team; spec 2.8, 3, 4.5). A record is `{ organisationId, role, email }`.
 * - Owners and admins list the team's open invitations, invite, and withdraw.
 * - Only an owner invites someone as an owner, or withdraws such an invitation (as only an owner
 *   makes an owner, member.ts).
 * - A signed-in Cloud person accepts an invitation sent to an address one of their sign-in methods
 *   carries with the provider's word that it is theirs (`verifiedEmails`). This is the one rule
 *   not bounded by the caller's organisation: an invitation is how someone joins one.
 * - Devices never.
 * An invitation also stops working when its inviter no longer may invite with its role (removed,
 * or demoted): the teams service asks these rules for the inviter when it is previewed or accepted.
 */
export function invitationRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (!isPerson || actor.personId === undefined) return;
  const inOrganisation = { organisationId: actor.organisationId };
  if (actor.role === 'owner') {
    can(['read', 'create', 'delete'], 'Invitation', inOrganisation);
  } else if (actor.role === 'admin') {
    can('read', 'Invitation', inOrganisation);
    can(['create', 'delete'], 'Invitation', { ...inOrganisation, role: { $ne: 'owner' } });
  }
  if (actor.kind === 'cloud-session' && actor.verifiedEmails?.length) {
    can('accept', 'Invitation', { email: { $in: [...actor.verifiedEmails] } });
  }
}
