import { ApiError } from '../../errors.js';
import { absoluteUrl } from '../../http/origin.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import {
  MAX_TASK_LENGTH,
  endedRunSchema,
  isTaskTextField,
  registeredRunSchema,
  registerRunSchema,
  runEventsAnswerSchema,
  runEventsSchema,
  runIdParams,
} from './schemas.js';
import type { CloudAgentService, RunEvent, RunRegistration } from './service.js';

/**
 * Refused before the schema, with a code of its own: task text in an event (spec 6). Fields are
 * recognised by name (`task`, `prompt`, `text`, `instructions`, …, any case and separators); any
 * other unknown field is refused by the schema as `invalid_request`.
 */
export function refuseTaskText(body: unknown): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const fields = (where: string, value: unknown) => {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
    for (const name of Object.keys(value)) {
      if (isTaskTextField(name)) {
        throw new ApiError(400, 'task_text_not_allowed', `${where}.${name}: run events never carry task text`, { extra: { field: `${where}.${name}` } });
      }
    }
  };
  fields('body', body);
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) return;
  events.slice(0, 1000).forEach((event, index) => fields(`body.events[${index}]`, event));
}

const RUN_ROUTE = {
  tag: 'Cloud agents',
  tenant: true,
  auth: ['device'],
  deviceScope: 'cloud-agents:write',
} as const;

export function cloudAgentRoutes(runs: CloudAgentService): RouteDefinition[] {
  return [
    defineRoute({
      ...RUN_ROUTE,
      method: 'post',
      path: '/cloud-agents/v1/runs',
      operationId: 'registerCloudAgentRun',
      permission: { record: ['create', 'CloudAgentRun'], why: 'the service asks: a workbench (403 workbench_required), in a project its person holds a role in (404 otherwise), which the token does not carry' },
      summary: "Register a run sent to a provider's cloud agent",
      description:
        'A workbench registers a run before handing it to the provider. Checks, in order: a workbench, not a node (403 `workbench_required`; a node token also lacks the `cloud-agents:write` scope: 403 `insufficient_scope`); `startedBy`, when sent, is the device\'s person (403 `started_by_mismatch`); the project is the organisation\'s (404 `not_found`); the project\'s effective policy has `cloudAgents.allowed` (403 `cloud_agents_disabled`); `expiresAt`, when sent, is ahead (400 `invalid_request`); and the person has fewer than `cloudAgents.maxConcurrent` runs going, counted over all their workbenches (409 `max_concurrent_runs`). ' +
        'A run that names `workspaceId` and tools gets `mcp`: the endpoint and a `platform_cr_` credential (kept only as a hash) valid until the run ends, or at `expiresAt`: the requested one, at most four hours from now. The task is never stored.',
      schemas: { body: registerRunSchema },
      // The task may be longer than other strings (it is read to be refused when too long, never kept).
      jsonLimits: { maxStringLength: MAX_TASK_LENGTH },
      responses: {
        201: { description: 'Registered.', schema: registeredRunSchema },
        403: { description: '`insufficient_scope` (a node, or a token without `cloud-agents:write`), `workbench_required` (a node), `started_by_mismatch`, `cloud_agents_disabled`.' },
        404: { description: '`not_found`: the project is not one of the organisation\'s.' },
        409: { description: '`max_concurrent_runs`: the person already has as many runs going as the policy allows (`max` in the body).' },
      },
      errors: { 403: ['workbench_required', 'started_by_mismatch', 'cloud_agents_disabled'], 404: ['not_found'], 409: ['max_concurrent_runs'] },
      handler: async ({ body, principal, req }) => {
        // The trusted origin of the request (PLATFORM_BASE_URL, or the validated host that chose the organisation).
        const answer = await runs.register(principal, body as RunRegistration, (runId) => absoluteUrl(req, `/cloud-agents/v1/runs/${runId}/mcp`));
        return { status: 201, body: answer, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...RUN_ROUTE,
      method: 'post',
      path: '/cloud-agents/v1/runs/{runId}/events',
      operationId: 'reportCloudAgentRunEvents',
      permission: { record: ['update', 'CloudAgentRun'], why: 'only the workbench that registered the run (policies/cloud-agent.ts): the service asks about the stored run, 404 for anyone else' },
      summary: 'Report what happened to a run',
      description:
        'Only the workbench that registered the run; anyone else (another device of the organisation included) gets 404. Events carry the provider\'s task id, page, pull request and a sentence, never task text: unknown fields are 400 `invalid_request`, fields named like task text (`task`, `prompt`, `text`, `instructions`, …) 400 `task_text_not_allowed`. ' +
        'Kinds: `started`, `progress`, `pull_request_opened`, `pull_request_updated`, `completed`, `failed`, `cancelled`. An ended run takes no more events (409 `run_ended`); a run keeps at most 1000 (409 `run_event_limit`).',
      schemas: { params: runIdParams, body: runEventsSchema },
      precheck: refuseTaskText,
      responses: {
        200: { description: 'Stored.', schema: runEventsAnswerSchema },
        400: { description: 'The request does not match the schema (`invalid_request`), or an event carries task text (`task_text_not_allowed`).' },
        404: { description: '`not_found`: no such run, or not registered by this workbench.' },
        409: { description: '`run_ended`: the run has ended; `run_event_limit`: the run holds as many events as it may (`max` in the body).' },
      },
      errors: { 400: ['task_text_not_allowed'], 404: ['not_found'], 409: ['run_ended', 'run_event_limit'] },
      handler: async ({ params, body, principal }) => {
        const accepted = await runs.recordEvents(principal, params.runId, body.events as RunEvent[]);
        return { status: 200, body: { accepted }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
    defineRoute({
      ...RUN_ROUTE,
      method: 'post',
      path: '/cloud-agents/v1/runs/{runId}/end',
      operationId: 'endCloudAgentRun',
      permission: { record: ['update', 'CloudAgentRun'], why: 'only the workbench that registered the run (policies/cloud-agent.ts): the service asks about the stored run, 404 for anyone else' },
      summary: 'End a run',
      description:
        'Only the workbench that registered the run (anyone else: 404). The run credential stops working at once, on every replica. Ending again is harmless: 200 with the same answer, `endedAt` the first end. The body is an empty object `{}` (or none); anything in it is 400 `invalid_request`.',
      schemas: { params: runIdParams },
      responses: {
        200: { description: 'Ended (now or before).', schema: endedRunSchema },
        404: { description: '`not_found`: no such run, or not registered by this workbench.' },
      },
      errors: { 404: ['not_found'] },
      handler: async ({ params, principal }) => {
        return { status: 200, body: await runs.end(principal, params.runId), headers: { 'Cache-Control': 'no-store' } };
      },
    }),
  ];
}

