import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { FromSchema } from 'json-schema-to-ts';
import { match, type MatchFunction } from 'path-to-regexp';
import type { Principal, TokenKind } from '../auth/principal.js';
import type { OrganisationRecord } from '../modules/organisation/entities.js';
import { ApiError, invalidRequest, payloadTooLarge, unsupportedMediaType } from './errors.js';
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
  /** JSON answer schema; omitted for empty answers (204, 304, 302). */
  schema?: Schema;
  headers?: Record<string, { description: string; schema: Schema }>;
}

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

export interface HandlerInput<S extends RouteSchemas> {
  params: Typed<S, 'params'>;
  query: Typed<S, 'query'>;
  body: Typed<S, 'body'>;
  /** The organisation the request is for; set when the route is a tenant route. */
  tenant: OrganisationRecord | undefined;
  principal: Principal | undefined;
  req: Request;
  res: Response;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Where a route sits in the request path; see DESIGN.md "The way a request travels". */
export interface RouteDefinition<S extends RouteSchemas = RouteSchemas> {
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
  auth: readonly TokenKind[] | 'public';
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
  /** The handler may refuse with 403 `forbidden` (the caller's role); documented, not enforced here. */
  forbids?: boolean;
  /** Runs on the parsed body before schema validation, for refusals that must come first. */
  precheck?: (body: unknown) => void;
  /** Media types accepted for a body; JSON unless stated. */
  mediaTypes?: readonly string[];
  headers?: Record<string, HeaderSpec>;
  schemas: S;
  responses: Record<number, ResponseSpec>;
  handler: (input: HandlerInput<S>) => Promise<Reply | undefined> | Reply | undefined;
}

export function defineRoute<const S extends RouteSchemas>(route: RouteDefinition<S>): RouteDefinition {
  return route as unknown as RouteDefinition;
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
}

const DEFAULT_MEDIA_TYPES = ['application/json'] as const;

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
    return target;
  };
}

export class RouteRegistry {
  readonly routes: RouteDefinition[] = [];
  private matchers: { method: HttpMethod; match: MatchFunction<object>; route: RouteDefinition }[] = [];

  add(...routes: RouteDefinition[]): void {
    for (const route of routes) {
      if (this.routes.some((r) => r.operationId === route.operationId)) {
        throw new Error(`operationId ${route.operationId} is declared twice`);
      }
      // Every device token carries scopes: a route devices may call says which one it needs.
      if (route.auth !== 'public' && route.auth.includes('device') && !route.deviceScope) {
        throw new Error(`${route.operationId} accepts device tokens but names no deviceScope`);
      }
      this.routes.push(route);
      this.matchers.push({ method: route.method, match: match(expressPath(route.path)), route });
    }
  }

  /** The declared route answering `method path`, for answer checks in tests. */
  find(method: string, path: string): RouteDefinition | undefined {
    const pathname = path.split('?')[0] ?? path;
    const lower = method.toLowerCase();
    return this.matchers.find((m) => m.method === lower && m.match(pathname) !== false)?.route;
  }

  /** Mount every route on the router, each behind the layers it declares. */
  mount(router: Router, layers: RouteLayers, deployment: 'cloud' | 'self-hosted'): void {
    for (const route of this.routes) {
      if (route.cloudOnly && deployment !== 'cloud') continue;
      const chain: RequestHandler[] = [];
      const limits = route.rateLimits ?? [];
      const bodyLimit = route.bodyLimitBytes ?? layers.defaultBodyLimitBytes;
      chain.push(declaredLengthAtMost(bodyLimit));
      for (const rule of limits.filter((r) => r.by === 'address')) chain.push(layers.rateLimit(rule));
      if (route.tenant) chain.push(layers.tenancy);
      if (route.auth !== 'public') chain.push(layers.authenticate(route));
      for (const rule of limits.filter((r) => r.by === 'person')) chain.push(layers.rateLimit(rule));
      chain.push(...layers.bodyParsers(route, bodyLimit));
      // Before the precheck, validation and anything else that may recurse into the body. (A route
      // that takes no body refuses one whatever it holds.)
      if (route.schemas.body) chain.push(boundedBody({ ...layers.defaultJsonLimits, ...route.jsonLimits }));
      chain.push(this.handle(route));
      router[route.method](expressPath(route.path), ...chain);
    }
  }

  private handle(route: RouteDefinition): RequestHandler {
    const params = validator('params', route.schemas.params);
    const query = validator('query', route.schemas.query);
    const body = validator('body', route.schemas.body);
    const mediaTypes = route.mediaTypes ?? DEFAULT_MEDIA_TYPES;
    return async (req: Request, res: Response, next: NextFunction) => {
      try {
        if (hasBody(req) && !req.is(mediaTypes as string[])) throw unsupportedMediaType(mediaTypes);
        if (!route.schemas.body && hasBody(req) && req.body !== undefined && Object.keys(req.body as object).length > 0) {
          throw invalidRequest('this operation takes no request body');
        }
        if (route.precheck && req.body !== undefined) route.precheck(req.body);
        const input = {
          params: params ? params({ ...req.params }) : undefined,
          query: query ? query({ ...(req.query as object) }) : undefined,
          body: body ? body(req.body) : undefined,
          tenant: req.context.tenant,
          principal: req.context.principal,
          req,
          res,
        } as HandlerInput<RouteSchemas>;
        const reply = await route.handler(input);
        if (!reply || res.headersSent) return;
        if (reply.headers) res.set(reply.headers);
        if (reply.body === undefined) res.status(reply.status).end();
        else res.status(reply.status).json(reply.body);
      } catch (error) {
        next(error);
      }
    };
  }
}

/** The schema an answer must match: the declared one, or the error body for errors. */
export function answerSchema(route: RouteDefinition | undefined, status: number): Schema | undefined | null {
  if (!route) return status >= 400 ? errorBodySchema : null;
  const declared = route.responses[status];
  if (declared) return declared.schema;
  if (status >= 400) return errorBodySchema;
  return null;
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}
