import { EXAMPLE } from '../../http/examples.js';
import { named, timestampSchema } from '../../http/schema.js';
import { MAX_SENTENCE_LENGTH, MAX_URL_LENGTH } from './entities.js';

/** Printable text on one line: no control characters (new lines included). */
const ONE_LINE = '^[^\\u0000-\\u001f\\u007f]*$';
const NAME = '^[^\\u0000-\\u001f\\u007f\\s](?:[^\\u0000-\\u001f\\u007f]*[^\\u0000-\\u001f\\u007f\\s])?$';

const idText = (description: string, maxLength: number) => ({ type: 'string', minLength: 1, maxLength, pattern: NAME, description }) as const;

/** The kinds of run event (spec 6 shows `started`; the rest are ours). */
export const RUN_EVENT_KINDS = ['started', 'progress', 'pull_request_opened', 'pull_request_updated', 'completed', 'failed', 'cancelled'] as const;

/** Most events in one report, and kept per run. */
export const MAX_EVENTS_PER_REQUEST = 100;
export const MAX_EVENTS_PER_RUN = 1000;
export const MAX_TOOLS = 100;
/** The task is read to be refused when too long, never stored. */
export const MAX_TASK_LENGTH = 100_000;

const httpUrl = (description: string) =>
  ({ type: 'string', format: 'uri', pattern: '^https?://', maxLength: MAX_URL_LENGTH, description }) as const;

export const registerRunSchema = named('CloudAgentRunRegistration', {
  type: 'object',
  description:
    'A run a desktop workbench sends to a provider\'s cloud agent. `provider` and `projectId` are required. Naming `workspaceId` and at least one tool gets the run an MCP endpoint and credential. `task` is checked and dropped: the service never stores or logs it.',
  required: ['provider', 'projectId'],
  properties: {
    provider: idText("The provider whose cloud agent runs the task (e.g. its product's name).", 100),
    team: idText("The provider-side team the run belongs to.", 200),
    member: idText('The provider-side member who runs it.', 200),
    task: { type: 'string', maxLength: MAX_TASK_LENGTH, description: 'The task sent to the agent. Read, never stored or logged.' },
    tools: {
      type: 'array',
      maxItems: MAX_TOOLS,
      uniqueItems: true,
      items: idText('A tool name.', 128),
      description: 'Names of the workbench tools the agent may call through the MCP endpoint (at least one, with `workspaceId`, for an endpoint).',
    },
    expiresAt: { ...timestampSchema, description: 'When the run credential should stop working; at most four hours from now (later is cut to four hours), and in the future.' },
    workspaceId: idText('The workbench workspace the run works in.', 200),
    projectId: idText("The project (an id of the organisation's projects).", 40),
    startedBy: idText("The person who started the run: when sent, it must be the device's person.", 40),
  },
  additionalProperties: false,
  examples: [
    {
      provider: 'codex',
      projectId: EXAMPLE.projectId,
      workspaceId: EXAMPLE.workspaceId,
      team: 'acme',
      member: 'ana',
      task: 'Retry failed card payments once before showing the error.',
      tools: ['tasks.create', 'tasks.read'],
    },
  ],
} as const);

export const registeredRunSchema = named('CloudAgentRun', {
  type: 'object',
  description: 'A registered run.',
  required: ['runId', 'expiresAt'],
  properties: {
    runId: { type: 'string', description: 'The run (`run_…`).' },
    expiresAt: { type: 'string', description: 'When the run stops counting as running unless ended before: the credential\'s expiry.' },
    mcp: {
      type: 'object',
      description: 'Present when the run names a workspace and tools: what to hand to the cloud agent.',
      required: ['url', 'token', 'expiresAt'],
      properties: {
        url: { type: 'string', format: 'uri', description: "The run's MCP endpoint (Streamable HTTP, JSON answers)." },
        token: { type: 'string', description: 'The run credential, `platform_cr_…`, sent as `Authorization: Bearer`. Shown once; only its hash is kept.' },
        expiresAt: { type: 'string', description: 'When the credential stops working (it stops at once when the run ends).' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
  examples: [
    {
      runId: EXAMPLE.runId,
      expiresAt: '2026-11-03T14:15:30.000Z',
      mcp: {
        url: `https://api.platform.example/cloud-agents/v1/runs/${EXAMPLE.runId}/mcp`,
        token: 'platform_cr_Ty5uI9oP3aS7dF1gH6jK0lZ4xC8vB2nM6qW0eR4tY8u',
        expiresAt: '2026-11-03T14:15:30.000Z',
      },
    },
  ],
} as const);

export const runEventSchema = named('CloudAgentRunEvent', {
  type: 'object',
  description: 'What happened to a run at the provider. Never task text: unknown fields are refused, and fields named like task text (`task`, `prompt`, `text`, …) with `task_text_not_allowed`.',
  required: ['at', 'kind'],
  properties: {
    at: { ...timestampSchema, description: 'When it happened, in the years 1000 to 9999 (UTC): what a stored timestamp holds.' },
    kind: { type: 'string', enum: [...RUN_EVENT_KINDS], description: 'What happened.' },
    providerTaskId: idText("The provider's id of the task.", 200),
    pageUrl: httpUrl("The task's page at the provider."),
    pullRequestUrl: httpUrl('The pull request the agent opened or updated.'),
    sentence: { type: 'string', minLength: 1, maxLength: MAX_SENTENCE_LENGTH, pattern: ONE_LINE, description: `One sentence about it (at most ${MAX_SENTENCE_LENGTH} characters, one line).` },
  },
  additionalProperties: false,
} as const);

export const runEventsSchema = {
  type: 'object',
  description: `Events of the run (1 to ${MAX_EVENTS_PER_REQUEST} a request, ${MAX_EVENTS_PER_RUN} a run).`,
  required: ['events'],
  properties: {
    events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST, items: runEventSchema, description: 'The events, oldest first.' },
  },
  additionalProperties: false,
  examples: [
    {
      events: [
        { at: '2026-11-03T10:16:02.000Z', kind: 'started', providerTaskId: 'task-42', pageUrl: 'https://agents.example/tasks/42' },
        { at: '2026-11-03T10:31:47.000Z', kind: 'pull_request_opened', pullRequestUrl: 'https://git.example/acme/checkout/pull/318', sentence: 'Opened a pull request with the retry and its tests.' },
      ],
    },
  ],
} as const;

export const runEventsAnswerSchema = {
  type: 'object',
  description: 'Events stored.',
  required: ['accepted'],
  properties: { accepted: { type: 'integer', description: 'How many events were stored (all that were sent).' } },
  additionalProperties: false,
  examples: [{ accepted: 2 }],
} as const;

export const endedRunSchema = named('CloudAgentRunEnded', {
  type: 'object',
  description: 'The run has ended; the same answer every time it is ended again.',
  required: ['runId', 'endedAt'],
  properties: {
    runId: { type: 'string', description: 'The run.' },
    endedAt: { type: 'string', description: 'When it was first ended.' },
  },
  additionalProperties: false,
  examples: [{ runId: EXAMPLE.runId, endedAt: '2026-11-03T10:42:05.311Z' }],
} as const);

export const runIdParams = {
  type: 'object',
  required: ['runId'],
  properties: { runId: { type: 'string', minLength: 1, maxLength: 40, pattern: '^[A-Za-z0-9_]+$', description: 'The run.' } },
  additionalProperties: false,
} as const;

/** Field names that mean task text; an event carrying one is refused by name, with its own code. */
const TASK_TEXT_FIELDS = new Set(['task', 'tasktext', 'prompt', 'text', 'instruction', 'instructions', 'description', 'content', 'body', 'message', 'input', 'query']);

export function isTaskTextField(name: string): boolean {
  return TASK_TEXT_FIELDS.has(name.toLowerCase().replace(/[^a-z]/g, ''));
}
