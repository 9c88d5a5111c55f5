import type { TokenKind } from '../auth/principal.js';
import { acceptedKinds, errorCodesOf, protocolCodesOf, servedOn, type DeploymentProfile, type RouteDefinition, type RouteRegistry } from './route.js';
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

/** What an error status means, for operations that do not describe it themselves. */
const STATUS_TEXT: Record<number, string> = {
  400: 'The request did not match the schema (the `field` at fault is named), or could not be read.',
  401: 'No valid token.',
  403: 'Signed in but not allowed.',
  404: 'Not found, or not yours to see.',
  409: 'Conflict with the current state.',
  413: 'The request body is too large.',
  415: 'The request body is not of an accepted media type, charset or encoding.',
  429: 'Too many requests; wait (`Retry-After`), then try again.',
  503: 'A dependency (the database, or Redis: rate-limit counters, DPoP replay cache) did not answer; the request was refused, not let through (`Retry-After`).',
};

/** The organisation a Cloud session's request acts for: documented wherever Cloud sessions are accepted. */
const ORGANISATION_HEADER = {
  name: 'X-Platform-Organisation',
  in: 'header',
  required: false,
  description:
    "With a Cloud session: the id of the organisation the request acts for (`org_…`; without it, the person's personal organisation). " +
    'Membership is checked on every request: an organisation the person does not belong to is 404 `not_found`. Device tokens carry their organisation and ignore it.',
  schema: { type: 'string' },
} as const;

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

/**
 * An error answer: the error body, its `error` one of the codes this operation answers; and/or,
 * for a route with `protocolErrors`, the protocol's error body, its `error.code` one of those.
 */
function errorAnswer(route: RouteDefinition, status: number, codes: readonly string[], protocolCodes: readonly string[]): Record<string, unknown> {
  const declared = route.responses[status];
  const listed = [...codes.map((code) => `\`${code}\``), ...protocolCodes].join(', ');
  const general = `${STATUS_TEXT[status] ?? 'Error.'}${codes.includes('json_too_complex') ? ` ${JSON_TOO_COMPLEX_TEXT}` : ''}`;
  const schemas: unknown[] = [];
  if (codes.length) {
    // The error body, or the route's own (which carries `error`), its code one of these.
    schemas.push({
      allOf: [declared?.schema ? schemaRef(declared.schema) : { $ref: '#/components/schemas/Error' }],
      properties: { error: { type: 'string', enum: [...codes], description: 'The codes this operation answers with this status.' } },
    });
  }
  if (protocolCodes.length) {
    schemas.push({
      allOf: [schemaRef(route.protocolErrors!.schema)],
      properties: {
        error: {
          description: "The protocol's error.",
          properties: { code: { enum: protocolCodes.map(Number), description: 'The protocol error codes this operation answers with this status.' } },
        },
      },
    });
  }
  const answer: Record<string, unknown> = {
    description: `${declared?.description ?? general} Codes: ${listed}.`,
    content: { 'application/json': { schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas } } },
  };
  if (declared?.headers) answer.headers = headersOf(declared.headers);
  return answer;
}

function headersOf(headers: NonNullable<RouteDefinition['responses'][number]['headers']>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).map(([name, h]) => [name, { description: h.description, schema: refs(h.schema, false) }]));
}

/** Every `{name}` of a path is a declared path parameter: a route that forgets one fails the build of the document, not a client. */
function checkPathParameters(route: RouteDefinition, parameters: readonly unknown[]): void {
  const declared = new Set(parameters.filter((p) => (p as { in: string }).in === 'path').map((p) => (p as { name: string }).name));
  const used = [...route.path.matchAll(/\{([\w-]+)\}/g)].map((m) => m[1]!);
  const missing = used.filter((name) => !declared.has(name));
  const extra = [...declared].filter((name) => !used.includes(name));
  if (missing.length || extra.length) {
    throw new Error(`${route.method.toUpperCase()} ${route.path} (${route.operationId}): path parameters ${missing.length ? `undeclared: ${missing.join(', ')}` : ''}${extra.length ? ` not in the path: ${extra.join(', ')}` : ''}`);
  }
}

/** The names of the components `node` refers to, and those they refer to, transitively. */
function referencedComponents(node: unknown, schemas: Record<string, unknown>, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) referencedComponents(item, schemas, found);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
        const name = value.slice('#/components/schemas/'.length);
        if (!found.has(name)) {
          found.add(name);
          referencedComponents(schemas[name], schemas, found);
        }
      } else if (key !== 'examples' && key !== 'example' && key !== 'const' && key !== 'enum' && key !== 'default') referencedComponents(value, schemas, found);
    }
  }
  return found;
}

function operation(route: RouteDefinition, profile: DeploymentProfile): Record<string, unknown> {
  const parameters = [
    ...parametersOf('path', route.schemas.params),
    ...parametersOf('query', route.schemas.query),
    // The Cloud session resolver reads it on every request it resolves (src/auth/cloud-session.ts).
    ...(acceptedKinds(route, profile).includes('cloud-session') ? [ORGANISATION_HEADER] : []),
    ...Object.entries(route.headers ?? {}).map(([name, header]) => ({
      name,
      in: 'header',
      required: header.required ?? false,
      description: header.description,
      schema: refs(header.schema, false),
    })),
  ];
  checkPathParameters(route, parameters);
  const responses: Record<string, unknown> = {};
  for (const status of Object.keys(route.responses).map(Number).filter((s) => s < 400).sort((a, b) => a - b)) {
    const declared = route.responses[status]!;
    const answer: Record<string, unknown> = { description: declared.description };
    if (declared.schema) answer.content = { 'application/json': { schema: schemaRef(declared.schema) } };
    // A stream of JSON lines (NDJSON): the schema of one line.
    if (declared.lines) answer.content = { [declared.lines.mediaType]: { schema: schemaRef(declared.lines.schema) } };
    if (declared.headers) answer.headers = headersOf(declared.headers);
    responses[String(status)] = answer;
  }
  const apiCodes = errorCodesOf(route, profile);
  const protocolCodes = protocolCodesOf(route);
  for (const status of [...new Set([...apiCodes.keys(), ...protocolCodes.keys()])].sort((a, b) => a - b)) {
    responses[String(status)] = errorAnswer(route, status, apiCodes.get(status) ?? [], protocolCodes.get(status) ?? []);
  }
  // Never promised, always possible: the service is broken.
  responses.default = {
    description: 'Unexpected failure (500 `internal_error`); no detail is given. Quote the `X-Request-Id` when reporting it.',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  const security: Record<string, never[]>[] = acceptedKinds(route, profile).flatMap((kind) => SCHEMES_BY_KIND[kind].map((scheme) => ({ [scheme]: [] })));
  // An optional token: the empty requirement says the operation is also called without one.
  if (route.authOptional && security.length) security.push({});
  const op: Record<string, unknown> = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    security,
    responses,
  };
  if (route.description) op.description = route.description;
  if (parameters.length) op.parameters = parameters;
  if (route.rawBody) {
    op.requestBody = {
      required: true,
      content: Object.fromEntries((route.mediaTypes ?? ['application/json']).map((type) => [type, { schema: schemaRef(route.rawBody!.schema) }])),
    };
  } else if (route.schemas.body) {
    op.requestBody = {
      required: true,
      content: Object.fromEntries((route.mediaTypes ?? ['application/json']).map((type) => [type, { schema: schemaRef(route.schemas.body as Schema) }])),
    };
  }
  if (route.extension) op['x-platform-extension'] = true;
  if (route.cloudOnly) op['x-platform-cloud-only'] = true;
  return op;
}

/**
 * The document of one deployment: only the operations it serves (servedOn), each listing only the
 * token kinds it accepts there and the error codes it can answer there, and only the security
 * schemes some operation uses.
 */
export function buildOpenApi(registry: RouteRegistry, options: { profile: DeploymentProfile; baseUrl?: string | undefined }) {
  const { profile } = options;
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  const schemes = new Set<string>();
  for (const route of registry.routes) {
    if (!servedOn(route, profile)) continue;
    tags.add(route.tag);
    for (const kind of acceptedKinds(route, profile)) for (const scheme of SCHEMES_BY_KIND[kind]) schemes.add(scheme);
    (paths[route.path] ??= {})[route.method] = operation(route, profile);
  }
  const all: Record<string, unknown> = { Error: refs(errorBodySchema, true) };
  for (const [name, schema] of namedSchemas()) all[name] = refs(schema, true);
  // Only the components this deployment's operations use (a self-hosted document names no Cloud-only schema).
  const used = referencedComponents(paths, all);
  const schemas = Object.fromEntries(Object.entries(all).filter(([name]) => used.has(name)));
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
    servers: [{ url: options.baseUrl ?? '/', description: profile.deployment === 'cloud' ? 'Cloud' : "The organisation's host" }],
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES).filter(([name]) => schemes.has(name))),
    },
  };
}
