import type { ProjectRole } from '../src/auth/principal.js';
import type { Actor } from './subjects.js';

/**
 * Project membership, the one rule every subject inside a project uses (projects, project
 * members, pictures, cloud agent runs): the caller acts in a project only where its person holds
 * a role there (owner, contributor or viewer). A device acts for its person: the person who
 * approved it, with that person's project roles and nothing more. Organisation roles stand in for
 * a project role only for a person managing projects (project.ts, project-member.ts), never for
 * a device: a workbench of an organisation owner who is not in a project is refused there (404,
 * as if the project did not exist), like anyone else's.
 *
 * The one exception is reading a project's effective policy (policy.ts): open to every device
 * of the organisation, since a project's stricter rules must reach whoever works there.
 */
export function projectsWithRole(actor: Actor, roles?: readonly ProjectRole[]): string[] {
  if (actor.personId === undefined) return [];
  const ids: string[] = [];
  for (const [id, role] of actor.projectRoles) if (roles === undefined || roles.includes(role)) ids.push(id);
  return ids;
}

/** Roles that change what a project holds (pictures; a project's own settings are its owners'). */
export const WRITING_ROLES: readonly ProjectRole[] = ['owner', 'contributor'];
