import { audit, CLI_ACTOR } from '../audit.js';
import type { ProjectRole } from '../auth/principal.js';
import type { ProjectMemberView, ProjectWithMembers } from '../modules/projects/service.js';
import { timestamp } from '../util/clock.js';
import type { AdminServices } from './context.js';
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
  const project = await services.projects.create(organisation.id, input);
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
  const organisation = await requireOrganisation(services, organisationId);
  const { person, previous } = await services.projects.setMemberRole(organisation.id, projectId.trim(), who, role);
  audit(services.logger, {
    action: 'project.role_changed',
    organisationId: organisation.id,
    actor: CLI_ACTOR,
    target: { projectId: projectId.trim(), personId: person.id, role, previous: previous ?? null },
  });
  return { projectId: projectId.trim(), person: { id: person.id, name: person.name, email: person.email }, role, previous };
}
