import type { AbilityBuilder } from '@casl/ability';
import { projectsWithRole, WRITING_ROLES } from './project-membership.js';
import type { Actor, AppAbility } from './subjects.js';

/**
 * Picture (a project's pictures; a record is `{ organisationId, projectId }`).
 * - Project roles decide, and only they: a viewer, contributor or owner of the project reads its
 *   pictures; a contributor or owner also saves ('create', 'update') and deletes them.
 * - Organisation roles never reach pictures: an organisation owner or admin who is not a member
 *   of the project sees none of its pictures (404, as if the project did not exist). As in
 *   project.ts, organisation roles never reach a device either, and pictures are only ever
 *   called with device tokens (spec 4.9). An administrator who needs a project's pictures adds
 *   themselves to the project, which is recorded, rather than reading it unseen.
 * - A device acts for its person (the person who approved it) inside projects: it has that
 *   person's project role, narrowed further by its scopes (`pictures:read`, `pictures:write`,
 *   checked by the routes; nodes carry neither).
 * - A run credential reaches nothing here.
 */
export function pictureRules(actor: Actor, { can }: AbilityBuilder<AppAbility>): void {
  if (actor.kind === 'run-credential' || actor.personId === undefined) return;
  const inOrganisation = { organisationId: actor.organisationId };
  const readable = projectsWithRole(actor);
  const writable = projectsWithRole(actor, WRITING_ROLES);
  if (readable.length) can('read', 'Picture', { ...inOrganisation, projectId: { $in: readable } });
  if (writable.length) can(['create', 'update', 'delete'], 'Picture', { ...inOrganisation, projectId: { $in: writable } });
}
