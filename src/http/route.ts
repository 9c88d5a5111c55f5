import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { inRequestScope, type RequestFacts } from '../util/request-scope.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { FromSchema } from 'json-schema-to-ts';
import { match, type MatchFunction } from 'path-to-regexp';
import { abilityOf, type Action, type SubjectType } from '../../policies/index.js';
import type { Principal, TokenKind } from '../auth/principal.js';
import type { Deployment } from '../config.js';
import type { OrganisationRecord } from '../domain/organisation.js';
import { isErrorCode, type ErrorCode } from '../error-codes.js';
import { ApiError, forbidden, invalidRequest, methodNotAllowed, payloadTooLarge, unsupportedMediaType } from '../errors.js';
import { sendJson, sendSerialisedJson } from './errors.js';
import { inSequence } from './edge.js';
import { boundedBody, type JsonLimits } from './json-bounds.js';
import type { RateLimitRule } from './rate-limit.js';
import { compile, describeError, errorBodySchema, type Schema } from './schema.js';

/**
 * A route is declared once: method, path, who may call it, its schemas and its handler. The
 * declaration validates requests, builds the OpenAPI document and lets tests check answers.
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  /** JSON answer schema; omitted for empty answers (204, 304, 302). Error answers (4xx, 5xx)
   * have the error body unless a schema is given (which must then carry `error`). */
  schema?: Schema;
  headers?: Record<string, { description: string; schema: Schema }>;
  /** A stream of JSON lines instead of one JSON body: its media type and the schema each line matches (the answer checks leave it to the route's own tests). */
  lines?: { mediaType: string; schema: Schema };
}

/** Error codes by status: `{ 404: ['not_found'], 409: ['conflict'] }`. */
export type ErrorDeclaration = Readonly<Partial<Record<number, readonly ErrorCode[]>>>;

export interface HeaderSpec {
  description: string;
  required?: boolean;
  schema: Schema;
}

export interface RouteSchemas {
  params?: Schema;
  query?: Schema;
  body?: Schema;
}

type Typed<S, K extends keyof RouteSchemas> = S extends { [key in K]: infer X }
  ? X extends Schema
    ? FromSchema<X>
    : never
  : undefined;

/** Who may call a route: token kinds, or 'public'. */
export type RouteAuth = readonly TokenKind[] | 'public';

/**
 * The principal a route's handler receives: none on a public route, one that exists on a route
 * that authenticates (the chain refuses with 401 before the handler otherwise), and perhaps none
 * where a token is optional (`authOptional`).
 */
export type PrincipalOf<A extends RouteAuth, O extends true | undefined> = A extends 'public' ? undefined : O extends true ? Principal | undefined : Principal;

/** An action on a subject type of the rules in policies/ (policies/subjects.ts). */
export type Permission = readonly [Action, SubjectType];

/**
 * What a route requires of its caller, declared on every route (a reviewer reads them all in
 * `npm run abilities`; test/http/route-permissions.test.ts fails for a route without one):
 * - `'public'`: no token (the route's `auth` is 'public'): sign-in, discovery, health, the
 *   device-code flow's own endpoints; whatever they check is their protocol's.
 * - `[action, subject]`: the request chain asks the caller's ability (policies/, the rules of the
 *   principal as authentication found it) whether it may `action` on any `subject` at all, after
 *   authentication and validation and before the handler: refused, 403 `forbidden`. The handler
 *   then asks about the record it loads (this project, this member: policies/authorize.ts) where
 *   the rules have conditions.
 * - `{ record: [action, subject], why }`: the rules need what the token does not carry (the
 *   caller's project roles, their role in the team the path names, the addresses their sign-in
 *   methods vouch for), so only the handler or service can ask, about the loaded record, with
 *   the answer the route gives (a project the caller may not see is 404). `why` says so.
 * - `{ authenticated: why }`: any token the route accepts may call it, and no rule of policies/
 *   applies (one's own account or session, a device's own uploads or channel). `why` says why.
 */
export type RoutePermission = 'public' | Permission | { readonly record: Permission; readonly why: string } | { readonly authenticated: string };

export interface HandlerInput<S extends RouteSchemas, P extends Principal | undefined = Principal | undefined> {
  params: Typed<S, 'params'>;
  query: Typed<S, 'query'>;
  body: Typed<S, 'body'>;
  /** The organisation the request is for; set when the route is a tenant route. */
  tenant: OrganisationRecord | undefined;
  /** Who calls: always there on a route that authenticates (see PrincipalOf). */
  principal: P;
  req: Request;
  res: Response;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** `body` already serialised (JSON, UTF-8), for answers built once and sent many times; the
   * answer checks of the tests still read `body`'s declared schema from the text sent. */
  serialised?: Buffer;
}

/** Where a route sits in the request path; see docs/contributing/architecture.md "The request path". */
export interface RouteDefinition<S extends RouteSchemas = RouteSchemas, A extends RouteAuth = RouteAuth, O extends true | undefined = true | undefined> {
  method: HttpMethod;
  /** OpenAPI-style path: `/projects/v1/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Not in the spec: an extension this service adds (marked `x-platform-extension`). */
  extension?: boolean;
  /** Exists only on the hosted deployment; 404 on self-hosted. */
  cloudOnly?: boolean;
  /** Resolve the organisation before anything else (self-hosted: from the host name). */
  tenant: boolean;
  /** Token kinds accepted, or 'public'. */
  auth: A;
  /** What the caller must be allowed (see RoutePermission): 'public' exactly when `auth` is. */
  permission: A extends 'public' ? 'public' : Exclude<RoutePermission, 'public'>;
  /**
   * A request without an `Authorization` header passes authentication with no principal (the
   * handler decides what that allows); one that sends a token must send an accepted, valid one
   * (401 otherwise). The token endpoint uses it: a link flow's code is exchanged with the
   * session's access token, any other code without one.
   */
  authOptional?: O;
  /**
   * `false`: the handler never reads or writes the database. The route then answers 503
   * `unavailable` for a database outage only where the edge reads it on the way (the tenant by
   * host name on self-hosted, an access token's record). Every other route answers it (the edge
   * maps the drivers' connection errors, src/db/errors.ts).
   */
  database?: false;
  /** The scope a device token must carry to call this route (spec 5; see devices/scopes.ts). */
  deviceScope?: string;
  /** Limits by network address (checked first) and by person (checked after authentication). */
  rateLimits?: readonly RateLimitRule[];
  /** A body limit of its own (bytes) instead of JSON_BODY_LIMIT. Either way the declared length
   * is checked before anything else and the body is read only after rate limits, tenancy and
   * authentication, so a refused request or a stranger's large upload costs almost nothing. */
  bodyLimitBytes?: number;
  /** Depth, key and string limits of its JSON body instead of the configured ones (JSON_MAX_*),
   * tighter or, for a route whose bodies are legitimately large (ingest), looser. */
  jsonLimits?: Partial<JsonLimits>;
  /** The handler may refuse with 403 `forbidden` (the caller's role): shorthand for
   * `errors: { 403: ['forbidden'] }`. */
  forbids?: boolean;
  /**
   * The error codes the handler (and the services it calls) answer, by status. The edge's own
   * refusals (bad Host or body, unknown tenant, no token, missing scope, rate limits, …) are added
   * by `errorCodesOf` from the rest of the declaration: name only what this route itself adds.
   * Each code must be in ERROR_CODES (error-codes.ts) and reached by some test (the suite checks).
   * A status listed in `responses` at 400 or above must be named here too.
   */
  errors?: ErrorDeclaration;
  /**
   * Error answers in a protocol's own shape instead of the API's error body, with the protocol's
   * own codes (the MCP endpoint's JSON-RPC error responses, `error.code`), by status. Listed in
   * the OpenAPI document beside the API's codes, checked in tests and reached like `errors`.
   */
  protocolErrors?: ProtocolErrors;
  /**
   * A method the path does not serve, declared only so that the OpenAPI document says what it
   * answers (the MCP endpoint's GET and DELETE, spec 4.8): never mounted, so the registry's last
   * layer answers it, 405 `method_not_allowed` with `Allow` naming the methods the path serves.
   * Its handler is never called. Build it with `refusedMethod`.
   */
  refused?: true;
  /** Runs on the parsed body before schema validation, for refusals that must come first. */
  precheck?: (body: unknown) => void;
  /** Media types accepted for a body; JSON unless stated. */
  mediaTypes?: readonly string[];
  /** The handler reads the body itself: `req.body` is the raw bytes (a Buffer, within the body
   * limit, decompressed), never parsed or schema-checked here. `schema` documents it. For
   * protocols whose errors about the body have a shape of their own (JSON-RPC on MCP). */
  rawBody?: { schema: Schema };
  headers?: Record<string, HeaderSpec>;
  schemas: S;
  /** Answers: every success status with its schema; error statuses only to describe them better
   * (their codes go in `errors`). */
  responses: Record<number, ResponseSpec>;
  handler: (input: HandlerInput<S, PrincipalOf<A, O>>) => Promise<Reply | undefined> | Reply | undefined;
}

export interface ProtocolErrors {
  /** The protocol's error body (it carries the code as `error.code`). */
  schema: Schema;
  /** The protocol's error codes each status answers with. */
  codes: Readonly<Partial<Record<number, readonly number[]>>>;
}

export function defineRoute<const S extends RouteSchemas, const A extends RouteAuth, O extends true | undefined = undefined>(route: RouteDefinition<S, A, O>): RouteDefinition {
  return route;
}

/** The question the request chain asks of the caller's ability, when the route declares one. */
export function chainPermission(route: RouteDefinition): Permission | undefined {
  return Array.isArray(route.permission) ? (route.permission as Permission) : undefined;
}

/** Refuses a permission that does not fit the route's authentication. */
function checkPermission(route: RouteDefinition): void {
  const permission = route.permission as RoutePermission | undefined;
  if (permission === undefined) throw new Error(`${route.operationId} declares no permission (public, [action, subject], { record, why } or { authenticated })`);
  if ((permission === 'public') !== (route.auth === 'public')) {
    throw new Error(`${route.operationId}: permission 'public' goes with auth 'public', and only with it`);
  }
  // The chain asks the principal's ability: there must be one.
  if (chainPermission(route) && route.authOptional) throw new Error(`${route.operationId} may be called without a token: the chain has no ability to ask`);
  if (permission !== 'public' && !chainPermission(route)) {
    const { why, authenticated } = permission as { why?: unknown; authenticated?: unknown };
    const reason = 'record' in permission ? why : authenticated;
    if (typeof reason !== 'string' || !reason.trim()) throw new Error(`${route.operationId}: say why the chain does not check the permission`);
  }
}

/** A method `path` does not serve, declared so that the OpenAPI document says it answers 405. */
export function refusedMethod(route: {
  method: HttpMethod;
  path: string;
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  extension?: boolean;
  /** The path's parameters, for the document: every `{name}` of a path is declared (the route is never mounted, so never validates them). */
  params?: Schema;
}): RouteDefinition {
  const { params, ...rest } = route;
  return {
    ...rest,
    refused: true,
    tenant: false,
    database: false,
    auth: 'public',
    permission: 'public',
    schemas: params ? { params } : {},
    responses: { 405: { description: 'Not served: `Allow` names the methods the path serves.' } },
    handler: () => {
      throw new Error(`${route.operationId} is never mounted`);
    },
  };
}

/**
 * The code an error answer carries, as the answer checks and the suite's coverage read it: the API
 * error body's `error` (text), or a protocol error's `error.code` (a number, `-32600`).
 */
export function answerCode(body: unknown): string | number | undefined {
  const error = (body as { error?: unknown } | null | undefined)?.error;
  if (typeof error === 'string') return error;
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
}

/** The protocol error codes the route answers, by status, written as text (`-32600`). */
export function protocolCodesOf(route: RouteDefinition): Map<number, string[]> {
  return new Map(
    Object.entries(route.protocolErrors?.codes ?? {})
      .map(([status, codes]) => [Number(status), (codes ?? []).map(String)] as [number, string[]])
      .filter(([, codes]) => codes.length > 0)
      .sort(([a], [b]) => a - b),
  );
}

/**
 * What a running deployment serves, as far as the routes' answers depend on it: the OpenAPI
 * document, the mounted routes and the error codes each can answer follow from it.
 */
export interface DeploymentProfile {
  deployment: Deployment;
  /** Token kinds a resolver of this deployment accepts. */
  tokenKinds: readonly TokenKind[];
  /** RATE_LIMITS_ENABLED. */
  rateLimits: boolean;
  /** REDIS_URL is set: rate-limit counters and the DPoP replay cache may be unreachable (503). */
  redis: boolean;
  /** DPOP_REQUIRE_NONCE. */
  dpopNonces: boolean;
}

/** Every feature on: what a deployment of this kind can answer at most. */
export function fullProfile(deployment: Deployment, tokenKinds: readonly TokenKind[]): DeploymentProfile {
  return { deployment, tokenKinds, rateLimits: true, redis: true, dpopNonces: true };
}

/** The token kinds of the route that this deployment accepts. */
export function acceptedKinds(route: RouteDefinition, profile: DeploymentProfile): TokenKind[] {
  return route.auth === 'public' ? [] : route.auth.filter((kind) => profile.tokenKinds.includes(kind));
}

/**
 * Whether the deployment serves the route at all: not a Cloud-only route on self-hosted, and not a
 * route that only token kinds this deployment does not accept could call (it would answer 401 to
 * everyone: it does not exist here, and the OpenAPI document does not list it).
 */
export function servedOn(route: RouteDefinition, profile: DeploymentProfile): boolean {
  if (route.cloudOnly && profile.deployment !== 'cloud') return false;
  return route.auth === 'public' || acceptedKinds(route, profile).length > 0;
}

/** Whether a request to the route reads the database on this deployment: the edge's reads or the handler's. */
export function readsDatabase(route: RouteDefinition, profile: DeploymentProfile): boolean {
  return route.database !== false || acceptedKinds(route, profile).length > 0 || (route.tenant && profile.deployment === 'self-hosted');
}

/**
 * Every error code the route can answer on this deployment, by status: the route's own
 * (`errors`, `forbids`) and the edge's, derived from the declaration. The OpenAPI document, the
 * answer checks of the tests and the suite's coverage check all read this one function.
 */
export function errorCodesOf(route: RouteDefinition, profile: DeploymentProfile): Map<number, ErrorCode[]> {
  // Nothing of a refused method's declaration runs: the origin edge (a malformed Host), then 405.
  if (route.refused) return new Map([[400, ['invalid_request']], [405, ['method_not_allowed']]]);
  const codes = new Map<number, Set<ErrorCode>>();
  const add = (status: number, ...names: ErrorCode[]) => {
    const set = codes.get(status) ?? new Set<ErrorCode>();
    for (const name of names) set.add(name);
    codes.set(status, set);
  };
  // Every request: the origin (Host), path parameters and body are read, sizes and types checked;
  // a JSON body is bounded in depth, keys and string length (json-bounds.ts).
  add(400, 'invalid_request');
  if (route.schemas.body) add(400, 'json_too_complex');
  add(413, 'payload_too_large');
  add(415, 'unsupported_media_type');
  if (route.tenant && profile.deployment === 'self-hosted') add(404, 'unknown_tenant');
  const kinds = acceptedKinds(route, profile);
  if (kinds.length) add(401, 'unauthorized');
  if (kinds.includes('device')) {
    // A key-bound device token needs a proof; its replay cache lives in Redis when configured.
    add(401, 'invalid_dpop_proof');
    if (profile.dpopNonces) add(401, 'use_dpop_nonce');
    if (route.deviceScope) add(403, 'insufficient_scope');
    if (profile.redis) add(503, 'unavailable');
  }
  // A Cloud session acts for the organisation `X-Platform-Organisation` names: one the person does
  // not belong to (or none such) is 404, whatever the route.
  if (kinds.includes('cloud-session')) add(404, 'not_found');
  if (route.forbids) add(403, 'forbidden');
  if (route.rateLimits?.length && profile.rateLimits) {
    add(429, ...route.rateLimits.map((rule) => rule.code ?? 'too_many_requests'));
    if (profile.redis) add(503, 'unavailable');
  }
  // A database outage: every route that touches it answers 503 `unavailable` (Retry-After).
  if (readsDatabase(route, profile)) add(503, 'unavailable');
  for (const [status, names] of Object.entries(route.errors ?? {})) {
    const list = names as readonly ErrorCode[];
    // A DPoP nonce is only ever asked for when nonces are required.
    add(Number(status), ...list.filter((name) => name !== 'use_dpop_nonce' || profile.dpopNonces));
  }
  return new Map([...codes].filter(([, set]) => set.size > 0).sort(([a], [b]) => a - b).map(([status, set]) => [status, [...set].sort()]));
}

/** Refuses a declaration the OpenAPI document and the answer checks could not describe truthfully. */
function checkErrors(route: RouteDefinition): void {
  for (const [status, names] of Object.entries(route.errors ?? {})) {
    const code = Number(status);
    if (!Number.isInteger(code) || code < 400 || code > 599) throw new Error(`${route.operationId} declares errors for status ${status}`);
    for (const name of names as readonly string[]) {
      if (!isErrorCode(name)) throw new Error(`${route.operationId} declares the error code ${name}, which ERROR_CODES (src/http/error-codes.ts) does not list`);
    }
  }
  // An error status described in `responses` must carry some code: the route's own or the edge's
  // (on some deployment, every feature on).
  const kinds: TokenKind[] = ['person', 'device', 'cloud-session', 'run-credential'];
  const possible = new Set<number>();
  for (const deployment of ['self-hosted', 'cloud'] as const) for (const status of errorCodesOf(route, fullProfile(deployment, kinds)).keys()) possible.add(status);
  for (const status of protocolCodesOf(route).keys()) possible.add(status);
  for (const status of Object.keys(route.responses).map(Number)) {
    if (status >= 400 && !possible.has(status)) {
      throw new Error(`${route.operationId} describes a ${status} answer without naming its codes in errors`);
    }
  }
}

/** The middleware the registry puts in front of a route's handler, supplied by the app. */
export interface RouteLayers {
  rateLimit: (rule: RateLimitRule) => RequestHandler;
  /** Body parsers for a route (by its media types), with its limit. */
  bodyParsers: (route: RouteDefinition, limitBytes: number) => RequestHandler[];
  /** JSON_BODY_LIMIT: the limit of routes that set none of their own. */
  defaultBodyLimitBytes: number;
  /** JSON_MAX_DEPTH, JSON_MAX_KEYS, JSON_MAX_STRING_LENGTH: for routes that declare none of their own. */
  defaultJsonLimits: JsonLimits;
  tenancy: RequestHandler;
  authenticate: (route: RouteDefinition) => RequestHandler;
  /**
   * First in front of every route that reads the database (`readsDatabase`): refuses with 503
   * `unavailable` while the schema is older than this build (migrations pending).
   */
  schemaGate?: RequestHandler;
}

const DEFAULT_MEDIA_TYPES = ['application/json'] as const;

/** A parameterless path's handlers, by method (upper case), as `mount` dispatches them. */
interface FixedPath {
  handlers: Map<string, RequestHandler>;
  /** `req.route` of its requests: the template (metrics). */
  route: { readonly path: string };
  /** `Allow` of its 405. */
  allowed: string[];
}

/** No character past U+007F (a request path's characters are all below U+0100). */
const NON_ASCII = /[\u0080-\uffff]/;

/** What Express's path matching ignores (case; one trailing slash), for the map of parameterless paths. */
function fixedPathKey(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}

function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function declaredLengthAtMost(limitBytes: number): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    next(declared > limitBytes ? payloadTooLarge(limitBytes) : undefined);
  };
}

function validator(where: 'params' | 'query' | 'body', schema: Schema | undefined) {
  if (!schema) return undefined;
  const validate: ValidateFunction = compile(schema, where === 'body' ? 'body' : 'text');
  return (value: unknown): unknown => {
    const target = value === undefined && where !== 'body' ? {} : value;
    if (!validate(target)) {
      const { field, message } = describeError(where, validate.errors?.[0]);
      throw invalidRequest(message, { field });
    }
    // ajv coerces `1e999` in a query or path to Infinity and lets it pass `integer` and `maximum`;
    // nothing downstream (a SQL LIMIT, a date) can use it.
    if (where !== 'body') {
      for (const [name, coerced] of Object.entries(target as Record<string, unknown>)) {
        if (typeof coerced === 'number' && !Number.isFinite(coerced)) throw invalidRequest(`${where}.${name} must be a finite number`, { field: `${where}.${name}` });
      }
    }
    return target;
  };
}

export class RouteRegistry {
  readonly routes: RouteDefinition[] = [];
  private matchers: { method: HttpMethod; match: MatchFunction<object>; route: RouteDefinition }[] = [];
  /** The deployment the routes were mounted for; until then every declared route counts. */
  private profile: DeploymentProfile | undefined;

  add(...routes: RouteDefinition[]): void {
    for (const route of routes) {
      if (this.routes.some((r) => r.operationId === route.operationId)) {
        throw new Error(`operationId ${route.operationId} is declared twice`);
      }
      // Every device token carries scopes: a route devices may call says which one it needs.
      if (route.auth !== 'public' && route.auth.includes('device') && !route.deviceScope) {
        throw new Error(`${route.operationId} accepts device tokens but names no deviceScope`);
      }
      checkErrors(route);
      checkPermission(route);
      this.routes.push(route);
      this.matchers.push({ method: route.method, match: match(expressPath(route.path), { decode: false }), route });
    }
  }

  private served(route: RouteDefinition): boolean {
    return this.profile === undefined || servedOn(route, this.profile);
  }

  /** Served and mounted: a refused method is declared, not served. */
  private mounted(route: RouteDefinition): boolean {
    return !route.refused && this.served(route);
  }

  /** The declared route answering `method path` (HEAD is answered by GET; a refused method's
   * declaration answers 405), for answer checks in tests. */
  find(method: string, path: string): RouteDefinition | undefined {
    const pathname = path.split('?')[0] ?? path;
    const lower = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    return this.matchers.find((m) => m.method === lower && this.served(m.route) && m.match(pathname) !== false)?.route;
  }

  /**
   * The methods served at a path (`Allow`), GET bringing HEAD with it (Express answers HEAD with
   * the GET route, without the body); empty when no served route has this path.
   */
  allowedMethods(path: string): string[] {
    const methods = new Set<string>();
    for (const m of this.matchers) if (this.mounted(m.route) && m.match(path) !== false) methods.add(m.method.toUpperCase());
    if (methods.has('GET')) methods.add('HEAD');
    return ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => methods.has(method));
  }

  /**
   * Mount every route this deployment serves on the router, each behind the layers it declares,
   * then one last layer: a path some route serves, asked with a method none serves, is 405
   * `method_not_allowed` with `Allow` (OPTIONS included: only the CORS layer answers a preflight,
   * before the routes, and only from an origin CORS_ALLOWED_ORIGINS lists);
   * anything else falls through to 404.
   */
  mount(router: Router, layers: RouteLayers, profile: DeploymentProfile): RequestHandler {
    this.profile = profile;
    // A path without parameters that no parameterised route also matches (any method) is found by
    // one map look-up, before the router, instead of a walk past every route before it (a
    // workbench polls `GET /policy/v1` all day); the router holds the parameterised routes.
    const parameterised = this.matchers.filter((m) => this.mounted(m.route) && m.route.path.includes('{'));
    const fixed = new Map<string, FixedPath>();
    const fixedPath = (route: RouteDefinition): FixedPath | undefined => {
      if (route.path.includes('{') || parameterised.some((m) => m.match(route.path) !== false)) return undefined;
      const key = fixedPathKey(route.path);
      let entry = fixed.get(key);
      if (!entry) fixed.set(key, (entry = { handlers: new Map(), route: Object.freeze({ path: route.path }), allowed: [] }));
      return entry;
    };
    for (const route of this.routes) {
      if (!this.mounted(route)) continue;
      const chain: RequestHandler[] = [];
      const limits = route.rateLimits ?? [];
      const bodyLimit = route.bodyLimitBytes ?? layers.defaultBodyLimitBytes;
      if (layers.schemaGate && readsDatabase(route, profile)) chain.push(layers.schemaGate);
      chain.push(declaredLengthAtMost(bodyLimit));
      for (const rule of limits.filter((r) => r.by === 'address')) chain.push(layers.rateLimit(rule));
      if (route.tenant) chain.push(layers.tenancy);
      if (route.auth !== 'public') chain.push(layers.authenticate(route));
      for (const rule of limits.filter((r) => r.by !== 'address')) chain.push(layers.rateLimit(rule));
      // A request with neither Content-Length nor Transfer-Encoding (most GETs) has no body
      // (RFC 9112 6.3) and skips the parsers, which would only find that out (body-parser's own
      // test); one with `Content-Length: 0` still goes through them, as before.
      for (const parser of layers.bodyParsers(route, bodyLimit)) {
        chain.push((req, res, next) => (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined ? next() : parser(req, res, next)));
      }
      // Before the precheck, validation and anything else that may recurse into the body. (A route
      // that takes no body refuses one whatever it holds.)
      if (route.schemas.body) chain.push(boundedBody({ ...layers.defaultJsonLimits, ...route.jsonLimits }));
      chain.push(this.handle(route));
      const entry = fixedPath(route);
      if (entry) entry.handlers.set(route.method.toUpperCase(), inSequence(chain));
      else router[route.method](expressPath(route.path), inSequence(chain));
    }
    for (const [key, entry] of fixed) entry.allowed = this.allowedMethods(key);
    router.use((req: Request, _res: Response, next: NextFunction) => {
      const allowed = this.allowedMethods(req.path);
      next(allowed.length ? methodNotAllowed(allowed) : undefined);
    });
    // Matched as Express matches a literal path: ASCII letters in any case, one trailing slash
    // or none (a non-ASCII character never matches an ASCII one in Express's case-insensitive
    // pattern, so such a path goes on to the router, where nothing matches it either).
    return (req: Request, res: Response, next: NextFunction) => {
      const path = req.path;
      const entry = fixed.get(fixedPathKey(path));
      if (entry === undefined || NON_ASCII.test(path)) {
        next();
        return;
      }
      // HEAD is answered by GET (Node sends no body), as Express's routes do.
      const handler = entry.handlers.get(req.method) ?? (req.method === 'HEAD' ? entry.handlers.get('GET') : undefined);
      if (!handler) {
        next(methodNotAllowed(entry.allowed));
        return;
      }
      // What Express's router sets: the route that answers (metrics label it by its template)
      // and the path's parameters (none).
      (req as { route?: unknown }).route = entry.route;
      req.params = {};
      handler(req, res, next);
    };
  }

  private handle(route: RouteDefinition): RequestHandler {
    const params = validator('params', route.schemas.params);
    const query = validator('query', route.schemas.query);
    const body = validator('body', route.schemas.body);
    const mediaTypes = route.mediaTypes ?? DEFAULT_MEDIA_TYPES;
    const authenticates = route.auth !== 'public' && !route.authOptional;
    const permission = chainPermission(route);
    return async (req: Request, res: Response, next: NextFunction) => {
      try {
        if (hasBody(req) && !req.is(mediaTypes as string[])) throw unsupportedMediaType(mediaTypes);
        if (!route.rawBody && !route.schemas.body && hasBody(req) && req.body !== undefined && Object.keys(req.body as object).length > 0) {
          throw invalidRequest('this operation takes no request body');
        }
        if (route.precheck && !route.rawBody && req.body !== undefined) route.precheck(req.body);
        const input = {
          params: params ? params({ ...req.params }) : undefined,
          query: query ? query({ ...(req.query as object) }) : undefined,
          body: body ? body(req.body) : undefined,
          tenant: req.context.tenant,
          principal: req.context.principal,
          req,
          res,
        } as HandlerInput<RouteSchemas>;
        // Authentication ran before (its layer answers 401 without a principal); never call a
        // handler that was promised one without it.
        if (authenticates && input.principal === undefined) throw new Error(`${route.operationId}: no principal after authentication`);
        // The route's permission, after validation (a malformed request is 400 whoever sends it,
        // as before) and before the handler: the caller's ability must allow the action on the
        // subject type at all. Records are the handler's to ask about (policies/authorize.ts).
        if (permission && !(input.principal && abilityOf(input.principal).can(permission[0], permission[1]))) throw forbidden();
        // The request's facts an audit row keeps (src/util/request-scope.ts), for whatever the handler changes.
        const reply = await inRequestScope(requestFacts(req), () => route.handler(input));
        if (!reply || res.headersSent) return;
        if (reply.headers) res.set(reply.headers);
        if (reply.serialised !== undefined) sendSerialisedJson(res, reply.status, reply.serialised);
        else if (reply.body === undefined) res.status(reply.status).end();
        else sendJson(res, reply.status, reply.body);
      } catch (error) {
        next(error);
      }
    };
  }
}

/**
 * The schema an answer must match, or null when the route does not declare that answer: the
 * declared success schema; for an error status, the error body (or the route's own schema) when
 * `code` is among the codes the route can answer with that status on this deployment (a number:
 * a protocol error's code, `protocolErrors`). A 500 `internal_error` is declared for every
 * operation (the OpenAPI `default` answer).
 */
export function answerSchema(
  route: RouteDefinition | undefined,
  status: number,
  code?: unknown,
  profile?: DeploymentProfile,
): Schema | undefined | null {
  if (status >= 400 && (status === 500 ? code === 'internal_error' : !route)) return errorBodySchema;
  if (!route) return null;
  if (status < 400) return status in route.responses ? route.responses[status]!.schema : null;
  if (typeof code === 'number') return protocolCodesOf(route).get(status)?.includes(String(code)) ? route.protocolErrors!.schema : null;
  const codes = profile ? errorCodesOf(route, profile).get(status) : undefined;
  if (!codes || !codes.includes(code as ErrorCode)) return null;
  return route.responses[status]?.schema ?? errorBodySchema;
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}

/** What an audit row keeps of a request: its id, the address the trusted proxy settings give, its user agent. */
export function requestFacts(req: Request): RequestFacts {
  const agent = req.headers['user-agent'];
  return { requestId: req.context.requestId, sourceAddress: req.ip ?? null, userAgent: typeof agent === 'string' && agent.length > 0 ? agent : null };
}
