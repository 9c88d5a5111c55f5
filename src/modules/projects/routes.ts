import type { Logger } from 'pino';
import { authorize, defineAbilityFor, permits, type AppAbility } from '../../../policies/index.js';
import { actorOf, audit } from '../../audit.js';
import type { Principal } from '../../auth/principal.js';
import { forbidden, notFound } from '../../errors.js';
import { DEFAULT_PAGE_SIZE, pageQuerySchema } from '../../http/pagination.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { projectListSchema, projectMemberBodySchema, projectMemberListSchema, projectMemberSchema, projectNameBodySchema, projectSchema } from './schemas.js';
import type { ProjectMemberEntry, ProjectService } from './service.js';

/**
 * Extension: projects and their members, for a console and an administrator (the command line
 * has `platform project …`). Person tokens on self-hosted, Cloud sessions with
 * `X-Platform-Organisation` on Cloud; never devices. Who may do what is policies/project.ts and
 * policies/project-member.ts: any member of the organisation creates a project and becomes its
 * owner; organisation owners and admins manage every project; a project's owners manage it and
 * its members; everyone else sees the projects they belong to. A project the caller may not see
 * (another organisation's, or one they do not belong to) is 404.
 */

const common = { tag: 'Projects', extension: true, tenant: true, auth: ['person', 'cloud-session'] } as const;

const projectIdSchema = { type: 'string', minLength: 1, maxLength: 40, description: 'Project id (`prj_…`).' } as const;
const projectParams = { type: 'object', required: ['projectId'], properties: { projectId: projectIdSchema }, additionalProperties: false } as const;
const memberParams = {
  type: 'object',
  required: ['projectId', 'personId'],
  properties: { projectId: projectIdSchema, personId: { type: 'string', minLength: 1, maxLength: 100, description: 'Person id (`usr_…`) of a member of the organisation.' } },
  additionalProperties: false,
} as const;


async function abilityOf(projects: ProjectService, principal: Principal): Promise<AppAbility> {
  const caller = principal;
  const roles = await projects.rolesOf(caller.organisationId, caller.personId);
  return defineAbilityFor({ ...caller, projectRoles: roles });
}

/** The project, if the caller may see it (404 otherwise), and the caller's ability. */
async function visibleProject(projects: ProjectService, principal: Principal, projectId: string) {
  const ability = await abilityOf(projects, principal);
  const project = await projects.get(principal.organisationId, projectId);
  authorize(ability, 'read', 'Project', { id: project.id, organisationId: project.organisationId }, () => notFound('no such project'));
  return { project, ability };
}

function memberBody(member: ProjectMemberEntry) {
  return { userId: member.personId, name: member.name, email: member.email, role: member.role, addedAt: member.addedAt.toISOString() };
}

export function projectRoutes(projects: ProjectService, logger: Logger): RouteDefinition[] {
  const record = (principal: Principal, action: string, target: Record<string, string | number | boolean | null>) =>
    audit(logger, { action, organisationId: principal.organisationId, actor: actorOf(principal), target });

  return [
    defineRoute({
      ...common,
      method: 'get',
      path: '/platform/v1/projects',
      operationId: 'listProjects',
      permission: { record: ['read', 'Project'], why: 'organisation owners and admins list every project, anyone else the projects they hold a role in: project roles decide, which the token does not carry' },
      summary: "The organisation's projects you may see",
      description: 'Organisation owners and admins see every project; everyone else the projects they belong to. Oldest first; `role` is yours in each.',
      schemas: { query: pageQuerySchema },
      responses: {
        200: { description: 'A page of projects.', schema: projectListSchema },
        400: { description: '`invalid_request`: a query parameter or the cursor is malformed.' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ query, principal }) => {
        const ability = await abilityOf(projects, principal);
        // Every project, when the rules grant reading a project the caller holds no role in.
        const everything = permits(ability, 'read', 'Project', { id: '', organisationId: principal.organisationId });
        const page = await projects.page(principal.organisationId, principal.personId, { onlyTheirs: !everything, limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
        return {
          status: 200,
          body: { projects: page.items.map((project) => ({ id: project.id, name: project.name, createdAt: project.createdAt.toISOString(), role: project.role })), nextCursor: page.nextCursor },
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
    defineRoute({
      ...common,
      method: 'post',
      path: '/platform/v1/projects',
      operationId: 'createProject',
      permission: ['create', 'Project'],
      summary: 'Create a project',
      description: 'Any member of the organisation; the caller becomes the project\'s owner.',
      schemas: { body: projectNameBodySchema },
      responses: {
        201: { description: 'The new project, the caller its owner.', schema: projectSchema },
        400: { description: '`invalid_request`: no name, or one empty or too long (naming the field); `json_too_complex`.' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ body, principal }) => {
        const ability = await abilityOf(projects, principal);
        authorize(ability, 'create', 'Project', { id: '', organisationId: principal.organisationId });
        const project = await projects.create(principal.organisationId, { name: body.name, owner: principal.personId }, actorOf(principal));
        record(principal, 'project.created', { projectId: project.id });
        return { status: 201, body: { id: project.id, name: project.name, createdAt: project.createdAt.toISOString(), role: 'owner' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/platform/v1/projects/{projectId}',
      operationId: 'getProject',
      permission: { record: ['read', 'Project'], why: 'project roles decide (policies/project.ts), which the token does not carry: the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: 'A project',
      description: 'Anyone who may see it: its members, and the organisation\'s owners and admins.',
      schemas: { params: projectParams },
      responses: {
        200: { description: 'The project.', schema: projectSchema },
        404: { description: '`not_found`: no such project in your organisation, or you are not a member of it.' },
      },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal }) => {
        const { project } = await visibleProject(projects, principal, params.projectId);
        const role = (await projects.rolesOf(project.organisationId, principal.personId)).get(project.id) ?? null;
        return { status: 200, body: { id: project.id, name: project.name, createdAt: project.createdAt.toISOString(), role }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'patch',
      path: '/platform/v1/projects/{projectId}',
      operationId: 'renameProject',
      permission: { record: ['update', 'Project'], why: 'project roles decide (policies/project.ts), which the token does not carry: the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: 'Rename a project',
      description: 'The project\'s owners, and the organisation\'s owners and admins.',
      forbids: true,
      schemas: { params: projectParams, body: projectNameBodySchema },
      responses: {
        200: { description: 'The renamed project.', schema: projectSchema },
        400: { description: '`invalid_request` (naming the field), `json_too_complex`.' },
        403: { description: '`forbidden`: contributors and viewers do not rename the project.' },
        404: { description: '`not_found`: no such project in your organisation, or you are not a member of it.' },
      },
      errors: { 400: ['invalid_request'], 403: ['forbidden'], 404: ['not_found'] },
      handler: async ({ params, body, principal }) => {
        const { project, ability } = await visibleProject(projects, principal, params.projectId);
        authorize(ability, 'update', 'Project', project);
        const renamed = await projects.rename(project.organisationId, project.id, body.name, actorOf(principal));
        record(principal, 'project.renamed', { projectId: project.id });
        const role = (await projects.rolesOf(project.organisationId, principal.personId)).get(project.id) ?? null;
        return { status: 200, body: { id: renamed.id, name: renamed.name, createdAt: renamed.createdAt.toISOString(), role } };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/platform/v1/projects/{projectId}',
      operationId: 'deleteProject',
      permission: { record: ['delete', 'Project'], why: 'project roles decide (policies/project.ts), which the token does not carry: the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: 'Delete a project',
      description:
        'The project\'s owners, and the organisation\'s owners and admins. A project that holds pictures, cloud agent runs or ingested workbench data (events, usage, audit ' +
        'records, tasks) is refused with 409 `project_not_empty` unless `force=true`: then they are deleted with it. Its policy publishes and members always ' +
        'go with it; no row of another table names it afterwards.',
      forbids: true,
      schemas: {
        params: projectParams,
        query: {
          type: 'object',
          properties: { force: { type: 'boolean', description: '`true`: delete the project\'s pictures and ingested data with it (default `false`).' } },
          additionalProperties: false,
        },
      },
      responses: {
        204: { description: 'Deleted.' },
        400: { description: '`invalid_request`: `force` is not `true` or `false`.' },
        403: { description: '`forbidden`: contributors and viewers do not delete the project.' },
        404: { description: '`not_found`: no such project in your organisation, or you are not a member of it.' },
        409: { description: '`project_not_empty`: the project holds pictures, cloud agent runs or ingested data, and `force=true` was not sent.' },
      },
      errors: { 400: ['invalid_request'], 403: ['forbidden'], 404: ['not_found'], 409: ['project_not_empty'] },
      handler: async ({ params, query, principal }) => {
        const { project, ability } = await visibleProject(projects, principal, params.projectId);
        authorize(ability, 'delete', 'Project', project);
        const contents = await projects.delete(project.organisationId, project.id, { force: query.force === true }, actorOf(principal));
        record(principal, 'project.deleted', { projectId: project.id, pictures: contents.pictures, runs: contents.runs, ingest: contents.ingest });
        return { status: 204 };
      },
    }),
    defineRoute({
      ...common,
      method: 'get',
      path: '/platform/v1/projects/{projectId}/members',
      operationId: 'listProjectMembers',
      permission: { record: ['read', 'ProjectMember'], why: 'project roles decide (policies/project.ts), which the token does not carry: the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: "A project's members",
      description: 'Anyone who may see the project. In the order they were added.',
      schemas: { params: projectParams, query: pageQuerySchema },
      responses: {
        200: { description: 'A page of members.', schema: projectMemberListSchema },
        400: { description: '`invalid_request`: a query parameter or the cursor is malformed.' },
        404: { description: '`not_found`: no such project in your organisation, or you are not a member of it.' },
      },
      errors: { 400: ['invalid_request'], 404: ['not_found'] },
      handler: async ({ params, query, principal }) => {
        const { project, ability } = await visibleProject(projects, principal, params.projectId);
        authorize(ability, 'read', 'ProjectMember', { organisationId: project.organisationId, projectId: project.id, personId: '' }, () => notFound('no such project'));
        const page = await projects.memberPage(project.organisationId, project.id, { limit: query.limit ?? DEFAULT_PAGE_SIZE, cursor: query.cursor });
        return { status: 200, body: { members: page.items.map(memberBody), nextCursor: page.nextCursor }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...common,
      method: 'put',
      path: '/platform/v1/projects/{projectId}/members/{personId}',
      operationId: 'setProjectMember',
      permission: { record: ['manage-members', 'Project'], why: 'project roles decide (policies/project.ts), which the token does not carry: the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: "Add a member to a project, or change their role",
      description:
        'The project\'s owners, and the organisation\'s owners and admins. The person must be a member of the organisation. A project that has an owner ' +
        'keeps one (409 `last_owner`). 201 when the person was added, 200 when their role was set.',
      forbids: true,
      schemas: { params: memberParams, body: projectMemberBodySchema },
      responses: {
        200: { description: 'The role was set (or already so).', schema: projectMemberSchema },
        201: { description: 'The person was added.', schema: projectMemberSchema },
        400: { description: '`invalid_request` (naming the field), `json_too_complex`.' },
        403: { description: '`forbidden`: contributors and viewers do not manage the project\'s members.' },
        404: { description: '`not_found`: no such project you may see, or the person is not a member of the organisation.' },
        409: { description: '`last_owner`: the change would leave the project without an owner.' },
      },
      errors: { 400: ['invalid_request'], 403: ['forbidden'], 404: ['not_found'], 409: ['last_owner'] },
      handler: async ({ params, body, principal }) => {
        const { project, ability } = await visibleProject(projects, principal, params.projectId);
        authorize(ability, 'manage-members', 'Project', project);
        const { member, previous } = await projects.setRoleById(project.organisationId, project.id, params.personId, body.role, actorOf(principal));
        if (previous !== body.role) record(principal, 'project.member_role_set', { projectId: project.id, personId: member.personId, from: previous ?? null, to: body.role });
        return { status: previous === undefined ? 201 : 200, body: memberBody(member) };
      },
    }),
    defineRoute({
      ...common,
      method: 'delete',
      path: '/platform/v1/projects/{projectId}/members/{personId}',
      operationId: 'removeProjectMember',
      permission: { record: ['delete', 'ProjectMember'], why: 'managing the project\'s members, or leaving it (one\'s own membership): project roles decide, which the token does not carry; the handler asks about the loaded project, 404 for one the caller may not see' },
      summary: 'Remove a member from a project, or leave it',
      description:
        'The project\'s owners and the organisation\'s owners and admins remove anyone; a member removes themselves (leaves). A project that has an owner keeps one (409 `last_owner`).',
      forbids: true,
      schemas: { params: memberParams },
      responses: {
        204: { description: 'Removed.' },
        403: { description: '`forbidden`: contributors and viewers remove only themselves.' },
        404: { description: '`not_found`: no such project you may see, or no such member of it.' },
        409: { description: '`last_owner`: the project would be left without an owner.' },
      },
      errors: { 403: ['forbidden'], 404: ['not_found'], 409: ['last_owner'] },
      handler: async ({ params, principal }) => {
        const { project, ability } = await visibleProject(projects, principal, params.projectId);
        const own = { organisationId: project.organisationId, projectId: project.id, personId: params.personId };
        // Managing the project's members, or leaving it (removing one's own membership).
        if (!permits(ability, 'manage-members', 'Project', project)) {
          authorize(ability, 'delete', 'ProjectMember', own, () => forbidden('only the project\'s owners and the organisation\'s owners and admins remove others'));
        }
        await projects.removeMember(project.organisationId, project.id, params.personId, actorOf(principal));
        record(principal, params.personId === principal.personId ? 'project.member_left' : 'project.member_removed', { projectId: project.id, personId: params.personId });
        return { status: 204 };
      },
    }),
  ];
}
