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
  'createTeam',
  'renameTeam',
  'listMembers',
  'changeMemberRole',
  'removeMember',
  'listInvitations',
  'createInvitation',
  'withdrawInvitation',
  'previewInvitation',
  'acceptInvitation',
];

const PROJECT_OPERATIONS = ['listProjects', 'createProject', 'getProject', 'renameProject', 'deleteProject', 'listProjectMembers', 'setProjectMember', 'removeProjectMember'];

type Operation = { operationId: string; security: Record<string, string[]>[]; requestBody?: { content: Record<string, unknown> }; responses: Record<string, unknown> };

const operationsOf = (document: { paths: Record<string, Record<string, Operation>> }) => Object.values(document.paths).flatMap((item) => Object.values(item));

describe('the Cloud OpenAPI document', () => {
  it('is valid OpenAPI 3.1 and lists every sign-in and account operation, marked Cloud only', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    const result = await new Validator().validate(body);
    expect(result.errors).toBeUndefined();
    const operations = operationsOf(body);
    for (const id of CLOUD_OPERATIONS) {
      const operation: (Operation & { 'x-platform-cloud-only'?: boolean }) | undefined = operations.find((candidate) => candidate.operationId === id);
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

  it('declares the teams error codes it chose, and marks the team operations as the spec\'s (no extension) and the projects API as extensions on both deployments', async () => {
    const { body } = await call(cloud, 'get', '/openapi.json');
    const members = body.paths['/cloud/v1/organisations/{id}/members/{userId}'];
    expect(members.patch.responses['409'].content['application/json'].schema.properties.error.enum).toEqual(['last_owner']);
    expect(members.delete.responses['400'].content['application/json'].schema.properties.error.enum).toContain('personal_organisation');
    expect(body.paths['/cloud/v1/invitations/{token}/accept'].post.responses['403'].content['application/json'].schema.properties.error.enum).toEqual(['email_mismatch']);
    expect(body.paths['/cloud/v1/organisations/{id}/invitations'].post.responses['409'].content['application/json'].schema.properties.error.enum).toEqual(['already_member']);
    expect(body.paths['/platform/v1/projects/{projectId}'].delete.responses['409'].content['application/json'].schema.properties.error.enum).toEqual(['project_not_empty']);
    expect(body.paths['/cloud/v1/invitations/{token}'].get.security).toEqual([]);
    const selfHostedDocument = (await call(selfHosted, 'get', '/openapi.json')).body;
    for (const document of [body, selfHostedDocument]) {
      const operations = operationsOf(document) as (Operation & { 'x-platform-extension'?: boolean })[];
      for (const id of PROJECT_OPERATIONS) expect(operations.find((operation) => operation.operationId === id)?.['x-platform-extension']).toBe(true);
      for (const operation of operations.filter((candidate) => CLOUD_OPERATIONS.slice(CLOUD_OPERATIONS.indexOf('createTeam')).includes(candidate.operationId))) {
        expect(operation['x-platform-extension']).toBeUndefined();
      }
    }
    expect(selfHostedDocument.paths['/platform/v1/projects'].get.security).toEqual([{ personToken: [] }]);
    expect(body.paths['/platform/v1/projects'].get.security).toEqual([{ cloudSession: [] }]);
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
