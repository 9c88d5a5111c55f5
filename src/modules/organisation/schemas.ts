import { EXAMPLE } from '../../http/examples.js';
import { named } from '../../http/schema.js';

export const platformOrganisationSchema = named('PlatformOrganisation', {
  type: 'object',
  description: "The caller's organisation and its edition (spec 2.3; edition rule of section 1).",
  required: ['id', 'name', 'kind', 'plan', 'edition'],
  properties: {
    id: { type: 'string', description: 'Organisation id (`org_…`).' },
    name: { type: 'string', description: 'Organisation name.' },
    kind: { type: 'string', enum: ['personal', 'team', 'enterprise'], description: '`personal` is a person\'s own organisation; `team` a Cloud team; `enterprise` a self-hosted organisation.' },
    plan: { type: 'string', enum: ['free', 'teams', 'enterprise'], description: 'Plan of the organisation.' },
    edition: {
      type: 'string',
      enum: ['enterprise', 'teams', 'free'],
      description: 'Enterprise organisation: `enterprise`; Cloud team: `teams`; personal Cloud organisation: `free`.',
    },
    role: {
      type: 'string',
      enum: ['owner', 'admin', 'member'],
      description: "The calling person's role (absent when a device calls).",
    },
  },
  additionalProperties: false,
  examples: [{ id: EXAMPLE.organisationId, name: 'Acme', kind: 'enterprise', plan: 'enterprise', edition: 'enterprise', role: 'owner' }],
} as const);

/** Spec 2.4: an organisation as a person sees it among theirs (`GET /cloud/v1/me`, teams). */
export const organisationSummarySchema = named('OrganisationSummary', {
  type: 'object',
  description: 'An organisation the caller belongs to (spec 2.4).',
  required: ['id', 'name', 'kind', 'plan', 'role'],
  properties: {
    id: { type: 'string', description: 'Organisation id (`org_…`), the value of `X-Platform-Organisation`.' },
    name: { type: 'string', description: 'Organisation name.' },
    kind: { type: 'string', enum: ['personal', 'team', 'enterprise'], description: '`personal`: the person\'s own organisation; `team`: a Cloud team.' },
    plan: { type: 'string', enum: ['free', 'teams', 'enterprise'], description: 'Plan of the organisation.' },
    role: { type: 'string', enum: ['owner', 'admin', 'member'], description: "The caller's role." },
  },
  additionalProperties: false,
  examples: [{ id: EXAMPLE.teamId, name: 'Checkout team', kind: 'team', plan: 'teams', role: 'owner' }],
} as const);

export function organisationSummary(entry: { organisation: { id: string; name: string; kind: string; plan: string }; role: string }) {
  return { id: entry.organisation.id, name: entry.organisation.name, kind: entry.organisation.kind, plan: entry.organisation.plan, role: entry.role };
}
