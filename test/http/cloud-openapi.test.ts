import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startCloud, type CloudPlatform } from '../support/cloud.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

/** The Cloud deployment's OpenAPI document describes the sign-in and account operations it serves. */

let cloud: CloudPlatform;
let selfHosted: TestPlatform;

beforeAll(async () => {
  [cloud, selfHosted] = await Promise.all([startCloud(), startPlatform()]);
});
afterAll(async () => {
  await cloud?.close();
  await selfHosted?.close();
});

const CLOUD_OPERATIONS = [
  'listSignInProviders',
  'startSignIn',
  'finishSignIn',
  'startEmailSignIn',
  'verifyEmailSignIn',
  'exchangeSessionToken',
  'signOut',
  'getMe',
  'updateMe',
  'deleteMe',
  'createLinkTicket',
  'removeSignInMethod',
];

type Operation = { operationId: string; security: Record<string, string[]>[]; requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> };

const operationsOf = (document: { paths: Record<string, Record<string, Operation>> }) => Object.values(document.paths).flatMap((item) => Object.values(item));

describe('the Cloud OpenAPI document', () => {
  it('is valid OpenAPI 3.1 and lists every sign-in and account operation, marked Cloud only', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    const result = await new Validator().validate(body);
    expect(result.errors).toBeUndefined();
    const operations = operationsOf(body);
    for (const id of CLOUD_OPERATIONS) {
      const operation = operations.find((candidate) => candidate.operationId === id) as (Operation & { 'x-platform-cloud-only'?: boolean }) | undefined;
      expect(operation?.['x-platform-cloud-only']).toBe(true);
    }
  });

  it('describes the Cloud session scheme and uses it, never person tokens', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    expect(body.components.securitySchemes.cloudSession).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'platform_sa_' });
    expect(body.paths['/cloud/v1/me'].get.security).toEqual([{ cloudSession: [] }]);
    expect(body.paths['/platform/v1/organisation'].get.security).toEqual(expect.arrayContaining([{ cloudSession: [] }]));
    expect(JSON.stringify(body.paths)).not.toContain('"personToken"');
  });

  it('takes the token request as JSON or a form, and declares the OAuth errors and the error codes of 4.3 and 4.4', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    const token = body.paths['/auth/v1/token'].post;
    expect(Object.keys(token.requestBody.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded']);
    expect(token.responses['400'].content['application/json'].schema.properties.error.enum).toEqual(['invalid_grant', 'invalid_request', 'json_too_complex', 'unsupported_grant_type']);
    const text = JSON.stringify(body.paths);
    for (const code of ['invalid_code', 'already_linked', 'slow_down', 'confirm', 'sole_owner', 'last_sign_in_method']) expect(text).toContain(code);
    expect(body.paths['/auth/v1/email/start'].post.responses['429']).toBeDefined();
    expect(body.paths['/auth/v1/start'].get.responses['302']).toBeDefined();
  });

  it('is not served on a self-hosted deployment: no such operation, and 404 not_found on its paths', async () => {
    const { body } = await call(selfHosted, 'get', '/openapi.json');
    const ids = operationsOf(body).map((operation) => operation.operationId);
    for (const id of CLOUD_OPERATIONS) expect(ids).not.toContain(id);
    for (const [method, path] of [['get', '/auth/v1/providers'], ['post', '/auth/v1/token'], ['get', '/cloud/v1/me']] as const) {
      const res = await call(selfHosted, method, path, { host: 'localhost' });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });
});
