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

  it('describes a security scheme for every token kind', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    expect(Object.keys(body.components.securitySchemes).sort()).toEqual(
      ['cloudSession', 'deviceDpop', 'deviceToken', 'personToken', 'runCredential'].sort(),
    );
    expect(body.components.securitySchemes.deviceDpop).toMatchObject({ type: 'http', scheme: 'DPoP' });
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
  it('lists, per operation, only the token kinds this deployment accepts', async () => {
    const { body } = await call(platform, 'get', '/openapi.json');
    const text = JSON.stringify(body.paths);
    expect(text).not.toContain('"cloudSession"');
    expect(text).toContain('"personToken"');
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
