import type { Request } from 'express';
import { abilityOf, authorize } from '../../../policies/index.js';
import type { Principal } from '../../auth/principal.js';
import { ApiError, notFound } from '../../errors.js';
import { jsonBoundsViolation, type JsonLimits } from '../../http/json-bounds.js';
import { requestOrigin, serviceOrigin } from '../../http/origin.js';
import { defineRoute, refusedMethod, type Reply, type RouteDefinition } from '../../http/route.js';
import { named } from '../../http/schema.js';
import type { RelayHub } from '../relay/channel.js';
import { MAX_JSON_DEPTH } from '../relay/channel.js';
import type { SigningKeys } from '../relay/signing-keys.js';
import type { RelayOutcome } from '../../state/relay-routing.js';
import { runIdParams } from './schemas.js';

/**
 * A run's MCP endpoint (spec 4.8): MCP Streamable HTTP with JSON answers only, every message
 * relayed to the workbench that started the run as `cloudMcp.call`, each with an assertion the
 * service signs for the run's person (scope `tasks:write`, audience the device, a minute or so).
 *
 * - POST one JSON-RPC message or a batch (at most 100). Requests get their responses (one
 *   object, or an array for a batch) with Content-Type application/json; a post of only
 *   notifications and responses gets 202 once relayed (spec 4.8: "a notification is answered
 *   202"), delivered or not: JSON-RPC reports no error for a notification, and a workbench that
 *   is away is not the client's fault nor the service's (no 5xx).
 * - Errors about the JSON-RPC content are JSON-RPC error responses (HTTP 400): -32700 parse
 *   error (not JSON, not UTF-8), -32600 invalid request (not a JSON-RPC 2.0 message, an empty or
 *   too large batch, nested too deep or too big). In a batch, each invalid entry gets its own
 *   -32600 and the rest go through. They are the route's `protocolErrors`.
 * - The workbench not connected, gone before answering, silent past RELAY_CALL_TIMEOUT_MS, or
 *   answering with something that is not the response: the request's JSON-RPC error -32000 (its
 *   `data.reason` says which).
 * - Refusals about the HTTP request are the API's error body, as on every route: `Accept` must
 *   allow application/json (406 `not_acceptable`: text/event-stream is never sent, and no
 *   `Mcp-Session-Id` is issued, the endpoint keeps no session: the run is the session); the body
 *   must be application/json in UTF-8 (415); a credential that is not this run's (401, or 404
 *   for another run), more than MCP_MAX_BYTES declared (413), more than MCP_REQUESTS_PER_MINUTE
 *   for the run, counted across replicas (429): the last three before the body is read.
 * - GET (no server-sent event stream) and DELETE (no session to end) are declared `refusedMethod`s:
 *   the registry answers them 405 with `Allow: POST`.
 *
 * The assertions' `iss` is the service's own origin, the one a workbench pins: it fetched the
 * discovery document, holds its control channel and reads `/.well-known/jwks.json` there. On
 * Cloud (and wherever PLATFORM_BASE_URL is set) that is PLATFORM_BASE_URL, whatever the request
 * says; self-hosted without it, the origin of the request, which the run credential's
 * organisation must be served at: the origin of the run's `mcp.url` when the agent follows it.
 */

export const MAX_BATCH = 100;
const ASSERTION_SCOPE = 'tasks:write';
/** Explicit type of the relay assertion (RFC 8725 3.11), so no other JWT can pass for one. */
export const ASSERTION_TYPE = 'platform-relay+jwt';

type JsonRpcId = string | number;

type Classified =
  | { kind: 'request'; id: JsonRpcId; message: Record<string, unknown> }
  | { kind: 'notification' | 'response'; message: Record<string, unknown> }
  | { kind: 'invalid'; id: JsonRpcId | null; why: string };

const jsonRpcIdSchema = { type: ['string', 'integer', 'null'], description: 'The id of the request answered (null when it could not be read).' } as const;

const jsonRpcErrorResponseSchema = named('JsonRpcErrorResponse', {
  type: 'object',
  description: 'A JSON-RPC 2.0 error response.',
  required: ['jsonrpc', 'id', 'error'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0', description: 'Always `2.0`.' },
    id: jsonRpcIdSchema,
    error: {
      type: 'object',
      description: 'What went wrong: -32700 parse error, -32600 invalid request, -32000 the workbench could not be reached or did not answer in time (`data.reason`).',
      required: ['code', 'message'],
      properties: {
        code: { type: 'integer', description: 'JSON-RPC error code.' },
        message: { type: 'string', description: 'Plain-words explanation.' },
        data: { description: 'More about it (`reason`: `not_connected`, `timeout`, `disconnected`, `unavailable`, `refused`, `invalid_answer`).' },
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
} as const);

const jsonRpcMessageSchema = named('JsonRpcMessage', {
  type: 'object',
  description: 'A JSON-RPC 2.0 message (MCP): a request (`method`, `id`), a notification (`method`, no `id`) or a response (`id`, `result` or `error`).',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { type: 'string', const: '2.0', description: 'Always `2.0`.' },
    id: { type: ['string', 'integer'], description: 'Request or response id.' },
    method: { type: 'string', description: 'The method (requests and notifications).' },
    params: { type: ['object', 'array'], items: true, description: 'Its parameters: by name (an object) or by position (an array of any values).' },
    result: { description: 'A response\'s result.' },
    error: { type: 'object', description: "A response's error." },
  },
} as const);

const mcpBodySchema = {
  description: 'One JSON-RPC message, or a batch (an array of 1 to 100).',
  oneOf: [jsonRpcMessageSchema, { type: 'array', minItems: 1, maxItems: MAX_BATCH, items: jsonRpcMessageSchema, description: 'A batch.' }],
  // A notification: relayed, answered 202 whether the workbench is connected or not. A request (`id`) is answered 200 with its response.
  examples: [{ jsonrpc: '2.0', method: 'notifications/initialized' }],
} as const;

/** What the body may hold: JSON-RPC messages nest little; the 1 MB body bounds the rest. */
function messageLimits(maxBytes: number): JsonLimits {
  return { maxDepth: MAX_JSON_DEPTH, maxKeys: maxBytes, maxStringLength: maxBytes };
}

const mcpAnswerSchema = {
  description: 'The response to the request, or (for a batch) the array of responses, in the order of the requests.',
  oneOf: [{ type: 'object', description: 'A JSON-RPC response.' }, { type: 'array', items: { type: 'object', description: 'A JSON-RPC response.' }, description: 'Responses of a batch.' }],
  examples: [{ jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'tasks.read', description: 'Read the tasks of the workspace.', inputSchema: { type: 'object' } }] } }],
} as const;

function rpcError(id: JsonRpcId | null, code: number, message: string, data?: Record<string, unknown>): Record<string, unknown> {
  return { jsonrpc: '2.0', id, error: data ? { code, message, data } : { code, message } };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/** One entry as JSON-RPC 2.0 (and MCP: request ids are strings or integers, never null) reads it. */
export function classify(entry: unknown): Classified {
  if (!isPlainObject(entry)) return { kind: 'invalid', id: null, why: 'a JSON-RPC message is an object' };
  const id = isId(entry.id) ? entry.id : null;
  if (entry.jsonrpc !== '2.0') return { kind: 'invalid', id, why: 'jsonrpc must be "2.0"' };
  if ('method' in entry) {
    if (typeof entry.method !== 'string' || entry.method === '') return { kind: 'invalid', id, why: 'method must be a non-empty string' };
    if ('params' in entry && (entry.params === null || typeof entry.params !== 'object')) return { kind: 'invalid', id, why: 'params must be an object or an array' };
    if (!('id' in entry)) return { kind: 'notification', message: entry };
    if (!isId(entry.id)) return { kind: 'invalid', id: null, why: 'a request id is a string or an integer' };
    return { kind: 'request', id: entry.id, message: entry };
  }
  const hasResult = 'result' in entry;
  const hasError = 'error' in entry;
  if (hasResult === hasError) return { kind: 'invalid', id, why: 'a message has a method, or exactly one of result and error' };
  if (!('id' in entry) || (entry.id !== null && !isId(entry.id))) return { kind: 'invalid', id: null, why: 'a response id is a string, an integer or null' };
  if (hasError) {
    const error = entry.error;
    if (!isPlainObject(error) || typeof error.code !== 'number' || !Number.isInteger(error.code) || typeof error.message !== 'string') {
      return { kind: 'invalid', id, why: 'error must have an integer code and a message' };
    }
  }
  return { kind: 'response', message: entry };
}

/** The workbench's answer to a request, if it is one: a response with the same id. */
function responseTo(id: JsonRpcId, result: unknown): Record<string, unknown> | undefined {
  const answer = classify(result);
  if (answer.kind !== 'response' || !isPlainObject(result) || result.id !== id) return undefined;
  return result;
}

function failure(id: JsonRpcId | null, outcome: Exclude<RelayOutcome, { ok: true }>): Record<string, unknown> {
  const data: Record<string, unknown> = { reason: outcome.reason };
  if (outcome.reason === 'refused' && outcome.code !== undefined) data.code = outcome.code;
  const message = outcome.reason === 'refused' ? `the workbench refused the call: ${outcome.message}` : outcome.message;
  return rpcError(id, -32000, message, data);
}

const JSON_RANGES = new Set(['application/json', 'application/*', '*/*']);

/** Whether `Accept` allows JSON (absent: anything goes). q=0 excludes. */
function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [type, ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    if (!type || !JSON_RANGES.has(type)) return false;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

function charsetOf(req: Request): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(req.headers['content-type'] ?? '');
  return match?.[1]?.toLowerCase();
}

export interface McpDependencies {
  hub: RelayHub;
  keys: SigningKeys;
  /** PLATFORM_BASE_URL: the assertions' issuer where set. */
  baseUrl: string | undefined;
  maxBytes: number;
  requestsPerMinute: number;
}

export function mcpRoutes(deps: McpDependencies): RouteDefinition[] {
  const path = '/cloud-agents/v1/runs/{runId}/mcp';
  const configuredIssuer = serviceOrigin(deps.baseUrl);
  const limits = messageLimits(deps.maxBytes);

  async function relay(principal: Principal, iss: string, entry: Classified): Promise<RelayOutcome> {
    if (entry.kind === 'invalid') throw new Error('invalid entries are not relayed');
    const assertion = await deps.keys.sign(
      { iss, sub: principal.personId, aud: principal.deviceId!, scope: ASSERTION_SCOPE, run_id: principal.runId! },
      ASSERTION_TYPE,
    );
    return deps.hub.call(principal.deviceId!, { runId: principal.runId!, assertion, message: entry.message });
  }

  async function handle(req: Request, principal: Principal, runId: string): Promise<Reply> {
    const ability = abilityOf(principal);
    authorize(ability, 'relay', 'CloudAgentRun', { id: runId, organisationId: principal.organisationId }, () => notFound('no such run'));
    const iss = configuredIssuer ?? requestOrigin(req).origin;
    if (!acceptsJson(req.headers.accept)) {
      throw new ApiError(406, 'not_acceptable', 'this endpoint answers application/json only (no event streams): Accept must allow it');
    }
    const charset = charsetOf(req);
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      throw new ApiError(415, 'unsupported_media_type', "the request body's charset is not supported (utf-8)");
    }
    const raw: unknown = req.body;
    let parsed: unknown;
    try {
      if (!Buffer.isBuffer(raw) || raw.length === 0) throw new Error('empty');
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
    } catch {
      return { status: 400, body: rpcError(null, -32700, 'Parse error: the body is not UTF-8 JSON') };
    }
    // Bounded before anything recursive (classifying, signing, JSON.stringify for the socket) reads it.
    const violation = jsonBoundsViolation(parsed, limits);
    if (violation) {
      const why = violation.limit === 'depth' ? `nested deeper than ${violation.max}` : violation.limit === 'keys' ? `more than ${violation.max} keys and items` : `a string longer than ${violation.max}`;
      return { status: 400, body: rpcError(null, -32600, `Invalid Request: ${why}`) };
    }
    const batch = Array.isArray(parsed);
    const entries = batch ? (parsed as unknown[]) : [parsed];
    if (batch && entries.length === 0) return { status: 400, body: rpcError(null, -32600, 'Invalid Request: an empty batch') };
    if (entries.length > MAX_BATCH) return { status: 400, body: rpcError(null, -32600, `Invalid Request: a batch holds at most ${MAX_BATCH} messages`) };
    const classified = entries.map(classify);
    if (!batch && classified[0]!.kind === 'invalid') {
      const only = classified[0] as Extract<Classified, { kind: 'invalid' }>;
      return { status: 400, body: rpcError(only.id, -32600, `Invalid Request: ${only.why}`) };
    }
    const answers = await Promise.all(
      classified.map(async (entry): Promise<{ response?: Record<string, unknown> }> => {
        if (entry.kind === 'invalid') return { response: rpcError(entry.id, -32600, `Invalid Request: ${entry.why}`) };
        const outcome = await relay(principal, iss, entry);
        if (entry.kind !== 'request') return {};
        if (!outcome.ok) return { response: failure(entry.id, outcome) };
        const response = responseTo(entry.id, outcome.result);
        if (response) return { response };
        return { response: rpcError(entry.id, -32000, 'the workbench answered with something that is not the response to this request', { reason: 'invalid_answer' }) };
      }),
    );
    const responses = answers.flatMap((answer) => (answer.response ? [answer.response] : []));
    const headers = { 'Cache-Control': 'no-store' };
    if (responses.length) return { status: 200, body: batch ? responses : responses[0], headers };
    return { status: 202, headers };
  }

  return [
    defineRoute({
      method: 'post',
      path,
      operationId: 'callCloudAgentRunTools',
      permission: ['relay', 'CloudAgentRun'],
      summary: "The run's MCP endpoint (Streamable HTTP, JSON answers)",
      description:
        'MCP Streamable HTTP, JSON answers only, no sessions. The run credential as `Authorization: Bearer platform_cr_…` (valid until the run ends or expires; refused on every other route). ' +
        'One JSON-RPC message or a batch of up to 100; each is relayed to the workbench that started the run as `cloudMcp.call` with an assertion signed for the run\'s person (scope `tasks:write`; keys at `/.well-known/jwks.json`). ' +
        'Requests: 200 with the response (an array for a batch). Only notifications and responses: 202 once relayed, whether the workbench took them or was away (JSON-RPC reports no error for a notification). ' +
        'Errors in the JSON-RPC content: 400 with a JSON-RPC error response, -32700 (parse error) or -32600 (invalid request: not JSON-RPC 2.0, an empty or too large batch, nested deeper than 64). The workbench not connected, gone, or silent past the timeout: the request\'s JSON-RPC error -32000. ' +
        'Refusals of the HTTP request carry the API\'s error body: `Accept` must allow application/json (406 `not_acceptable`); the body must be application/json in UTF-8 (415); at most 1 MB (413, checked before reading); at most 300 requests a minute per run (429, across replicas). GET and DELETE: 405.',
      tag: 'Cloud agents',
      tenant: true,
      auth: ['run-credential'],
      rateLimits: [{ name: 'mcp-run', by: 'run', limit: deps.requestsPerMinute, windowMs: 60_000 }],
      bodyLimitBytes: deps.maxBytes,
      rawBody: { schema: mcpBodySchema },
      schemas: { params: runIdParams },
      responses: {
        200: { description: 'The response, or the responses of a batch.', schema: mcpAnswerSchema },
        202: { description: 'Only notifications and responses: relayed (taken by the workbench, or not when it is away); no body.' },
        400: { description: 'A JSON-RPC error response: -32700 (not JSON) or -32600 (not a JSON-RPC message, an empty or too large batch, nested too deep); or `invalid_request` (a malformed run id or Host).' },
        404: { description: '`not_found`: the credential is not for this run.' },
        406: { description: '`not_acceptable`: `Accept` does not allow application/json.' },
        415: { description: '`unsupported_media_type`: not application/json, or not UTF-8.' },
      },
      errors: { 404: ['not_found'], 406: ['not_acceptable'] },
      protocolErrors: { schema: jsonRpcErrorResponseSchema, codes: { 400: [-32700, -32600] } },
      handler: ({ req, params, principal }) => handle(req, principal, params.runId),
    }),
    refusedMethod({
      method: 'get',
      path,
      operationId: 'openCloudAgentRunToolStream',
      summary: "GET on a run's MCP endpoint: not served",
      description: 'The endpoint offers no server-sent event stream (JSON answers only): 405 with `Allow: POST`, which MCP clients take as "no stream".',
      tag: 'Cloud agents',
      params: runIdParams,
    }),
    refusedMethod({
      method: 'delete',
      path,
      operationId: 'endCloudAgentRunToolSession',
      summary: "DELETE on a run's MCP endpoint: not served",
      description: 'The endpoint keeps no MCP session (it issues no `Mcp-Session-Id`): 405 with `Allow: POST`. End the run with `POST …/end`.',
      tag: 'Cloud agents',
      params: runIdParams,
    }),
  ];
}

