import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';

/**
 * The ingest envelope (spec 2.15) and the item shapes the spec leaves to us, modelled on what an
 * agent workbench records. Strict: unknown fields are refused (a new field means a new
 * `schemaVersion`), except inside the free `data` and `details` objects.
 */

/** No white space at either end: ids compare exactly, and MySQL's binary collation would still
 * ignore trailing spaces. */
const EDGE_TRIMMED = '^\\S(?:[\\s\\S]*\\S)?$';

const itemId = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: EDGE_TRIMMED,
  description: "The workbench's own id of the item (unique per device; compared exactly, case included; no white space at either end).",
} as const;

export const ingestEventSchema = named('IngestEvent', {
  type: 'object',
  description: 'Something that happened in the workbench (a session started, a tool ran, an agent answered).',
  required: ['seq', 'id', 'at', 'kind', 'data'],
  properties: {
    seq: {
      type: 'integer',
      minimum: 0,
      maximum: 9007199254740991,
      description: "The workbench's increasing sequence number of the event in this workspace; identifies the event (a second event with the same seq is a duplicate).",
    },
    id: itemId,
    at: { ...timestampSchema, description: 'When it happened (RFC 3339).' },
    kind: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '^[A-Za-z0-9_.:-]+$',
      description: 'What happened, e.g. `session.started`, `tool.called`, `agent.message`.',
    },
    data: { type: 'object', description: 'Free-form details. Credentials found here are replaced by `[REDACTED:<kind>]` before storage.' },
  },
  additionalProperties: false,
} as const);

export const ingestUsageSchema = named('IngestUsage', {
  type: 'object',
  description: 'Model usage of one request to a model provider.',
  required: ['id', 'at', 'provider', 'model', 'inputTokens', 'outputTokens', 'cachedTokens', 'cost'],
  properties: {
    id: itemId,
    at: { ...timestampSchema, description: 'When the request was made (RFC 3339).' },
    provider: { type: 'string', minLength: 1, maxLength: 100, description: 'Model provider, e.g. `anthropic`, `openai`, `local`.' },
    model: { type: 'string', minLength: 1, maxLength: 200, description: 'Model name as the provider calls it.' },
    inputTokens: { type: 'integer', minimum: 0, maximum: 1e12, description: 'Input (prompt) tokens.' },
    outputTokens: { type: 'integer', minimum: 0, maximum: 1e12, description: 'Output (completion) tokens.' },
    cachedTokens: { type: 'integer', minimum: 0, maximum: 1e12, description: 'Input tokens served from the provider cache.' },
    cost: { type: 'number', minimum: 0, maximum: 1e9, description: 'Cost in US dollars as the workbench computed it (kept to the micro-dollar).' },
  },
  additionalProperties: false,
} as const);

export const ingestAuditSchema = named('IngestAudit', {
  type: 'object',
  description:
    'An audit record: who did what to what. A memory read (`action` `memory.read`, `kb.search`, `export.memories`, …: the rule of `policies/memory-reads.ts` with the policy\'s `audit.memoryReads`) is kept by its `label` only: every content field is dropped on receipt.',
  required: ['id', 'at', 'actor', 'action'],
  properties: {
    id: itemId,
    at: { ...timestampSchema, description: 'When it happened (RFC 3339).' },
    actor: { type: 'string', minLength: 1, maxLength: 200, description: 'Who acted: a person id, an agent name, `system`.' },
    action: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      pattern: '^[A-Za-z0-9_.:-]+$',
      description: 'What was done, e.g. `file.write`, `command.run`, `memory.read`.',
    },
    target: { type: 'string', maxLength: 500, description: 'What it was done to (a path, a URL, a memory key).' },
    label: { type: 'string', maxLength: 500, description: 'A short human label of the record; kept for memory reads.' },
    details: { type: 'object', description: 'Free-form details; credentials are redacted on receipt, and dropped entirely for memory reads.' },
  },
  additionalProperties: false,
} as const);

export const TASK_STATUSES = ['pending', 'in_progress', 'blocked', 'completed', 'failed', 'cancelled'] as const;

export const ingestTaskSchema = named('IngestTask', {
  type: 'object',
  description: 'A task the workbench tracks. Sent again whenever it changes; the newest `updatedAt` wins.',
  required: ['id', 'title', 'status', 'createdAt', 'updatedAt'],
  properties: {
    id: itemId,
    title: { type: 'string', minLength: 1, maxLength: 500, description: 'Short title of the task.' },
    status: { type: 'string', enum: [...TASK_STATUSES], description: 'Where the task stands.' },
    createdAt: { ...timestampSchema, description: 'When the task was created (RFC 3339).' },
    updatedAt: { ...timestampSchema, description: 'When it last changed; a version older than the stored one is ignored.' },
    completedAt: { ...timestampSchema, description: 'When it was completed, failed or cancelled.' },
  },
  additionalProperties: false,
} as const);

const list = <const I extends object>(items: I, what: string) =>
  ({ type: 'array', items, description: `${what} since the last upload (at most INGEST_MAX_ITEMS items in all lists together).` }) as const;

export const ingestEnvelopeSchema = named('IngestEnvelope', {
  type: 'object',
  description: 'One upload of a workbench (spec 2.15). Stored in one transaction: all of it, or nothing.',
  required: ['schemaVersion', 'projectId', 'workspaceId', 'sentAt', 'cursors'],
  properties: {
    schemaVersion: { type: 'integer', const: 1, description: 'Envelope schema version; `1`.' },
    projectId: { type: 'string', minLength: 1, maxLength: 40, description: "The organisation's project the items belong to." },
    workspaceId: { type: 'string', minLength: 1, maxLength: 200, pattern: EDGE_TRIMMED, description: 'The workspace that recorded the items (compared exactly; no white space at either end).' },
    sentAt: { ...timestampSchema, description: 'When the workbench sent the envelope.' },
    cursors: {
      type: 'object',
      description: 'The cursors the workbench last received (informational; storage never depends on them).',
      required: ['events'],
      properties: {
        events: { type: 'integer', minimum: -1, description: 'The events cursor last received (-1 before the first upload).' },
        usage: { type: 'string', maxLength: 260, description: 'The usage cursor last received.' },
        audit: { type: 'string', maxLength: 260, description: 'The audit cursor last received.' },
      },
      additionalProperties: false,
    },
    events: list(ingestEventSchema, 'Events'),
    usage: list(ingestUsageSchema, 'Usage items'),
    audit: list(ingestAuditSchema, 'Audit records'),
    tasks: list(ingestTaskSchema, 'Tasks'),
  },
  additionalProperties: false,
  examples: [
    {
      schemaVersion: 1,
      projectId: EXAMPLE.projectId,
      workspaceId: EXAMPLE.workspaceId,
      sentAt: '2026-11-03T10:15:30.000Z',
      cursors: { events: 41, usage: '2026-11-03T10:02:11.000Z|use-0190', audit: '2026-11-03T10:01:58.000Z|aud-0077' },
      events: [
        { seq: 42, id: 'evt-0042', at: '2026-11-03T10:14:02.120Z', kind: 'session.started', data: { agent: 'claude-code', branch: 'feature/checkout-retry' } },
        { seq: 43, id: 'evt-0043', at: '2026-11-03T10:14:09.877Z', kind: 'tool.called', data: { tool: 'bash', command: 'npm test', exitCode: 0 } },
      ],
      usage: [{ id: 'use-0191', at: '2026-11-03T10:14:09.500Z', provider: 'anthropic', model: 'claude-sonnet-4-5', inputTokens: 18230, outputTokens: 912, cachedTokens: 16000, cost: 0.0213 }],
      audit: [{ id: 'aud-0078', at: '2026-11-03T10:14:08.003Z', actor: 'claude-code', action: 'file.write', target: 'src/checkout/retry.ts' }],
      tasks: [{ id: 'task-17', title: 'Retry failed card payments once', status: 'in_progress', createdAt: '2026-11-03T10:13:40.000Z', updatedAt: '2026-11-03T10:14:09.877Z' }],
    },
  ],
} as const);

export const ingestAnswerSchema = named('IngestAnswer', {
  type: 'object',
  description: 'What was newly stored, and the cursors to resume from.',
  required: ['accepted', 'cursors'],
  properties: {
    accepted: {
      type: 'object',
      description: 'Counts of items newly stored (0 for an item already held; a task counts when it was new or newer).',
      required: ['events', 'usage', 'audit', 'tasks'],
      properties: {
        events: { type: 'integer', minimum: 0, description: 'Events newly stored.' },
        usage: { type: 'integer', minimum: 0, description: 'Usage items newly stored.' },
        audit: { type: 'integer', minimum: 0, description: 'Audit records newly stored.' },
        tasks: { type: 'integer', minimum: 0, description: 'Tasks newly stored or updated.' },
      },
      additionalProperties: false,
    },
    cursors: {
      type: 'object',
      description: 'Where the stream stands; never moves backwards.',
      required: ['events', 'usage', 'audit'],
      properties: {
        events: { type: 'integer', minimum: -1, description: 'The highest event `seq` the service holds for this device and workspace (-1: none yet).' },
        usage: { type: 'string', description: '`<at>|<id>` of the newest usage item held (by time, then id); empty before the first.' },
        audit: { type: 'string', description: '`<at>|<id>` of the newest audit record held; empty before the first.' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
  examples: [
    {
      accepted: { events: 2, usage: 1, audit: 1, tasks: 1 },
      cursors: { events: 43, usage: '2026-11-03T10:14:09.500Z|use-0191', audit: '2026-11-03T10:14:08.003Z|aud-0078' },
    },
  ],
} as const);
