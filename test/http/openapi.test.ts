import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startPlatform();
});
afterAll(() => platform.close());

type Operation = { operationId: string; security: Record<string, string[]>[]; responses: Record<string, unknown>; 'x-platform-extension'?: boolean };

describe('GET /openapi.json', () => {
  it('serves a document that an independent OpenAPI 3.1 validator accepts', async () => {
    const res = await call(platform, 'get', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.info.version).toBe('0.2.0');
    const validator = new Validator();
    const result = await validator.validate(res.body);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('describes a security scheme for every token kind this deployment accepts, and no other', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    expect(Object.keys(body.components.securitySchemes).sort()).toEqual(['deviceDpop', 'deviceToken', 'personToken', 'runCredential']);
    expect(body.components.securitySchemes.deviceDpop).toMatchObject({ type: 'http', scheme: 'DPoP' });
    // A run credential is taken by its run's MCP endpoint and nowhere else.
    const withRunCredential = Object.entries(body.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => JSON.stringify(op.security).includes('runCredential'))
        .map(([method]) => `${method} ${path}`),
    );
    expect(withRunCredential).toEqual(['post /cloud-agents/v1/runs/{runId}/mcp']);
  });

  it('lists every declared route once, with an operationId, and marks extensions', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const operations: Operation[] = Object.values(body.paths as Record<string, Record<string, Operation>>).flatMap((item) => Object.values(item));
    const declared = platform.registry.routes.filter((route) => !route.cloudOnly);
    expect(operations.map((op) => op.operationId).sort()).toEqual(declared.map((route) => route.operationId).sort());
    const organisation = body.paths['/platform/v1/organisation'].get as Operation;
    expect(organisation.security).toEqual(expect.arrayContaining([{ personToken: [] }, { deviceToken: [] }, { deviceDpop: [] }]));
    expect(organisation.responses['401']).toBeDefined();
    expect(body.paths['/healthz'].get['x-platform-extension']).toBe(true);
    expect(body.paths['/.well-known/platform.json'].get['x-platform-extension']).toBeUndefined();
  });

  it('refers to shared schemas by $ref and defines each one', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const text = JSON.stringify(body);
    const referenced = [...text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)].map((m) => m[1]!);
    expect(referenced.length).toBeGreaterThan(0);
    for (const name of referenced) expect(body.components.schemas[name]).toBeDefined();
  });
});

/** Every property of every schema the document holds, with where it sits. */
function propertiesOf(node: unknown, where: string, out: { where: string; schema: Record<string, unknown> }[] = []) {
  if (Array.isArray(node)) node.forEach((item, index) => propertiesOf(item, `${where}[${index}]`, out));
  else if (node && typeof node === 'object') {
    const record = node as Record<string, unknown>;
    if (record.properties && typeof record.properties === 'object' && !Array.isArray(record.properties)) {
      for (const [name, schema] of Object.entries(record.properties as Record<string, unknown>)) {
        out.push({ where: `${where}.properties.${name}`, schema: schema as Record<string, unknown> });
      }
    }
    for (const [key, value] of Object.entries(record)) propertiesOf(value, `${where}.${key}`, out);
  }
  return out;
}

describe('schema meta rules', () => {
  it('gives every property of every schema a description (or a $ref to a described schema)', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const properties = propertiesOf(body, '#');
    expect(properties.length).toBeGreaterThan(10);
    const undocumented = properties
      .filter(({ schema }) => typeof schema.description !== 'string' && typeof schema.$ref !== 'string')
      .map(({ where }) => where);
    expect(undocumented).toEqual([]);
  });
});

describe('what the document promises', () => {
  it('lists, per operation and status, exactly the error codes the routes can answer here', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const organisation = body.paths['/platform/v1/organisation'].get.responses;
    const codes = (status: string) => organisation[status].content['application/json'].schema.properties.error.enum;
    expect(codes('401')).toEqual(['invalid_dpop_proof', 'unauthorized']);
    expect(codes('404')).toEqual(['unknown_tenant']);
    expect(codes('403')).toEqual(['insufficient_scope']);
    // No required nonces in this deployment: no use_dpop_nonce. The database is read: 503 `unavailable`.
    expect(codes('503')).toEqual(['unavailable']);
    const declared = Object.values(body.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: { properties?: { error?: { enum?: string[] } } } }> }> }>>)
      .flatMap((item) => Object.values(item))
      .flatMap((op) => Object.values(op.responses))
      .flatMap((answer) => answer.content?.['application/json']?.schema.properties?.error?.enum ?? []);
    expect(declared).toContain('invalid_dpop_proof');
    expect(declared).not.toContain('use_dpop_nonce');
    expect(organisation.default.description).toContain('internal_error');
    const poll = body.paths['/relay/v1/device/token'].post.responses['400'].content['application/json'].schema.properties.error.enum;
    expect(poll).toEqual(expect.arrayContaining(['authorization_pending', 'slow_down', 'invalid_grant', 'invalid_request']));
  });

  it('follows the configuration: required nonces add use_dpop_nonce, disabled rate limits drop 429; 503 `unavailable` only where a dependency is read', async () => {
    const { unreachableRedis } = await import('../support/platform.js');
    const redis = await unreachableRedis();
    const configured = await startPlatform({ redis, env: { DPOP_REQUIRE_NONCE: 'true', RATE_LIMITS_ENABLED: 'false' } });
    try {
      const { body } = await call(configured, 'get', '/openapi.json');
      const organisation = body.paths['/platform/v1/organisation'].get.responses;
      expect(organisation['503'].content['application/json'].schema.properties.error.enum).toEqual(['unavailable']);
      expect(organisation['401'].content['application/json'].schema.properties.error.enum).toContain('use_dpop_nonce');
      expect(body.paths['/relay/v1/device/code'].post.responses['429']).toBeUndefined();
      // Nothing on their way reads the database or Redis.
      for (const path of ['/healthz', '/openapi.json']) expect(body.paths[path].get.responses['503']).toBeUndefined();
      expect(body.paths['/readyz'].get.responses['503'].content['application/json'].schema.properties.error.const ?? body.paths['/readyz'].get.responses['503'].content['application/json'].schema.properties.error.enum).not.toContain('unavailable');
    } finally {
      await configured.close();
      redis.disconnect();
    }
  });

  it('lists, per operation, only the token kinds this deployment accepts, and no header only they would read', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const text = JSON.stringify(body.paths);
    expect(text).not.toContain('"cloudSession"');
    expect(text).toContain('"personToken"');
    // Read with Cloud sessions only, which this deployment does not accept.
    expect(text).not.toContain('"X-Platform-Organisation"');
  });

  it('documents 403 where a scope or a role can refuse', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    expect(body.paths['/policy/v1'].get.responses['403']).toBeDefined();
    expect(body.paths['/platform/v1/join-keys'].post.responses['403']).toBeDefined();
    expect(body.paths['/policy/v1/organisation'].put.responses['403']).toBeDefined();
    expect(body.paths['/policy/v1/organisation'].put.responses['409']).toBeDefined();
    expect(body.paths['/.well-known/platform.json'].get.responses['403']).toBeUndefined();
  });
});

describe('the Cloud document', () => {
  let cloud: TestPlatform;
  beforeAll(async () => {
    cloud = await startPlatform({ env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' } });
  });
  afterAll(() => cloud.close());

  it('describes only what Cloud serves: device tokens, Cloud sessions and run credentials, never person tokens, and every operation a session can call', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    expect(Object.keys(body.components.securitySchemes).sort()).toEqual(['cloudSession', 'deviceDpop', 'deviceToken', 'runCredential']);
    const text = JSON.stringify(body);
    for (const absent of ['personToken', 'unknown_tenant']) expect(text).not.toContain(absent);
    // The operations people call (administration, device approval, policy publishes and
    // restores) are served to Cloud sessions, with the header that names the organisation.
    const session = [{ cloudSession: [] }];
    for (const [path, method] of [
      ['/platform/v1/join-keys', 'post'],
      ['/platform/v1/devices', 'get'],
      ['/platform/v1/device-approvals/approve', 'post'],
      ['/policy/v1/organisation', 'put'],
      ['/policy/v1/organisation/revisions/{number}/restore', 'post'],
      ['/policy/v1/projects/{projectId}/revisions/{number}/restore', 'post'],
      ['/platform/v1/ingest/events', 'get'],
    ] as const) {
      const operation = body.paths[path]?.[method];
      expect({ path, security: operation?.security }).toEqual({ path, security: session });
      expect(operation.parameters.map((parameter: { name: string }) => parameter.name)).toContain('X-Platform-Organisation');
      expect(operation.responses['404'].content['application/json'].schema.properties.error.enum).toContain('not_found');
    }
    expect(body.paths['/policy/v1'].get.security).toEqual([{ deviceToken: [] }, { deviceDpop: [] }, { cloudSession: [] }]);
    const res = await call(cloud, 'get', '/platform/v1/join-keys');
    expect(res.status).toBe(401);
    expect(body.servers).toEqual([{ url: 'https://api.platform.test', description: 'Cloud' }]);
    const validator = new Validator();
    expect((await validator.validate(body)).valid).toBe(true);
  });
});
