import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { connectRedis } from '../../adapters/state/redis.js';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { systemClock } from '../../src/util/clock.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { createPerson, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import type { TestPlatform } from '../support/platform.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { TestWorkbench } from '../support/workbench.js';

// Two replicas of the real service (child processes of src/main.ts) sharing MariaDB and Redis
// (TEST_REDIS_URL): a workbench holds its control channel on one, the cloud agent's MCP requests
// arrive at the other, and the answers come back through Redis pub/sub.

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const RATE = 12;
let database: TestDatabase;
let a: ServiceProcess;
let b: ServiceProcess;
let device: EnrolledDevice;
let projectId: string;
const workbenches: TestWorkbench[] = [];

beforeAll(async () => {
  database = await freshDatabase();
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL,
    SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    RELAY_CALL_TIMEOUT_MS: '5000',
    MCP_REQUESTS_PER_MINUTE: String(RATE),
  };
  // Migrate and seed the shared database the way an operator and the enrolment flows would.
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  await dataSource.runMigrations({ transaction: 'each' });
  const seeding = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
  const organisationId = (await seeding.services.organisations.create({ name: 'Replicas', kind: 'enterprise', hosts: ['127.0.0.1'] })).id;
  const seeder = { ...seeding, dataSource, clock: systemClock } as unknown as TestPlatform;
  const personId = (await createPerson(seeder, organisationId)).id;
  projectId = (await seeding.services.projects.create(organisationId, { name: 'Shared', owner: personId })).id;
  device = await enrolDevice(seeder, { organisationId, personId });
  await dataSource.destroy();

  [a, b] = await Promise.all([startService(env), startService(env)]);
}, 90_000);

afterAll(async () => {
  for (const workbench of workbenches) workbench.close();
  await Promise.all([a?.stop(), b?.stop()]);
  const redis = connectRedis(REDIS_URL);
  await redis.connect();
  const keys = [...(await redis.keys(`platform:*${device?.device.id ?? 'none'}*`)), ...(await redis.keys(`platform:rl:*${device?.device.personId ?? 'none'}*`))];
  const runKeys = await redis.keys('platform:rl:mcp-run:run:run_*');
  const ours = runKeys.filter((key) => registered.some((runId) => key.endsWith(runId)));
  if (keys.length + ours.length) await redis.del(...keys, ...ours);
  redis.disconnect();
  await database?.drop();
}, 30_000);

const registered: string[] = [];

async function registerRun(at: ServiceProcess): Promise<{ runId: string; mcp: { url: string; token: string } }> {
  const res = await fetch(`${at.origin}/cloud-agents/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${device.tokens.access_token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ provider: 'codex', projectId, workspaceId: 'ws-1', tools: ['echo'] }),
  });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { runId: string; mcp: { url: string; token: string } };
  registered.push(body.runId);
  return body;
}

async function post(at: ServiceProcess, run: { runId: string; mcp: { token: string } }, message: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${at.origin}/cloud-agents/v1/runs/${run.runId}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${run.mcp.token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify(message),
  });
  return { status: res.status, body: res.status === 202 ? {} : ((await res.json()) as Record<string, unknown>) };
}

async function connect(at: ServiceProcess, issuer: string): Promise<TestWorkbench> {
  const workbench = await TestWorkbench.connect(at.origin, device, systemClock, { issuer });
  workbenches.push(workbench);
  return workbench;
}

const list = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });

describe('two replicas sharing MariaDB and Redis', () => {
  it('relay the official MCP client at one replica to the workbench connected to the other', async () => {
    const run = await registerRun(b);
    expect(run.mcp.url.startsWith(b.origin)).toBe(true);
    // The workbench holds its channel at A and checks assertions against A's published keys:
    // B signs them, so the replicas must share their keys.
    const workbench = await connect(a, b.origin);
    const client = new Client({ name: 'cloud-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(run.mcp.url), { requestInit: { headers: { Authorization: `Bearer ${run.mcp.token}` } } }));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['echo']);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'across' } })).content).toEqual([{ type: 'text', text: 'echo: across' }]);
    await client.close();
    expect(workbench.problems).toEqual([]);
    expect(workbench.assertions.map(({ message }) => (message as { method: string }).method)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
  });

  it('move the device to the replica it reconnects to: the old socket is closed (4000) and calls follow', async () => {
    const old = workbenches.at(-1)!;
    const moved = await connect(b, a.origin);
    expect((await old.closed).code).toBe(4000);
    const run = await registerRun(a);
    const res = await post(a, run, list(1));
    expect(res.status).toBe(200);
    expect((res.body.result as { tools: unknown[] }).tools).toHaveLength(1);
    expect(moved.assertions).toHaveLength(1);
    expect(moved.problems).toEqual([]);
  });

  it(`count ${RATE} MCP requests a minute for a run across both replicas`, async () => {
    const run = await registerRun(a);
    for (let i = 0; i < RATE; i++) expect((await post(i % 2 ? a : b, run, list(i))).status).toBe(200);
    const refusedAtA = await post(a, run, list(99));
    const refusedAtB = await post(b, run, list(100));
    expect([refusedAtA.status, refusedAtB.status]).toEqual([429, 429]);
  });

  it('stop the credential at once on both replicas when the run ends at one', async () => {
    const run = await registerRun(a);
    expect((await post(b, run, list(1))).status).toBe(200);
    const ended = await fetch(`${b.origin}/cloud-agents/v1/runs/${run.runId}/end`, { method: 'POST', headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
    expect(ended.status).toBe(200);
    expect((await post(a, run, list(2))).status).toBe(401);
    expect((await post(b, run, list(3))).status).toBe(401);
  });

  it('answer -32000 at once when the replica holding the socket has died', async () => {
    const run = await registerRun(a);
    await b.kill();
    const started = Date.now();
    const res = await post(a, run, list(1));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: 1, error: { code: -32000, data: { reason: 'not_connected' } } });
    // Not the 5 s call timeout: nobody was subscribed to the dead replica's channel.
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
