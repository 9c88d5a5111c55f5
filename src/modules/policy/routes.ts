import { authorize, defineAbilityFor } from '../../../policies/index.js';
import { actorOf, audit } from '../../audit.js';
import type { Principal } from '../../auth/principal.js';
import { defineRoute, type Reply, type RouteDefinition } from '../../http/route.js';
import type { OrganisationRecord } from '../organisation/entities.js';
import {
  policyAnswerSchema,
  policyDocumentSchema,
  policyOverrideSchema,
  policyRevisionListSchema,
  projectIdSchema,
} from './schemas.js';
import type { EffectivePolicy, PolicyService, StoredRevision } from './service.js';

const ORGANISATION_HEADER = {
  'X-Platform-Organisation': {
    description: "Cloud only, with a person's access token: the organisation id the request is for.",
    schema: { type: 'string' },
    onlyWith: 'cloud-session',
  },
} as const;

const answerHeaders = {
  ETag: { description: 'The revision, quoted.', schema: { type: 'string' } },
  'Cache-Control': { description: '`private, no-cache`: keep it, but ask again (with `If-None-Match`) before using it.', schema: { type: 'string' } },
} as const;

const revisionsQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, description: 'How many publishes to list, newest first (default 20).' },
    cursor: { type: 'string', pattern: '^[1-9][0-9]{0,9}$', description: 'The `nextCursor` of the previous page.' },
  },
  additionalProperties: false,
} as const;

/** RFC 9110 13.1.2: weak comparison, a list of tags, or `*`. */
function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const value = candidate.trim().replace(/^W\//, '');
    return value === '*' || value === etag;
  });
}

function policyReply(answer: EffectivePolicy, ifNoneMatch?: string): Reply {
  const etag = `"${answer.revision}"`;
  // The answer depends on who asks (organisation by token or header), never on the URL alone.
  const headers = { ETag: etag, 'Cache-Control': 'private, no-cache', Vary: 'Authorization, X-Platform-Organisation' };
  if (matchesEtag(ifNoneMatch, etag)) return { status: 304, headers };
  return { status: 200, headers, body: answer };
}

/** One page: `limit` publishes (one more was read to know whether another page follows). */
async function revisionsReply(query: { limit?: number; cursor?: string }, read: (limit: number, below?: number) => Promise<StoredRevision[]>): Promise<Reply> {
  const limit = query.limit ?? 20;
  const rows = await read(limit + 1, query.cursor === undefined ? undefined : Number(query.cursor));
  const page = rows.slice(0, limit);
  return {
    status: 200,
    headers: { 'Cache-Control': 'no-store' },
    body: {
      revisions: page.map((revision) => ({ ...revision, publishedAt: revision.publishedAt.toISOString() })),
      nextCursor: rows.length > limit ? String(page[page.length - 1]!.number) : null,
    },
  };
}

function ability(principal: Principal | undefined) {
  return defineAbilityFor({ ...principal!, projectRoles: new Map() });
}

export function policyRoutes(policies: PolicyService): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/policy/v1',
      operationId: 'getPolicy',
      summary: 'The effective policy',
      description:
        "The policy the calling workbench enforces: the organisation's, or with `projectId` that project's override merged over it; the service's defaults (`published: false`) until the organisation publishes. The ETag is the revision: poll with `If-None-Match` and get 304 while nothing changed.",
      tag: 'Policy',
      tenant: true,
      auth: ['device', 'person', 'cloud-session'],
      deviceScope: 'policy:read',
      headers: {
        ...ORGANISATION_HEADER,
        'If-None-Match': { description: 'The ETag of an earlier answer.', schema: { type: 'string' } },
      },
      schemas: {
        query: {
          type: 'object',
          properties: {
            projectId: { ...projectIdSchema, description: "A project of the caller's organisation whose effective policy to answer instead (`prj_…`)." },
          },
          additionalProperties: false,
        },
      },
      responses: {
        200: { description: 'The effective policy.', schema: policyAnswerSchema, headers: answerHeaders },
        304: { description: 'Not modified since the ETag given in `If-None-Match`.' },
      },
      errors: { 404: ['not_found'] },
      handler: async ({ query, principal, tenant, req }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'read', 'Policy', { organisationId: organisation.id, ...(query.projectId ? { projectId: query.projectId } : {}) });
        const answer = await policies.effective(organisation.id, query.projectId);
        return policyReply(answer, req.headers['if-none-match']);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/policy/v1/organisation',
      operationId: 'publishOrganisationPolicy',
      summary: "Publish the organisation's policy",
      description:
        "Owners and admins publish the whole document; it applies to every workbench from their next request. Kept as a new revision unless it equals the newest one. A document that does not validate is refused (400 naming the field) and the previous one stays. Answers the organisation's effective policy.",
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: ORGANISATION_HEADER,
      schemas: { body: policyDocumentSchema },
      responses: {
        200: { description: "The organisation's effective policy after the publish.", schema: policyAnswerSchema, headers: answerHeaders },
        409: { description: 'Another publish of this organisation happened at the same moment, three times over; publish again.' },
      },
      errors: { 409: ['conflict'] },
      handler: async ({ body, principal, tenant, req }) => {
        const organisation: OrganisationRecord = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id });
        const published = await policies.publishOrganisation(organisation.id, principal!.personId, body);
        audit(req.log, { action: 'policy.published', organisationId: organisation.id, actor: actorOf(principal), target: { scope: 'organisation', revision: published.revision } });
        return policyReply(published);
      },
    }),
    defineRoute({
      method: 'put',
      path: '/policy/v1/projects/{projectId}',
      operationId: 'publishProjectPolicy',
      summary: "Publish a project's policy override",
      description:
        "Owners and admins of the organisation publish any part of the document for one project; it is merged over the organisation's policy (objects key by key, arrays and values replaced) and the result must validate. `{}` clears the override. Answers the project's effective policy.",
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: ORGANISATION_HEADER,
      schemas: {
        params: { type: 'object', required: ['projectId'], properties: { projectId: projectIdSchema }, additionalProperties: false },
        body: policyOverrideSchema,
      },
      responses: {
        200: { description: "The project's effective policy after the publish.", schema: policyAnswerSchema, headers: answerHeaders },
        409: { description: 'Another publish of this organisation happened at the same moment, three times over; publish again.' },
      },
      errors: { 404: ['not_found'], 409: ['conflict'] },
      handler: async ({ params, body, principal, tenant, req }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id, projectId: params.projectId });
        const published = await policies.publishProject(organisation.id, params.projectId, principal!.personId, body);
        audit(req.log, {
          action: 'policy.published',
          organisationId: organisation.id,
          actor: actorOf(principal),
          target: { scope: 'project', projectId: params.projectId, revision: published.revision },
        });
        return policyReply(published);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/policy/v1/organisation/revisions',
      operationId: 'listOrganisationPolicyRevisions',
      summary: "Publishes of the organisation's policy",
      description: 'Owners and admins: the stored publishes, newest first, each as published and whether it still validates.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: ORGANISATION_HEADER,
      schemas: { query: revisionsQuery },
      responses: { 200: { description: 'The publishes, newest first.', schema: policyRevisionListSchema } },
      handler: async ({ query, principal, tenant }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id });
        return revisionsReply(query, (limit, below) => policies.revisions(organisation.id, null, limit, below));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/policy/v1/projects/{projectId}/revisions',
      operationId: 'listProjectPolicyRevisions',
      summary: "Publishes of a project's policy override",
      description: 'Owners and admins of the organisation: the stored overrides of the project, newest first.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: ORGANISATION_HEADER,
      schemas: {
        params: { type: 'object', required: ['projectId'], properties: { projectId: projectIdSchema }, additionalProperties: false },
        query: revisionsQuery,
      },
      responses: { 200: { description: 'The publishes, newest first.', schema: policyRevisionListSchema } },
      errors: { 404: ['not_found'] },
      handler: async ({ params, query, principal, tenant }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id, projectId: params.projectId });
        return revisionsReply(query, (limit, below) => policies.revisions(organisation.id, params.projectId, limit, below));
      },
    }),
  ];
}
