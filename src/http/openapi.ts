import type { TokenKind } from '../auth/principal.js';
import type { RouteDefinition, RouteRegistry } from './route.js';
import { errorBodySchema, namedSchemas, schemaName, type Schema } from './schema.js';

/**
 * Builds the OpenAPI 3.1.0 document from the route declarations: the same schemas that
 * validate requests describe them here. Built once per app and served as is.
 */

export const API_VERSION = '0.2.0';

/** Security schemes, one per token kind of spec section 5. */
const SECURITY_SCHEMES = {
  deviceToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'platform_at_',
    description: 'Device access token (`Authorization: Bearer platform_at_…`). Refused when the token is bound to a key.',
  },
  deviceDpop: {
    type: 'http',
    scheme: 'DPoP',
    description:
      'Key-bound device access token (`Authorization: DPoP platform_at_…`) with a fresh `DPoP` proof header on every request (RFC 9449; ES256 or EdDSA).',
  },
  personToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "Self-hosted: an access token (JWT) from the organisation's OpenID Connect provider, requested with `auth.clientId` and `auth.apiScope` from discovery. Its issuer selects the organisation.",
  },
  cloudSession: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'platform_sa_',
    description:
      "Cloud: a person's access token (`platform_sa_…`, 15 minutes) from `POST /auth/v1/token`. `X-Platform-Organisation: <organisation id>` names the " +
      'organisation a request acts for (without it: the personal organisation); membership is checked on every request, and an organisation the ' +
      'person does not belong to is 404 `not_found`.',
  },
  runCredential: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'platform_cr_',
    description: "A cloud agent run's credential; accepted only on that run's MCP endpoint.",
  },
} as const;

const SCHEMES_BY_KIND: Record<TokenKind, readonly (keyof typeof SECURITY_SCHEMES)[]> = {
  device: ['deviceToken', 'deviceDpop'],
  person: ['personToken'],
  'cloud-session': ['cloudSession'],
  'run-credential': ['runCredential'],
};

const STATUS_TEXT: Record<number, string> = {
  400: 'The request did not match the schema (`invalid_request`, naming the field).',
  401: 'No valid token (`unauthorized`).',
  403: 'Signed in but not allowed: `forbidden` (the caller\'s role), or `insufficient_scope` (a device token without the scope this operation needs).',
  404: 'Not found, or not yours to see (`not_found`); `unknown_tenant` on self-hosted when no organisation is served at the host name.',
  413: 'The request body is too large (`payload_too_large`).',
  415: 'The request body is not of an accepted media type (`unsupported_media_type`).',
  429: 'Too many requests; wait, then try again.',
  503: 'A shared dependency (Redis: rate-limit counters, DPoP replay cache) did not answer (`temporarily_unavailable`, with `Retry-After`); the request was refused, not let through.',
  500: 'Unexpected failure (`internal_error`); no detail is given.',
};

/** Every JSON body is bounded (src/http/json-bounds.ts) before it is validated. */
const JSON_TOO_COMPLEX_TEXT =
  'A JSON body nested too deeply, holding too many keys and items, or a string too long is refused with `json_too_complex` (naming the limit and the field); 413 remains for byte size.';

/** Replace named schemas by `$ref`s, recursively, so components are described once. */
function refs(schema: unknown, top = true): unknown {
  if (Array.isArray(schema)) return schema.map((item) => refs(item, false));
  if (schema === null || typeof schema !== 'object') return schema;
  const name = schemaName(schema);
  if (name && !top) return { $ref: `#/components/schemas/${name}` };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    // `const` and `enum` hold values, not schemas; `examples` likewise.
    out[key] = key === 'const' || key === 'enum' || key === 'examples' || key === 'default' ? value : refs(value, false);
  }
  return out;
}

function schemaRef(schema: Schema): unknown {
  return refs(schema, false);
}

function parametersOf(where: 'path' | 'query', schema: Schema | undefined): unknown[] {
  if (!schema || typeof schema !== 'object' || !('properties' in schema) || !schema.properties) return [];
  const required = new Set<string>(('required' in schema && (schema.required as string[])) || []);
  return Object.entries(schema.properties as Record<string, Schema>).map(([name, property]) => {
    const { description, ...rest } = property as Record<string, unknown>;
    return {
      name,
      in: where,
      required: where === 'path' ? true : required.has(name),
      ...(description ? { description } : {}),
      schema: refs(rest, false),
    };
  });
}

function operation(route: RouteDefinition, deployment: 'cloud' | 'self-hosted'): Record<string, unknown> {
  const parameters = [
    ...parametersOf('path', route.schemas.params),
    ...parametersOf('query', route.schemas.query),
    ...Object.entries(route.headers ?? {}).map(([name, header]) => ({
      name,
      in: 'header',
      required: header.required ?? false,
      description: header.description,
      schema: refs(header.schema, false),
    })),
  ];
  const responses: Record<string, unknown> = {};
  const statuses = new Set(Object.keys(route.responses).map(Number));
  // Every route can meet the edge's refusals; describe them with the error body.
  const general = [400, 404, 413, 415, 500];
  if (route.auth !== 'public') general.push(401);
  if (route.deviceScope || route.forbids) general.push(403);
  if (route.rateLimits?.length) general.push(429, 503);
  else if (route.auth !== 'public' && route.auth.includes('device')) general.push(503);
  for (const status of [...statuses, ...general].sort((a, b) => a - b)) {
    if (responses[String(status)]) continue;
    const declared = route.responses[status];
    if (declared) {
      const answer: Record<string, unknown> = { description: declared.description };
      if (declared.schema) answer.content = { 'application/json': { schema: schemaRef(declared.schema) } };
      if (declared.headers) {
        answer.headers = Object.fromEntries(
          Object.entries(declared.headers).map(([name, h]) => [name, { description: h.description, schema: refs(h.schema, false) }]),
        );
      }
      responses[String(status)] = answer;
    } else {
      const text = STATUS_TEXT[status] ?? 'Error.';
      responses[String(status)] = {
        description: status === 400 && route.schemas.body ? `${text} ${JSON_TOO_COMPLEX_TEXT}` : text,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
  }
  const security =
    route.auth === 'public'
      ? []
      : route.auth
          // Person tokens are the self-hosted kind, Cloud sessions the hosted one.
          .filter((kind) => (deployment === 'cloud' ? kind !== 'person' : kind !== 'cloud-session'))
          .flatMap((kind) => SCHEMES_BY_KIND[kind].map((scheme) => ({ [scheme]: [] })));
  const op: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    security,
    responses,
  };
  if (route.description) op.description = route.description;
  if (parameters.length) op.parameters = parameters;
  if (route.schemas.body) {
    op.requestBody = {
      required: true,
      content: Object.fromEntries((route.mediaTypes ?? ['application/json']).map((type) => [type, { schema: schemaRef(route.schemas.body as Schema) }])),
    };
  }
  if (route.extension) op['x-platform-extension'] = true;
  if (route.cloudOnly) op['x-platform-cloud-only'] = true;
  return op;
}

export function buildOpenApi(registry: RouteRegistry, options: { deployment: 'cloud' | 'self-hosted'; baseUrl?: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  for (const route of registry.routes) {
    if (route.cloudOnly && options.deployment !== 'cloud') continue;
    tags.add(route.tag);
    (paths[route.path] ??= {})[route.method] = operation(route, options.deployment);
  }
  const schemas: Record<string, unknown> = { Error: refs(errorBodySchema, true) };
  for (const [name, schema] of namedSchemas()) schemas[name] = refs(schema, true);
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Platform API',
      version: API_VERSION,
      description:
        'The public HTTP API of the platform: discovery, organisations, sign-in, devices, ingest, cloud agents, pictures and policy. ' +
        'Operations marked `x-platform-extension` are additions of this service beyond the published contract; ' +
        'operations marked `x-platform-cloud-only` exist only on the hosted deployment.',
    },
    servers: [{ url: options.baseUrl ?? '/', description: options.deployment === 'cloud' ? 'Cloud' : "The organisation's host" }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: { schemas, securitySchemes: SECURITY_SCHEMES },
  };
}
