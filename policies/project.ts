import type { AbilityBuilder } from '@casl/ability';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Project (always inside the caller's organisation).
 * - Owners and admins of the organisation: everything on every project.
 * - Any member may create a project (and becomes its owner).
 * - A project member reads the project; its owner also updates it, deletes it and manages its members.
 * - Devices read the projects their person may read.
 */
export function projectRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const inOrganisation = { organisationId: actor.organisationId };
  if (actor.personId === undefined) return;
  if (actor.role === 'owner' || actor.role === 'admin') {
    can(['read', 'create', 'update', 'delete', 'manage-members'], 'Project', inOrganisation);
    return;
  }
  if (actor.kind === 'person' && actor.role === 'member') can('create', 'Project', inOrganisation);
  const readable = [...actor.projectRoles.keys()];
  const owned = [...actor.projectRoles].filter(([, role]) => role === 'owner').map(([id]) => id);
  if (readable.length) can('read', 'Project', { ...inOrganisation, id: { $in: readable } });
  if (owned.length && actor.kind === 'person') {
    can(['update', 'delete', 'manage-members'], 'Project', { ...inOrganisation, id: { $in: owned } });
  }
}
