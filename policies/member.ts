import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Member (a person's membership of the caller's organisation; spec 2.7, 4.5). A record is
 * `{ organisationId, personId, role, newRole }`: `role` the member's role now, `newRole` the role
 * a change asks for (null when nothing is asked).
 * - Every member of the organisation lists its members.
 * - Owners change anyone's role and remove anyone.
 * - Admins change roles and remove people among admins and members: only an owner makes or
 *   unmakes an owner, and only an owner removes one.
 * - Anyone removes themselves (leaves).
 * - Devices never: a device acts with its own, narrower access.
 * Whatever the rules allow, a team always keeps at least one owner: the teams service refuses
 * (409 `last_owner`) a demotion, removal or departure that would leave none.
 */
export function memberRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (!isPerson || actor.personId === undefined || actor.role === undefined) return;
  const inOrganisation = { organisationId: actor.organisationId };
  can('read', 'Member', inOrganisation);
  can('delete', 'Member', { ...inOrganisation, personId: actor.personId });
  if (actor.role === 'owner') {
    can(['update', 'delete'], 'Member', inOrganisation);
  } else if (actor.role === 'admin') {
    can('update', 'Member', { ...inOrganisation, role: { $ne: 'owner' }, newRole: { $ne: 'owner' } });
    can('delete', 'Member', { ...inOrganisation, role: { $ne: 'owner' } });
  }
}
