import { audit, CLI_ACTOR } from '../audit.js';
import type { ProjectRole } from '../auth/principal.js';
import type { ProjectMemberView, ProjectWithMembers } from '../modules/projects/service.js';
import { timestamp } from '../util/clock.js';
import type { AdminServices } from './context.js';
import { refusedError } from './context.js';
import { requireOrganisation } from './organisations.js';

/** A project as `--json` prints it. */
export interface ProjectView {
  id: string;
  organisationId: string;
  name: string;
  members: ProjectMemberView[];
  createdAt: string;
}

function projectView(project: ProjectWithMembers): ProjectView {
  return {
    id: project.id,
    organisationId: project.organisationId,
    name: project.name,
    members: project.members,
    createdAt: timestamp(project.createdAt),
  };
}

export async function createProject(services: AdminServices, organisationId: string, input: { name: string; owner?: string | undefined }): Promise<ProjectView> {
  const organisation = await requireOrganisation(services, organisationId);
  const project = await services.projects.create(organisation.id, input, CLI_ACTOR);
  audit(services.logger, { action: 'project.created', organisationId: organisation.id, actor: CLI_ACTOR, target: { projectId: project.id } });
  return projectView(project);
}

export async function listProjects(services: AdminServices, organisationId: string): Promise<ProjectView[]> {
  const organisation = await requireOrganisation(services, organisationId);
  return (await services.projects.list(organisation.id)).map(projectView);
}

export interface ProjectRoleChange {
  projectId: string;
  person: { id: string; name: string; email: string | null };
  role: ProjectRole;
  previous: ProjectRole | undefined;
}

export async function setProjectRole(
  services: AdminServices,
  organisationId: string,
  projectId: string,
  who: string,
  role: ProjectRole,
): Promise<ProjectRoleChange> {
  return setProjectMember(services, organisationId, projectId, who, role, 'set');
}

/**
 * Deletes a project as the API does: one holding pictures, cloud agent runs or ingested data is
 * refused (`project_not_empty`) unless `force`, then they go with it.
 */
export async function deleteProject(
  services: AdminServices,
  organisationId: string,
  projectId: string,
  options: { force: boolean },
): Promise<{ projectId: string; pictures: number; runs: number; ingest: boolean }> {
  const organisation = await requireOrganisation(services, organisationId);
  const id = projectId.trim();
  const contents = await services.projects.delete(organisation.id, id, { force: options.force }, CLI_ACTOR);
  const target = { projectId: id, pictures: contents.pictures, runs: contents.runs, ingest: contents.ingest };
  audit(services.logger, { action: 'project.deleted', organisationId: organisation.id, actor: CLI_ACTOR, target });
  return target;
}

export interface ProjectMemberListView {
  personId: string;
  name: string;
  email: string | null;
  role: ProjectRole;
  addedAt: string;
}

export async function listProjectMembers(services: AdminServices, organisationId: string, projectId: string): Promise<ProjectMemberListView[]> {
  const organisation = await requireOrganisation(services, organisationId);
  const members: ProjectMemberListView[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await services.projects.memberPage(organisation.id, projectId.trim(), { limit: 200, cursor });
    members.push(...page.items.map((item) => ({ personId: item.personId, name: item.name, email: item.email, role: item.role, addedAt: timestamp(item.addedAt) })));
    if (!page.nextCursor) return members;
    cursor = page.nextCursor;
  }
}

/**
 * Adds a member of the organisation to a project (`add`: refused when they are one already) or
 * sets their role (`set`), with the API's audit line (`project.member_role_set`).
 */
export async function setProjectMember(
  services: AdminServices,
  organisationId: string,
  projectId: string,
  who: string,
  role: ProjectRole,
  mode: 'add' | 'set',
): Promise<ProjectRoleChange> {
  const organisation = await requireOrganisation(services, organisationId);
  const id = projectId.trim();
  if (mode === 'add') {
    const member = await services.projects.findOrganisationMember(organisation.id, who);
    const current = (await services.projects.members(organisation.id, id)).find((entry) => entry.personId === member.id);
    if (current) throw refusedError(`${member.email ?? member.id} is already ${current.role} of project ${id}; change it with \`platform project members set-role\``);
  }
  const { person, previous } = await services.projects.setMemberRole(organisation.id, id, who, role, CLI_ACTOR);
  if (previous !== role) {
    audit(services.logger, {
      action: 'project.member_role_set',
      organisationId: organisation.id,
      actor: CLI_ACTOR,
      target: { projectId: id, personId: person.id, from: previous ?? null, to: role },
    });
  }
  return { projectId: id, person: { id: person.id, name: person.name, email: person.email }, role, previous };
}

export async function removeProjectMember(services: AdminServices, organisationId: string, projectId: string, who: string): Promise<{ projectId: string; personId: string }> {
  const organisation = await requireOrganisation(services, organisationId);
  const id = projectId.trim();
  await services.projects.get(organisation.id, id);
  const trimmed = who.trim();
  // By address: among the organisation's members; by id: also someone who has left it since.
  const personId = trimmed.includes('@') ? (await services.projects.findOrganisationMember(organisation.id, trimmed)).id : trimmed;
  await services.projects.removeMember(organisation.id, id, personId, CLI_ACTOR);
  audit(services.logger, { action: 'project.member_removed', organisationId: organisation.id, actor: CLI_ACTOR, target: { projectId: id, personId } });
  return { projectId: id, personId };
}
