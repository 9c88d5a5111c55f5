import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Device requests (a device code waiting for a person): spec 5 leaves "which role may approve
 * nodes" to us. Any member of the organisation approves (or denies) a workbench; only owners and
 * admins approve a node, since a node runs unattended with access of its own.
 *
 * Devices and join keys (always inside the caller's organisation).
 * - A person who is an owner or admin lists the organisation's devices and revokes any of them,
 *   and creates, lists and revokes join keys.
 * - Nobody else: not a member (not even for a device they approved), and never a device, even one
 *   approved by an owner (devices act with their own, narrower access).
 */
export function deviceRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  const inOrganisation = { organisationId: actor.organisationId };
  if (isPerson && actor.role === 'member') can('approve', 'DeviceRequest', { ...inOrganisation, kind: 'workbench' });
  if (!isPerson || (actor.role !== 'owner' && actor.role !== 'admin')) return;
  can('approve', 'DeviceRequest', inOrganisation);
  can(['read', 'delete'], 'Device', inOrganisation);
  can(['read', 'create', 'delete'], 'JoinKey', inOrganisation);
}
