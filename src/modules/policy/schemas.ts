import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema, type Schema } from '../../http/schema.js';
import { DEFAULT_POLICY } from '../../../policies/default-policy.js';
import * as documentParts from '../../../policies/policy-document.js';

/** The policy the examples publish: the defaults, with two providers, a denied host and a release branch protected. */
const EXAMPLE_POLICY = {
  ...DEFAULT_POLICY,
  allowedProviders: ['anthropic', 'openai'],
  network: { ...DEFAULT_POLICY.network, denyHosts: ['pastebin.com'] },
  git: { protectedBranches: ['main', 'release/*'], requirePullRequest: true },
};
/** A project's override in the examples, and the policy that then applies to the project. */
const EXAMPLE_OVERRIDE = { pullRequests: { requiredApprovals: 2 }, agents: { sandbox: 'workspace' } };
const EXAMPLE_REVISION = 'q3Lx0bS8vN2kE7rT5yU1wP9aD4fG6hJ2kL8zX0cV3bM';

// The policy document and its parts are the policies' (policies/policy-document.ts, beside the
// default policy); named here, in this order, as components of the OpenAPI document.
export const networkRuleSchema = named('PolicyNetworkRule', documentParts.networkRuleSchema);
export const toolRuleSchema = named('PolicyToolRule', documentParts.toolRuleSchema);
export const toolServerSchema = named('PolicyToolServer', documentParts.toolServerSchema);
export const teamGrantSchema = named('PolicyTeamGrant', documentParts.teamGrantSchema);
export const policyDocumentSchema = named('PolicyDocument', { ...documentParts.policyDocumentSchema, examples: [EXAMPLE_POLICY] });
export type { PolicyDocument } from '../../../policies/policy-document.js';

/**
 * A project override: any part of the document. Objects reached through the document's
 * properties lose their `required` lists; array items stay whole, because an array in an
 * override replaces the organisation's array entirely.
 */
function partial(schema: Schema): Schema {
  const copy: Record<string, unknown> = { ...schema };
  delete copy.required;
  if (schema.properties) {
    copy.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => {
        const inner = property as Schema;
        return [name, inner.type === 'object' && inner.properties ? partial(inner) : inner];
      }),
    );
  }
  return copy;
}

export const policyOverrideSchema = named('PolicyOverride', {
  ...partial(policyDocumentSchema),
  description:
    "A project's override: any part of the policy document (every field optional, every value as in `PolicyDocument`). Objects merge key by key over the organisation's policy; arrays and values replace. `{}` clears the override.",
  examples: [EXAMPLE_OVERRIDE],
});

export const policyAnswerSchema = named('PolicyAnswer', {
  type: 'object',
  description: 'The effective policy (spec 2.14) and its revision.',
  required: ['revision', 'policy', 'published'],
  properties: {
    revision: {
      type: 'string',
      description: 'Identifies the effective document: the SHA-256 of its canonical JSON (keys sorted), base64url. Equal documents have equal revisions. Also the ETag.',
    },
    policy: policyDocumentSchema,
    published: { type: 'boolean', description: '`false` while nothing is published and the service\'s defaults apply.' },
  },
  additionalProperties: false,
  examples: [{ revision: EXAMPLE_REVISION, policy: EXAMPLE_POLICY, published: true }],
} as const);

export const policyPublishAnswerSchema = named('PolicyPublishAnswer', {
  type: 'object',
  description:
    'The effective policy after a publish or a restore, and what the request changed. A document identical to the one that applies (the organisation\'s policy, or the project\'s override; `{}` for a project without one) is not stored again: `changed` is `false` and `number` names the publish that still applies.',
  required: ['revision', 'policy', 'published', 'changed', 'number'],
  properties: {
    ...policyAnswerSchema.properties,
    changed: { type: 'boolean', description: '`true`: a new publish was stored; `false`: the document equals the one that applies and nothing was stored.' },
    number: {
      type: ['integer', 'null'],
      description: 'The number of the stored publish of this scope that applies now (the new one when `changed`); `null` when none does.',
    },
  },
  additionalProperties: false,
  examples: [{ revision: EXAMPLE_REVISION, policy: EXAMPLE_POLICY, published: true, changed: true, number: 3 }],
} as const);

export const policyRevisionSchema = named('PolicyRevision', {
  type: 'object',
  description: 'One stored publish: the document as it was published (whole for the organisation, the override for a project).',
  required: ['number', 'projectId', 'publishedBy', 'publishedAt', 'valid', 'document'],
  properties: {
    number: { type: 'integer', description: 'Number of the publish; counts up per organisation (projects included).' },
    projectId: { type: ['string', 'null'], description: 'The project the override is for; `null` for the organisation\'s policy.' },
    publishedBy: { type: ['string', 'null'], description: 'The person who published it (`null` once they are deleted).' },
    publishedAt: timestampSchema,
    valid: {
      type: 'boolean',
      description: 'Whether the document passes today\'s schema; one that does not is skipped and the last valid one before it applies.',
    },
    document: { type: 'object', description: 'The published document (`{}` when the stored text is unreadable).', additionalProperties: true },
  },
  additionalProperties: false,
} as const);

export const policyRevisionListSchema = named('PolicyRevisionList', {
  type: 'object',
  description: 'Stored publishes, newest first.',
  required: ['revisions', 'nextCursor'],
  properties: {
    revisions: { type: 'array', description: 'The publishes, newest first.', items: policyRevisionSchema },
    nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
  },
  additionalProperties: false,
  examples: [
    {
      revisions: [
        { number: 3, projectId: null, publishedBy: EXAMPLE.personId, publishedAt: '2026-11-03T16:40:12.905Z', valid: true, document: EXAMPLE_POLICY },
        { number: 1, projectId: null, publishedBy: EXAMPLE.personId, publishedAt: '2026-11-02T09:31:44.210Z', valid: true, document: DEFAULT_POLICY },
      ],
      nextCursor: null,
    },
  ],
} as const);

export const projectIdSchema = { type: 'string', minLength: 1, maxLength: 40, description: 'Project id (`prj_…`).' } as const;
