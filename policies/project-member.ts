import type { AbilityBuilder } from '@casl/ability';
import { projectsWithRole } from './project-membership.js';
import type { Actor, AppAbility } from './subjects.js';

/**
 * ProjectMember (a person's role in a project; a record is `{ organisationId, projectId, personId }`).
 * - Whoever reads a project (project.ts) lists its members.
 * - Adding, changing and removing others is managing the project's members: `manage-members` on
 *   the Project (organisation owners and admins on every project, project owners on theirs).
 * - A person leaves a project they belong to (removes their own membership), whatever their role.
 * - Devices never.
 * A project that has an owner keeps at least one: the projects service refuses (409
 * `last_owner`) the change or departure that would leave none.
 */
export function projectMemberRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  const isPerson = actor.kind === 'person' || actor.kind === 'cloud-session';
  if (!isPerson || actor.personId === undefined) return;
  const inOrganisation = { organisationId: actor.organisationId };
  if (actor.role === 'owner' || actor.role === 'admin') {
    can('read', 'ProjectMember', inOrganisation);
  } else {
    const readable = projectsWithRole(actor);
    if (readable.length) can('read', 'ProjectMember', { ...inOrganisation, projectId: { $in: readable } });
  }
  const own = projectsWithRole(actor);
  if (own.length) can('delete', 'ProjectMember', { ...inOrganisation, projectId: { $in: own }, personId: actor.personId });
}
