import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { EXAMPLE } from '../../src/http/examples.js';
import { askForCode, createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { mintRun } from '../support/cloud-agents.js';
import { bearer, CONSOLE_REDIRECT, createTeam, emailedSignInCode, emailSignIn, lastMailTo, pkce, startCloud, type CloudPlatform } from '../support/cloud.js';
import { personHeaders, personIdFor, twoOrganisations, type TwoOrganisations } from '../support/organisations.js';
import { call, startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * The examples of the OpenAPI document (`examples` next to each schema) are true: on both
 * deployments, every request example is sent to the live service and gets the documented
 * success, its answer matching the answer's schema; every answer example matches its own schema.
 * A replayed example differs from the document only where it names something of this test's
 * world: the ids and one-time secrets of src/http/examples.ts are replaced by this test's fixtures.
 */

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  security: Json[];
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { content?: Record<string, { schema: Json }> }>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** A validator of `schema` as the document states it: its `$ref`s resolve to the document's components. */
function validatorOf(document: OpenApi) {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addSchema({ $id: 'https://openapi.test/document', components: document.components });
  return (schema: Json, value: unknown): string | undefined => {
    const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://openapi.test/document#/components/')) as Json;
    const validate = ajv.compile(rebased);
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  };
}

function resolve(document: OpenApi, schema: Json): Json {
  const ref = schema.$ref;
  return typeof ref === 'string' ? resolve(document, document.components.schemas[ref.slice('#/components/schemas/'.length)]!) : schema;
}

function operationsOf(document: OpenApi): { method: Method; path: string; op: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method: method as Method, path, op })));
}

/** Every string of `value` that is one of `values`' keys, replaced by its value. */
function substitute(value: unknown, values: Record<string, string>): unknown {
  if (typeof value === 'string') return values[value] ?? value;
  if (Array.isArray(value)) return value.map((item) => substitute(item, values));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, substitute(item, values)]));
  return value;
}

/** What a deployment's test world holds: an organisation, its owner and a member, a workbench and a project. */
interface World {
  platform: TestPlatform;
  cloud?: CloudPlatform;
  host?: string;
  organisationId: string;
  ownerId: string;
  memberId: string;
  /** The owner's headers: a person token (self-hosted) or a Cloud session acting for the organisation. */
  owner: Record<string, string>;
  workbench: EnrolledDevice;
  projectId: string;
  close(): Promise<void>;
}

/** How one request example is sent: where, as whom, and which of the example's values stand for this world's. */
interface Replay {
  params?: Record<string, string>;
  headers?: Record<string, string>;
  /** Example value → this test's value (ids, one-time secrets, registered redirect URIs). */
  values?: Record<string, string>;
}

async function workbenchHeaders(world: World, method: Method, path: string, device = world.workbench) {
  return deviceHeaders(device, method, `http://${world.host ?? 'platform.test'}${path}`);
}

async function allowCloudAgents(world: World): Promise<void> {
  await world.platform.services.policies.publishOrganisation(world.organisationId, { kind: 'person', personId: world.ownerId }, {
    ...structuredClone(DEFAULT_POLICY),
    cloudAgents: { allowed: true, maxConcurrent: 50 },
  });
}

/** A device asking to enrol, its code looked up by the owner (as the approval page does before a decision). */
async function lookedUpCode(world: World) {
  const code = await askForCode(world.platform, world.host ? { host: world.host } : {});
  const looked = await call(world.platform, 'post', '/platform/v1/device-approvals/look-up', { ...(world.host ? { host: world.host } : {}), headers: world.owner, body: { userCode: code.user_code } });
  expect(looked.status).toBe(200);
  return code;
}

const SCENARIOS: Record<string, (world: World) => Promise<Replay>> = {
  createProject: async () => ({}),
  renameProject: async (world) => ({ params: { projectId: world.projectId } }),
  setProjectMember: async (world) => ({ params: { projectId: world.projectId, personId: world.memberId } }),
  publishOrganisationPolicy: async () => ({}),
  publishProjectPolicy: async (world) => ({ params: { projectId: world.projectId } }),
  ingest: async (world) => ({
    headers: await workbenchHeaders(world, 'post', '/ingest/v1'),
    values: { [EXAMPLE.projectId]: world.projectId, [EXAMPLE.workspaceId]: world.workbench.device.workspaceId! },
  }),
  savePicture: async (world) => ({
    params: { id: world.projectId, slug: 'checkout-flow' },
    // A new picture: the precondition the operation requires (`If-None-Match: *`).
    headers: { ...(await workbenchHeaders(world, 'put', `/projects/v1/${world.projectId}/pictures/checkout-flow`)), 'If-None-Match': '*' },
  }),
  createJoinKey: async () => ({}),
  joinWithKey: async (world) => {
    const created = await call(world.platform, 'post', '/platform/v1/join-keys', { ...(world.host ? { host: world.host } : {}), headers: world.owner, body: { description: 'Build runners' } });
    expect(created.status).toBe(201);
    return { headers: {}, values: { [EXAMPLE.joinKey]: created.body.key as string } };
  },
  refreshDeviceToken: async (world) => {
    const device = await enrolDevice(world.platform, { organisationId: world.organisationId, personId: world.ownerId });
    return { headers: {}, values: { [EXAMPLE.refreshToken]: device.tokens.refresh_token } };
  },
  startDeviceCode: async () => ({ headers: {} }),
  pollDeviceToken: async (world) => {
    const code = await lookedUpCode(world);
    const approved = await call(world.platform, 'post', '/platform/v1/device-approvals/approve', { ...(world.host ? { host: world.host } : {}), headers: world.owner, body: { userCode: code.user_code } });
    expect(approved.status).toBe(200);
    return { headers: {}, values: { [EXAMPLE.deviceCode]: code.device_code } };
  },
  lookUpDeviceApproval: async (world) => ({ values: { [EXAMPLE.userCode]: (await askForCode(world.platform, world.host ? { host: world.host } : {})).user_code } }),
  approveDevice: async (world) => ({ values: { [EXAMPLE.userCode]: (await lookedUpCode(world)).user_code } }),
  denyDevice: async (world) => ({ values: { [EXAMPLE.userCode]: (await lookedUpCode(world)).user_code } }),
  registerCloudAgentRun: async (world) => {
    await allowCloudAgents(world);
    return { headers: await workbenchHeaders(world, 'post', '/cloud-agents/v1/runs'), values: { [EXAMPLE.projectId]: world.projectId, [EXAMPLE.workspaceId]: world.workbench.device.workspaceId! } };
  },
  reportCloudAgentRunEvents: async (world) => {
    await allowCloudAgents(world);
    const run = await mintRun(world.platform, world.organisationId);
    return { params: { runId: run.runId }, headers: await workbenchHeaders(world, 'post', `/cloud-agents/v1/runs/${run.runId}/events`, run.workbench) };
  },
  callCloudAgentRunTools: async (world) => {
    await allowCloudAgents(world);
    const run = await mintRun(world.platform, world.organisationId);
    return { params: { runId: run.runId }, headers: { ...run.headers, Accept: 'application/json' } };
  },
  // Cloud only.
  startEmailSignIn: async () => ({ headers: {}, values: { [EXAMPLE_CONSOLE_REDIRECT]: CONSOLE_REDIRECT } }),
  verifyEmailSignIn: async (world) => {
    const { challenge } = await pkce();
    const email = 'verify@example.com';
    const started = await call(world.platform, 'post', '/auth/v1/email/start', { body: { email, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge } });
    expect(started.status).toBe(202);
    const mail = await lastMailTo(world.cloud!.outbox, email);
    return { headers: {}, values: { [EXAMPLE.email]: email, [EXAMPLE_EMAILED_DIGITS]: mail.digits! } };
  },
  exchangeSessionToken: async (world) => {
    const { code, verifier } = await emailedSignInCode(world.cloud!, 'exchange@example.com');
    return { headers: {}, values: { [EXAMPLE_SIGN_IN_CODE]: code, [EXAMPLE_CODE_VERIFIER]: verifier, [EXAMPLE_CONSOLE_REDIRECT]: CONSOLE_REDIRECT } };
  },
  updateMe: async () => ({}),
  deleteMe: async (world) => {
    const leaving = await emailSignIn(world.cloud!, 'leaving@example.com');
    return { headers: bearer(leaving.access_token), values: { [EXAMPLE.email]: 'leaving@example.com' } };
  },
  createTeam: async () => ({}),
  renameTeam: async (world) => ({ params: { id: world.organisationId } }),
  changeMemberRole: async (world) => ({ params: { id: world.organisationId, userId: world.memberId } }),
  createInvitation: async (world) => ({ params: { id: world.organisationId } }),
};

/** Values of Cloud sign-in examples (src/modules/signin/schemas.ts). */
const EXAMPLE_CONSOLE_REDIRECT = 'https://console.platform.example/signed-in';
const EXAMPLE_EMAILED_DIGITS = '381947';
const EXAMPLE_SIGN_IN_CODE = 'platform_sc_Vb6nM2qW8eR4tY0uI5oP1aS7dF3gH9jK2lZ6xC4vB8n';
const EXAMPLE_CODE_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';

/**
 * Request examples that are not replayed, each with why: none so far. An example listed here is
 * still checked against its request schema.
 */
const NOT_REPLAYED: Record<string, string> = {};

async function selfHostedWorld(): Promise<World> {
  const platform = await startPlatform();
  const organisations: TwoOrganisations = await twoOrganisations(platform, platform.clock);
  const { organisation, host, idp } = organisations;
  const owner = await personHeaders(idp, 'owner', 'ana');
  expect((await call(platform, 'get', '/platform/v1/organisation', { host, headers: owner })).status).toBe(200);
  const ownerId = await personIdFor(platform, idp, 'ana');
  const member = await createPerson(platform, organisation.id, 'member', 'Ben Okafor');
  const workbench = await enrolDevice(platform, { organisationId: organisation.id, personId: ownerId });
  const project = await platform.services.projects.create(organisation.id, { name: 'Fixture project', owner: ownerId });
  return {
    platform,
    host,
    organisationId: organisation.id,
    ownerId,
    memberId: member.id,
    owner,
    workbench,
    projectId: project.id,
    close: async () => {
      await Promise.all([organisations.idp.close(), organisations.otherIdp.close()]);
      await platform.close();
    },
  };
}

async function cloudWorld(): Promise<World> {
  const cloud = await startCloud();
  const ana = await emailSignIn(cloud, EXAMPLE.email);
  const ben = await emailSignIn(cloud, 'ben@example.com');
  const team = await createTeam(cloud, 'Acme', [
    [ana.personId, 'owner'],
    [ben.personId, 'member'],
  ]);
  const workbench = await enrolDevice(cloud, { organisationId: team.id, personId: ana.personId });
  const project = await cloud.services.projects.create(team.id, { name: 'Fixture project', owner: ana.personId });
  return {
    platform: cloud,
    cloud,
    organisationId: team.id,
    ownerId: ana.personId,
    memberId: ben.personId,
    owner: bearer(ana.access_token, team.id),
    workbench,
    projectId: project.id,
    close: () => cloud.close(),
  };
}

describe.each([
  ['self-hosted', selfHostedWorld],
  ['cloud', cloudWorld],
] as const)('the OpenAPI examples of the %s deployment', (_deployment, makeWorld) => {
  let world: World;
  let document: OpenApi;
  let check: ReturnType<typeof validatorOf>;

  beforeAll(async () => {
    world = await makeWorld();
    document = (await call(world.platform, 'get', '/openapi.json')).body as OpenApi;
    check = validatorOf(document);
  });
  afterAll(() => world.close());

  it('gives every request body and every success answer with a body an example that matches its schema', () => {
    const missing: string[] = [];
    const invalid: string[] = [];
    for (const { op } of operationsOf(document)) {
      const bodies = [
        ...Object.entries(op.requestBody?.content ?? {}).map(([type, media]) => [`request ${type}`, media.schema] as const),
        ...Object.entries(op.responses)
          .filter(([status]) => Number(status) < 400)
          .flatMap(([status, answer]) => Object.values(answer.content ?? {}).map((media) => [`answer ${status}`, media.schema] as const)),
      ];
      for (const [what, schema] of bodies) {
        const examples = resolve(document, schema).examples as unknown[] | undefined;
        if (!examples?.length) missing.push(`${op.operationId} ${what}`);
        for (const example of examples ?? []) {
          const error = check(schema, example);
          if (error) invalid.push(`${op.operationId} ${what}: ${error}`);
        }
      }
    }
    expect(invalid).toEqual([]);
    expect(missing).toEqual([]);
  });

  it('replays every request example but a few named ones, and gets the documented success', async () => {
    const withBodies = operationsOf(document).filter(({ op }) => op.requestBody);
    expect(withBodies.length).toBeGreaterThan(15);
    const unknown = withBodies.map(({ op }) => op.operationId).filter((id) => !SCENARIOS[id] && !NOT_REPLAYED[id]);
    expect(unknown).toEqual([]);
    expect(Object.keys(NOT_REPLAYED).length).toBeLessThanOrEqual(3);
    const failures: string[] = [];
    for (const { method, path, op } of withBodies) {
      const scenario = SCENARIOS[op.operationId];
      if (!scenario) continue;
      const example = (resolve(document, op.requestBody!.content['application/json']!.schema).examples as unknown[] | undefined)?.[0];
      if (example === undefined) {
        failures.push(`${op.operationId}: no example`);
        continue;
      }
      const replay = await scenario(world);
      const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const value = replay.params?.[name];
        if (value === undefined) throw new Error(`${op.operationId}: no value for {${name}}`);
        return encodeURIComponent(value);
      });
      const headers = replay.headers ?? (op.security.some((s) => 'deviceToken' in s) ? await workbenchHeaders(world, method, url) : world.owner);
      // `call` checks the answer against the route's declared schema too.
      const res = await call(world.platform, method, url, { ...(world.host ? { host: world.host } : {}), headers, body: substitute(example, replay.values ?? {}) });
      // PRINT_ANSWERS=1 prints what the service answered: the material for an answer example.
      if (process.env.PRINT_ANSWERS) process.stdout.write(`ANSWER ${op.operationId} ${res.status} ${JSON.stringify(res.body)}\n`);
      const successes = Object.keys(op.responses).filter((status) => Number(status) < 400);
      if (!successes.includes(String(res.status))) {
        failures.push(`${op.operationId}: ${res.status} ${JSON.stringify(res.body)}`);
        continue;
      }
      // And against the document's own schema of that answer, as a client generated from it reads it.
      const answerSchema = op.responses[String(res.status)]!.content?.['application/json']?.schema;
      const error = answerSchema ? check(answerSchema, res.body) : undefined;
      if (error) failures.push(`${op.operationId}: ${res.status} does not match the document: ${error}`);
    }
    expect(failures).toEqual([]);
  });
});
