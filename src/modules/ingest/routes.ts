import { EXAMPLE } from '../../http/examples.js';
import { abilityOf, authorize } from '../../../policies/index.js';
import type { Principal } from '../../auth/principal.js';
import { ApiError, invalidRequest } from '../../errors.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named, timestampSchema } from '../../http/schema.js';
import type { IngestReader, ReadFilters } from './read.js';
import { ingestAnswerSchema, ingestEnvelopeSchema, TASK_STATUSES } from './schemas.js';
import type { IngestService } from './service.js';

export interface IngestLimits {
  maxBytes: number;
  maxItems: number;
  /** INGEST_MAX_KEYS: an envelope legitimately holds thousands of items of several keys each. */
  maxJsonKeys: number;
  /** INGEST_MAX_STRING_LENGTH: an agent's answer or a command's output may be long. */
  maxStringLength: number;
  /** INGEST_REDACTION_BUDGET_MS, for the description. */
  redactionBudgetMs: number;
  /** INGEST_RATE_LIMIT_PER_MINUTE: uploads a minute per device. */
  perDevicePerMinute: number;
}

/** The counter of ingest uploads, per device (all its workspaces together). */
export const ingestRateLimit = (perMinute: number): RateLimitRule => ({ name: 'ingest-device', by: 'device', limit: perMinute, windowMs: 60_000 });

/** Checked before the envelope's items are validated, so the first refusal is the clearest. */
function precheckEnvelope(body: unknown, limits: IngestLimits): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidRequest('the body must be an ingest envelope object', { field: 'body' });
  const envelope = body as Record<string, unknown>;
  if (envelope.schemaVersion !== undefined && envelope.schemaVersion !== 1) {
    // Named only when it is a plain number: the value may be anything, nested to any depth.
    const shown = typeof envelope.schemaVersion === 'number' ? ` ${envelope.schemaVersion}` : '';
    throw new ApiError(400, 'unsupported_schema_version', `schemaVersion${shown} is not supported; this service accepts schemaVersion 1`, {
      extra: { field: 'body.schemaVersion', supported: [1] },
    });
  }
  let items = 0;
  for (const list of ['events', 'usage', 'audit', 'tasks']) {
    const value = envelope[list];
    if (Array.isArray(value)) items += value.length;
  }
  if (items > limits.maxItems) {
    throw new ApiError(413, 'payload_too_large', `the envelope holds ${items} items; at most ${limits.maxItems} are accepted in one upload`, {
      extra: { maxItems: limits.maxItems },
    });
  }
}

const filtersQuery = (kindDescription: string) =>
  ({
    type: 'object',
    properties: {
      projectId: { type: 'string', maxLength: 40, description: 'Only this project.' },
      workspaceId: { type: 'string', maxLength: 200, description: 'Only this workspace.' },
      kind: { type: 'string', maxLength: 100, description: kindDescription },
      since: { ...timestampSchema, description: 'From this time on (inclusive).' },
      until: { ...timestampSchema, description: 'Before this time (exclusive).' },
      limit: { type: 'integer', minimum: 1, maximum: 500, default: 100, description: 'Page size (1 to 500, default 100).' },
      cursor: { type: 'string', maxLength: 100, description: '`nextCursor` of the previous page.' },
    },
    additionalProperties: false,
  }) as const;

const pageOf = (name: string, item: object, description: string, example: object) =>
  named(name, {
    type: 'object',
    description,
    required: ['items', 'nextCursor'],
    properties: {
      items: { type: 'array', items: item, description: 'Newest first.' },
      nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
    },
    additionalProperties: false,
    examples: [{ items: [example], nextCursor: null }],
  });

const STORED_EXAMPLE = { projectId: EXAMPLE.projectId, workspaceId: EXAMPLE.workspaceId, deviceId: EXAMPLE.deviceId };
const RECEIVED_AT = '2026-11-03T10:15:30.412Z';

const stored = {
  projectId: { type: 'string', description: 'Project.' },
  workspaceId: { type: 'string', description: 'Workspace.' },
  deviceId: { type: 'string', description: 'The device that uploaded it.' },
} as const;

const storedEventSchema = {
  type: 'object',
  description: 'A stored event.',
  required: ['projectId', 'workspaceId', 'deviceId', 'seq', 'id', 'at', 'kind', 'data', 'receivedAt'],
  properties: {
    ...stored,
    seq: { type: 'integer', description: "The workbench's sequence number." },
    id: { type: 'string', description: "The workbench's id of the event." },
    at: { type: 'string', description: 'When it happened.' },
    kind: { type: 'string', description: 'What happened.' },
    data: { type: 'object', description: 'Details, redacted on receipt.' },
    receivedAt: { type: 'string', description: 'When the service stored it.' },
  },
  additionalProperties: false,
} as const;

const storedAuditSchema = {
  type: 'object',
  description: 'A stored audit record.',
  required: ['projectId', 'workspaceId', 'deviceId', 'id', 'at', 'actor', 'action', 'receivedAt'],
  properties: {
    ...stored,
    id: { type: 'string', description: "The workbench's id of the record." },
    at: { type: 'string', description: 'When it happened.' },
    actor: { type: 'string', description: 'Who acted.' },
    action: { type: 'string', description: 'What was done.' },
    target: { type: 'string', description: 'What it was done to (absent for memory reads).' },
    label: { type: 'string', description: 'Short label.' },
    details: { type: 'object', description: 'Details, redacted on receipt (absent for memory reads).' },
    receivedAt: { type: 'string', description: 'When the service stored it.' },
  },
  additionalProperties: false,
} as const;

const storedTaskSchema = {
  type: 'object',
  description: 'A task, as last reported.',
  required: ['projectId', 'workspaceId', 'deviceId', 'id', 'title', 'status', 'createdAt', 'updatedAt'],
  properties: {
    ...stored,
    id: { type: 'string', description: "The workbench's id of the task." },
    title: { type: 'string', description: 'Title.' },
    status: { type: 'string', enum: [...TASK_STATUSES], description: 'Status.' },
    createdAt: { type: 'string', description: 'Created.' },
    updatedAt: { type: 'string', description: 'Last changed.' },
    completedAt: { type: 'string', description: 'Completed, failed or cancelled.' },
  },
  additionalProperties: false,
} as const;

const usageSummarySchema = named('UsageSummary', {
  type: 'object',
  description: 'Usage by UTC day, provider and model, oldest day first.',
  required: ['rows'],
  properties: {
    rows: {
      type: 'array',
      description: 'One row per day, provider and model.',
      items: {
        type: 'object',
        description: 'Totals of one day, provider and model.',
        required: ['day', 'provider', 'model', 'requests', 'inputTokens', 'outputTokens', 'cachedTokens', 'cost'],
        properties: {
          day: { type: 'string', description: 'UTC day, `YYYY-MM-DD`.' },
          provider: { type: 'string', description: 'Provider.' },
          model: { type: 'string', description: 'Model.' },
          requests: { type: 'integer', description: 'Usage items.' },
          inputTokens: { type: 'integer', description: 'Input tokens.' },
          outputTokens: { type: 'integer', description: 'Output tokens.' },
          cachedTokens: { type: 'integer', description: 'Cached input tokens.' },
          cost: { type: 'number', description: 'Cost in US dollars.' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
  examples: [
    {
      rows: [
        { day: '2026-11-02', provider: 'anthropic', model: 'claude-sonnet-4-5', requests: 214, inputTokens: 3120455, outputTokens: 188210, cachedTokens: 2650000, cost: 4.812345 },
        { day: '2026-11-03', provider: 'openai', model: 'gpt-5', requests: 37, inputTokens: 402118, outputTokens: 30512, cachedTokens: 120000, cost: 0.913 },
      ],
    },
  ],
} as const);

function requireAdmin(principal: Principal, organisationId: string): void {
  const actor = principal;
  authorize(abilityOf(actor), 'read', 'Activity', { organisationId });
}

const eventPageSchema = pageOf('IngestedEventPage', storedEventSchema, 'A page of stored events.', {
  ...STORED_EXAMPLE,
  seq: 43,
  id: 'evt-0043',
  at: '2026-11-03T10:14:09.877Z',
  kind: 'tool.called',
  data: { tool: 'bash', command: 'npm test', exitCode: 0 },
  receivedAt: RECEIVED_AT,
});
const auditPageSchema = pageOf('IngestedAuditPage', storedAuditSchema, 'A page of stored audit records.', {
  ...STORED_EXAMPLE,
  id: 'aud-0078',
  at: '2026-11-03T10:14:08.003Z',
  actor: 'claude-code',
  action: 'file.write',
  target: 'src/checkout/retry.ts',
  receivedAt: RECEIVED_AT,
});
const taskPageSchema = pageOf('IngestedTaskPage', storedTaskSchema, 'A page of tasks.', {
  ...STORED_EXAMPLE,
  id: 'task-17',
  title: 'Retry failed card payments once',
  status: 'in_progress',
  createdAt: '2026-11-03T10:13:40.000Z',
  updatedAt: '2026-11-03T10:14:09.877Z',
});

export function ingestRoutes(service: IngestService, reader: IngestReader, limits: IngestLimits): RouteDefinition[] {
  const consoleRoute = {
    tenant: true,
    auth: ['person', 'cloud-session'] as const,
    permission: ['read', 'Activity'] as const,
    forbids: true,
    extension: true,
    tag: 'Ingest',
  };
  const lists = [
    { name: 'events', operationId: 'listIngestedEvents', summary: "The organisation's events (owners and admins)", kind: 'Only this event kind.', schema: eventPageSchema, read: (id: string, f: ReadFilters) => reader.events(id, f) },
    { name: 'audit', operationId: 'listIngestedAudit', summary: "The organisation's audit records (owners and admins)", kind: 'Only this action.', schema: auditPageSchema, read: (id: string, f: ReadFilters) => reader.audit(id, f) },
    { name: 'tasks', operationId: 'listIngestedTasks', summary: "The organisation's tasks (owners and admins)", kind: 'Only this status.', schema: taskPageSchema, read: (id: string, f: ReadFilters) => reader.tasks(id, f) },
  ];
  return [
    defineRoute({
      method: 'post',
      path: '/ingest/v1',
      operationId: 'ingest',
      permission: { authenticated: 'a device uploads what its own workbench recorded (the ingest:write scope); no rule of policies/ reads uploads' },
      summary: 'Upload events, usage, audit records and tasks',
      description:
        'Stored in one transaction, all or nothing. Items are identified (events by `seq` per device and workspace; usage, audit and tasks by `id` per device), so a retry stores nothing twice and answers zero counts with the same cursors. ' +
        'Credentials in event `data` and audit `details`/`label` are replaced by `[REDACTED:<kind>]` before storage; a memory read (by the rule of the project\'s effective policy, `audit.memoryReads`) keeps only its label. ' +
        `Refusals: 400 \`invalid_request\` naming the list and index of a bad item (nothing is stored), 400 \`unsupported_schema_version\`, 400 \`json_too_complex\` (nesting deeper than JSON_MAX_DEPTH, more than INGEST_MAX_KEYS keys and items, or a string longer than INGEST_MAX_STRING_LENGTH), 404 \`not_found\` (project not in your organisation), 413 (body over INGEST_MAX_BYTES, more than INGEST_MAX_ITEMS items, or redaction would take longer than INGEST_REDACTION_BUDGET_MS, ${limits.redactionBudgetMs} ms of work), 429 (more than INGEST_RATE_LIMIT_PER_MINUTE uploads a minute from this device, ${limits.perDevicePerMinute}; \`Retry-After\`).`,
      tag: 'Ingest',
      tenant: true,
      auth: ['device'],
      deviceScope: 'ingest:write',
      rateLimits: [ingestRateLimit(limits.perDevicePerMinute)],
      bodyLimitBytes: limits.maxBytes,
      jsonLimits: { maxKeys: limits.maxJsonKeys, maxStringLength: limits.maxStringLength },
      precheck: (body) => precheckEnvelope(body, limits),
      schemas: { body: ingestEnvelopeSchema },
      responses: { 200: { description: 'What was newly stored and the cursors to resume from.', schema: ingestAnswerSchema } },
      errors: { 400: ['unsupported_schema_version'], 404: ['not_found'] },
      handler: async ({ body, principal }) => {
        const device = principal;
        const answer = await service.ingest({ organisationId: device.organisationId, deviceId: device.deviceId as string }, body);
        return { status: 200, body: answer, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    ...lists.map((list) =>
      defineRoute({
        ...consoleRoute,
        method: 'get',
        path: `/platform/v1/ingest/${list.name}`,
        operationId: list.operationId,
        summary: list.summary,
        description: `What workbenches uploaded (\`POST /ingest/v1\`), newest first, filtered by project, workspace, ${list.name === 'tasks' ? 'status' : 'kind'} and time; \`nextCursor\` pages on. Owners and admins only.`,
        schemas: { query: filtersQuery(list.kind) },
        responses: { 200: { description: `A page of ${list.name}.`, schema: list.schema } },
        handler: async ({ query, principal, tenant }) => {
          requireAdmin(principal, tenant!.id);
          return { status: 200, body: await list.read(tenant!.id, { ...query, limit: query.limit ?? 100 }) };
        },
      }),
    ),
    defineRoute({
      ...consoleRoute,
      method: 'get',
      path: '/platform/v1/ingest/usage/summary',
      operationId: 'summariseIngestedUsage',
      summary: "The organisation's model usage by day and model (owners and admins)",
      description: 'Sums of the usage items workbenches uploaded, one row per UTC day, provider and model, oldest day first. Owners and admins only.',
      schemas: {
        query: {
          type: 'object',
          properties: {
            projectId: { type: 'string', maxLength: 40, description: 'Only this project.' },
            since: { ...timestampSchema, description: 'From this time on (inclusive).' },
            until: { ...timestampSchema, description: 'Before this time (exclusive).' },
          },
          additionalProperties: false,
        },
      },
      responses: { 200: { description: 'Usage totals.', schema: usageSummarySchema } },
      handler: async ({ query, principal, tenant }) => {
        requireAdmin(principal, tenant!.id);
        return { status: 200, body: { rows: await reader.usageSummary(tenant!.id, query) } };
      },
    }),
  ];
}

