import type { Request } from 'express';
import { abilityOf, authorize } from '../../../policies/index.js';
import { actorOf } from '../../audit.js';
import type { Principal } from '../../auth/principal.js';
import { defineRoute, type ErrorDeclaration, type Reply, type ResponseSpec, type RouteDefinition } from '../../http/route.js';
import type { OrganisationRecord } from '../organisation/entities.js';
import {
  policyAnswerSchema,
  policyDocumentSchema,
  policyOverrideSchema,
  policyPublishAnswerSchema,
  policyRevisionListSchema,
  projectIdSchema,
} from './schemas.js';
import { preconditionRequired, type EffectivePolicy, type Preconditions, type PolicyService, type PublishOutcome, type StoredRevision } from './service.js';

export interface PolicyRouteOptions {
  /** POLICY_REQUIRE_IF_MATCH: publishing and restoring without `If-Match` is refused with 428. */
  requireIfMatch: boolean;
}

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

const publishHeaders = {
  ETag: { description: 'The revision now in effect, quoted: the `If-Match` of the next change.', schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store`.', schema: { type: 'string' } },
} as const;

const revisionNumberSchema = {
  type: 'integer',
  minimum: 1,
  maximum: 2_147_483_647,
  description: 'The number of the publish to restore (as listed by `…/revisions`).',
} as const;

const organisationRevisionParams = {
  type: 'object',
  required: ['number'],
  properties: { number: revisionNumberSchema },
  additionalProperties: false,
} as const;

const projectRevisionParams = {
  type: 'object',
  required: ['projectId', 'number'],
  properties: { projectId: projectIdSchema, number: revisionNumberSchema },
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

/** An effective policy's answer, serialised once: the service keeps one answer object per
 * revision (its cache), so the text and headers are made once per revision and reused. */
const prepared = new WeakMap<EffectivePolicy, { etag: string; headers: Record<string, string>; serialised: Buffer }>();

function policyReply(answer: EffectivePolicy, ifNoneMatch?: string): Reply {
  let ready = prepared.get(answer);
  if (!ready) {
    const etag = `"${answer.revision}"`;
    // The answer depends on who asks (organisation by token or header), never on the URL alone.
    const headers = { ETag: etag, 'Cache-Control': 'private, no-cache', Vary: 'Authorization, X-Platform-Organisation' };
    ready = { etag, headers, serialised: Buffer.from(JSON.stringify(answer), 'utf8') };
    prepared.set(answer, ready);
  }
  if (matchesEtag(ifNoneMatch, ready.etag)) return { status: 304, headers: ready.headers };
  return { status: 200, headers: ready.headers, body: answer, serialised: ready.serialised };
}

function publishReply(outcome: PublishOutcome): Reply {
  const headers = { ETag: `"${outcome.revision}"`, 'Cache-Control': 'no-store' };
  return { status: 200, headers, body: outcome };
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

function ability(principal: Principal) {
  return abilityOf(principal);
}

export function policyRoutes(policies: PolicyService, options: PolicyRouteOptions): RouteDefinition[] {
  const writeHeaders = {
    'If-Match': {
      description:
        'The ETag of the policy this change is based on (`GET /policy/v1`, with `projectId` for a project, or the answer of the last publish): the change is made only if it is still current, otherwise 412. ' +
        (options.requireIfMatch ? 'Required on this deployment (428 without it).' : 'Optional on this deployment (POLICY_REQUIRE_IF_MATCH is off).'),
      required: options.requireIfMatch,
      schema: { type: 'string' },
    },
  } as const;
  const writeResponses = (what: string): Record<number, ResponseSpec> => {
    const responses: Record<number, ResponseSpec> = {
      200: { description: `${what} Says whether it changed anything (\`changed\`).`, schema: policyPublishAnswerSchema, headers: publishHeaders },
      409: { description: 'Another publish of this organisation happened at the same moment, three times over; publish again.' },
      412: {
        description: "The policy changed since the ETag given in `If-Match`; the answer's `ETag` is the current one. Nothing was stored.",
        headers: { ETag: { description: 'The current revision, quoted.', schema: { type: 'string' } } },
      },
    };
    // Only a deployment that requires If-Match can answer 428.
    if (options.requireIfMatch) responses[428] = { description: 'This deployment requires `If-Match` on every publish and restore.' };
    return responses;
  };
  /** The codes of a publish or restore, beside those of `extra`. */
  const writeErrors = (extra: ErrorDeclaration = {}): ErrorDeclaration => ({
    ...extra,
    409: ['conflict', ...(extra[409] ?? [])],
    412: ['precondition_failed'],
    ...(options.requireIfMatch ? { 428: ['precondition_required'] } : {}),
  });
  /** `If-Match` as sent, after the deployment's rule that it be sent. */
  const preconditions = (req: Request): Preconditions => {
    const ifMatch = req.headers['if-match'];
    if (ifMatch === undefined && options.requireIfMatch) throw preconditionRequired();
    return { ifMatch };
  };
  return [
    defineRoute({
      method: 'get',
      path: '/policy/v1',
      operationId: 'getPolicy',
      permission: ['read', 'Policy'],
      summary: 'The effective policy',
      description:
        "The policy the calling workbench enforces: the organisation's, or with `projectId` that project's override merged over it; the service's defaults (`published: false`) until the organisation publishes. The ETag is the revision: poll with `If-None-Match` and get 304 while nothing changed.",
      tag: 'Policy',
      tenant: true,
      auth: ['device', 'person', 'cloud-session'],
      deviceScope: 'policy:read',
      headers: {
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
      permission: ['update', 'Policy'],
      summary: "Publish the organisation's policy",
      description:
        "Owners and admins publish the whole document; it applies to every workbench from its next request to this replica, and within a second on every other replica (at once with Redis). Kept as a new revision unless it equals the one that applies (then nothing is stored and the answer says `changed: false`). A document that does not validate is refused (400 naming the field) and the previous one stays. With `If-Match` (the ETag of `GET /policy/v1`) the publish is made only over that revision: 412 otherwise, so two people editing at once cannot overwrite each other. Answers the organisation's effective policy.",
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: writeHeaders,
      schemas: { body: policyDocumentSchema },
      responses: writeResponses("The organisation's effective policy after the publish."),
      errors: writeErrors(),
      handler: async ({ body, principal, tenant, req }) => {
        const organisation: OrganisationRecord = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id });
        return publishReply(await policies.publishOrganisation(organisation.id, actorOf(principal), body, preconditions(req)));
      },
    }),
    defineRoute({
      method: 'put',
      path: '/policy/v1/projects/{projectId}',
      operationId: 'publishProjectPolicy',
      permission: ['update', 'Policy'],
      summary: "Publish a project's policy override",
      description:
        "Owners and admins of the organisation publish any part of the document for one project; it is merged over the organisation's policy (objects key by key, arrays and values replaced) and the result must validate. `{}` clears the override. An override equal to the one that applies is not stored again (`changed: false`). With `If-Match` (the ETag of `GET /policy/v1?projectId=…`, which changes with the organisation's policy too) the publish is made only over that revision, 412 otherwise. Answers the project's effective policy.",
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: writeHeaders,
      schemas: {
        params: { type: 'object', required: ['projectId'], properties: { projectId: projectIdSchema }, additionalProperties: false },
        body: policyOverrideSchema,
      },
      responses: writeResponses("The project's effective policy after the publish."),
      errors: writeErrors({ 404: ['not_found'] }),
      handler: async ({ params, body, principal, tenant, req }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id, projectId: params.projectId });
        return publishReply(await policies.publishProject(organisation.id, params.projectId, actorOf(principal), body, preconditions(req)));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/policy/v1/organisation/revisions',
      operationId: 'listOrganisationPolicyRevisions',
      permission: ['update', 'Policy'],
      summary: "Publishes of the organisation's policy",
      description: 'Owners and admins: the stored publishes, newest first, each as published and whether it still validates.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
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
      permission: ['update', 'Policy'],
      summary: "Publishes of a project's policy override",
      description: 'Owners and admins of the organisation: the stored overrides of the project, newest first.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
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
    defineRoute({
      method: 'post',
      path: '/policy/v1/organisation/revisions/{number}/restore',
      operationId: 'restoreOrganisationPolicyRevision',
      permission: ['update', 'Policy'],
      summary: "Make an earlier publish of the organisation's policy current again",
      description:
        'Owners and admins: the document of publish `number` (of the organisation\'s policy) is published again, as a new publish; the history is kept. ' +
        'It must still validate (409 `invalid_revision` otherwise). Equal to what applies: nothing is stored (`changed: false`). `If-Match` as for a publish. Takes no body.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: writeHeaders,
      schemas: { params: organisationRevisionParams },
      responses: {
        ...writeResponses("The organisation's effective policy after the restore."),
        409: { description: 'The publish no longer validates (`invalid_revision`), or another publish happened at the same moment three times over (`conflict`).' },
      },
      errors: writeErrors({ 404: ['not_found'], 409: ['invalid_revision'] }),
      handler: async ({ params, principal, tenant, req }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id });
        return publishReply(await policies.restore(organisation.id, null, params.number, actorOf(principal), preconditions(req)));
      },
    }),
    defineRoute({
      method: 'post',
      path: '/policy/v1/projects/{projectId}/revisions/{number}/restore',
      operationId: 'restoreProjectPolicyRevision',
      permission: ['update', 'Policy'],
      summary: "Make an earlier publish of a project's override current again",
      description:
        "Owners and admins of the organisation: the override of publish `number` (of this project) is published again, as a new publish. It must still validate, on its own and merged over the organisation's current policy (409 `invalid_revision` otherwise). " +
        'Equal to what applies: nothing is stored (`changed: false`). `If-Match` as for a publish. Takes no body.',
      tag: 'Policy',
      extension: true,
      tenant: true,
      auth: ['person', 'cloud-session'],
      forbids: true,
      headers: writeHeaders,
      schemas: { params: projectRevisionParams },
      responses: {
        ...writeResponses("The project's effective policy after the restore."),
        409: { description: 'The publish no longer validates (`invalid_revision`), or another publish happened at the same moment three times over (`conflict`).' },
      },
      errors: writeErrors({ 404: ['not_found'], 409: ['invalid_revision'] }),
      handler: async ({ params, principal, tenant, req }) => {
        const organisation = tenant!;
        authorize(ability(principal), 'update', 'Policy', { organisationId: organisation.id, projectId: params.projectId });
        return publishReply(await policies.restore(organisation.id, params.projectId, params.number, actorOf(principal), preconditions(req)));
      },
    }),
  ];
}
