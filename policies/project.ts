import type { AbilityBuilder } from '@casl/ability';
import { projectsWithRole } from './project-membership.js';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Project (always inside the caller's organisation).
 * - A person who is an owner or admin of the organisation: everything on every project.
 * - A person who is a member may create a project (and becomes its owner).
 * - A project member reads the project; a person who owns it also updates it, deletes it and
 *   manages its members.
 * - A device reads the projects its person is a member of, and nothing more: organisation roles
 *   never reach a device (a device acts for its person only inside projects).
 */
export function projectRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const inOrganisation = { organisationId: actor.organisationId };
  if (actor.personId === undefined) return;
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (isPerson && (actor.role === 'owner' || actor.role === 'admin')) {
    can(['read', 'create', 'update', 'delete', 'manage-members'], 'Project', inOrganisation);
    return;
  }
  if (isPerson && actor.role === 'member') can('create', 'Project', inOrganisation);
  const readable = projectsWithRole(actor);
  const owned = projectsWithRole(actor, ['owner']);
  if (readable.length) can('read', 'Project', { ...inOrganisation, id: { $in: readable } });
  if (owned.length && isPerson) {
    can(['update', 'delete', 'manage-members'], 'Project', { ...inOrganisation, id: { $in: owned } });
  }
}
