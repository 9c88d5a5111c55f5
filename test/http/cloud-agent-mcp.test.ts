import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { WebSocket } from 'ws';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import { MembershipEntity } from '../../src/modules/organisation/entities.js';
import { call, createOrganisation, listen, startPlatform, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestWorkbench } from '../support/workbench.js';

// The MCP endpoint of a run, end to end: the official MCP client on one side, a workbench
// holding the control channel on the other (it checks every assertion against the published
// keys), the platform on a real loopback port in between.

let platform: TestPlatform;
let server: Awaited<ReturnType<typeof listen>>;
let origin: string;
let host: string;
let organisationId: string;
let personId: string;
let projectId: string;
let device: EnrolledDevice;
const open: TestWorkbench[] = [];

beforeAll(async () => {
  // Keys in the database (as several replicas keep them), so the suite's log scan knows them.
  platform = await startPlatform({ env: { RELAY_CALL_TIMEOUT_MS: '400', SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url') } });
  // Served at 127.0.0.1: the MCP client follows the run's URL, so it must resolve.
  organisationId = (await createOrganisation(platform, { hosts: ['127.0.0.1'] })).id;
  server = await listen(platform);
  origin = server.origin;
  host = `127.0.0.1:${server.port}`;
  personId = (await createPerson(platform, organisationId)).id;
  projectId = (await platform.services.projects.create(organisationId, { name: 'Tools', owner: personId })).id;
  device = await enrolDevice(platform, { organisationId, personId });
  // This file registers many runs for one person.
  await platform.services.policies.publishOrganisation(organisationId, { kind: 'person', personId }, { ...structuredClone(DEFAULT_POLICY), cloudAgents: { allowed: true, maxConcurrent: 1000 } });
});
afterAll(async () => {
  for (const workbench of open) workbench.close();
  await server.close();
  await platform.close();
});

async function connect(enrolled: EnrolledDevice = device, options: { autoPong?: boolean } = {}): Promise<TestWorkbench> {
  const workbench = await TestWorkbench.connect(origin, enrolled, platform.clock, options);
  open.push(workbench);
  return workbench;
}

async function registerRun(enrolled: EnrolledDevice = device): Promise<{ runId: string; mcp: { url: string; token: string; expiresAt: string } }> {
  const res = await call(platform, 'post', '/cloud-agents/v1/runs', {
    host,
    headers: { Authorization: `Bearer ${enrolled.tokens.access_token}` },
    body: { provider: 'codex', projectId, workspaceId: 'ws-1', tools: ['echo'], task: 'do the thing' },
  });
  expect(res.status).toBe(201);
  return res.body;
}

function mcpPost(runId: string, token: string, body: unknown, headers: Record<string, string> = {}) {
  const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return call(platform, 'post', `/cloud-agents/v1/runs/${runId}/mcp`, {
    host,
    headers: { Authorization: `Bearer ${token}`, Accept: 'application/json, text/event-stream', ...headers },
    raw: { type: headers['Content-Type'] ?? 'application/json', data: raw },
  });
}

const request = (id: number | string, method = 'tools/list', params: object = {}) => ({ jsonrpc: '2.0', id, method, params });

async function until(check: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the official MCP client through the relay', () => {
  it('runs initialize, tools/list and tools/call against the workbench, every call with a verified assertion', async () => {
    const workbench = await connect();
    const run = await registerRun();
    expect(run.mcp.url).toBe(`${origin}/cloud-agents/v1/runs/${run.runId}/mcp`);
    const client = new Client({ name: 'cloud-agent', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(run.mcp.url), { requestInit: { headers: { Authorization: `Bearer ${run.mcp.token}` } } });
    await client.connect(transport);
    expect(client.getServerVersion()).toMatchObject({ name: 'test-workbench' });
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toEqual(['echo']);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(result.content).toEqual([{ type: 'text', text: 'echo: hello' }]);
    await client.close();

    expect(workbench.problems).toEqual([]);
    const methods = workbench.assertions.map((assertion) => (assertion.message as { method?: string }).method);
    expect(methods).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
    for (const { payload, kid } of workbench.assertions) {
      expect(payload).toMatchObject({ iss: origin, sub: personId, aud: device.device.id, scope: 'tasks:write', run_id: run.runId });
      expect(payload.exp! - payload.iat!).toBe(60);
      expect(kid).toMatch(/^sk_/);
    }
    expect(new Set(workbench.assertions.map(({ payload }) => payload.jti)).size).toBe(4);
  });

  it('answers a batch in order, with an error for each invalid entry, and 202 for notifications only', async () => {
    await connect();
    const run = await registerRun();
    const init = { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } };
    expect((await mcpPost(run.runId, run.mcp.token, request(1, 'initialize', init))).status).toBe(200);
    const batch = await mcpPost(run.runId, run.mcp.token, [request('a'), { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '1.0', id: 7, method: 'x' }, request('b', 'tools/call', { name: 'echo', arguments: { text: 'x' } })]);
    expect(batch.status).toBe(200);
    expect(batch.headers['content-type']).toMatch(/^application\/json/);
    expect(batch.body.map((response: { id: unknown }) => response.id)).toEqual(['a', 7, 'b']);
    expect(batch.body[0].result.tools).toHaveLength(1);
    expect(batch.body[1].error.code).toBe(-32600);
    expect(batch.body[2].result.content[0].text).toBe('echo: x');
    const notifications = await mcpPost(run.runId, run.mcp.token, [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'zz' } }]);
    expect(notifications.status).toBe(202);
    expect(notifications.text).toBe('');
  });
});

describe('JSON-RPC errors for what the body holds', () => {
  let run: { runId: string; mcp: { token: string } };
  beforeAll(async () => {
    run = await registerRun();
  });

  it.each([
    ['text that is not JSON', '{"jsonrpc": "2.0", ', -32700, null],
    ['no body at all', '', -32700, null],
    ['a JSON string', '"tools/list"', -32600, null],
    ['a message of another JSON-RPC version', { jsonrpc: '1.0', id: 1, method: 'tools/list' }, -32600, 1],
    ['a request with a null id', { jsonrpc: '2.0', id: null, method: 'tools/list' }, -32600, null],
    ['a request with an id that is an object', { jsonrpc: '2.0', id: { a: 1 }, method: 'tools/list' }, -32600, null],
    ['params that are a string', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: 'all' }, -32600, 1],
    ['a response with both result and error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }, -32600, 1],
    ['an empty batch', [], -32600, null],
    ['a batch of 101', Array.from({ length: 101 }, (_, i) => request(i)), -32600, null],
    ['nesting 100 deep', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { a: JSON.parse('['.repeat(100) + ']'.repeat(100)) } }), -32600, null],
  ])('%s: 400 with JSON-RPC error %d', async (_what, body, code, id) => {
    const res = await mcpPost(run.runId, run.mcp.token, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ jsonrpc: '2.0', id, error: { code, message: expect.any(String) } });
  });

  it('bytes that are not UTF-8: 400 with JSON-RPC error -32700', async () => {
    const res = await fetch(`${origin}/cloud-agents/v1/runs/${run.runId}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${run.mcp.token}`, 'Content-Type': 'application/json' },
      body: new Uint8Array([0x22, 0xff, 0xfe, 0x22]),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it('keeps the id of an invalid message when it can read one', async () => {
    const res = await mcpPost(run.runId, run.mcp.token, { jsonrpc: '2.0', id: 'k', method: '' });
    expect(res.body).toMatchObject({ id: 'k', error: { code: -32600 } });
  });

  it('survives a body nested half a million deep without a crash', async () => {
    const res = await mcpPost(run.runId, run.mcp.token, '['.repeat(500_000) + ']'.repeat(500_000));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(-32600);
  });
});

describe('when the workbench cannot answer', () => {
  it('not connected: the request gets -32000, a notification 202 all the same (JSON-RPC reports no error for one)', async () => {
    const lonely = await enrolDevice(platform, { organisationId, personId, name: 'Offline laptop' });
    const run = await registerRun(lonely);
    const res = await mcpPost(run.runId, run.mcp.token, request(1));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32000, data: { reason: 'not_connected' } } });
    const notification = await mcpPost(run.runId, run.mcp.token, { jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(notification.status).toBe(202);
    expect(notification.text).toBe('');
  });

  it('silent past RELAY_CALL_TIMEOUT_MS, answering something else, refusing, or gone: -32000 naming why', async () => {
    const quiet = await enrolDevice(platform, { organisationId, personId, name: 'Quiet laptop' });
    const workbench = await connect(quiet);
    const run = await registerRun(quiet);
    workbench.behaviour = 'silent';
    const started = Date.now();
    const silent = await mcpPost(run.runId, run.mcp.token, request(1));
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(silent.body).toMatchObject({ id: 1, error: { code: -32000, data: { reason: 'timeout' } } });
    workbench.behaviour = 'garbage';
    expect((await mcpPost(run.runId, run.mcp.token, request(2))).body).toMatchObject({ id: 2, error: { code: -32000, data: { reason: 'invalid_answer' } } });
    workbench.behaviour = 'refuse';
    expect((await mcpPost(run.runId, run.mcp.token, request(3))).body).toMatchObject({ id: 3, error: { code: -32000, data: { reason: 'refused', code: -32002 } } });
    workbench.behaviour = 'silent';
    const pending = mcpPost(run.runId, run.mcp.token, request(4));
    await until(() => workbench.assertions.length >= 4);
    workbench.close();
    expect((await pending).body).toMatchObject({ id: 4, error: { code: -32000, data: { reason: 'disconnected' } } });
  });
});

describe('HTTP refusals', () => {
  let run: { runId: string; mcp: { token: string } };
  let other: { runId: string; mcp: { token: string } };
  beforeAll(async () => {
    run = await registerRun();
    other = await registerRun();
  });

  it('401 without a credential, with a device token, or with the DPoP scheme', async () => {
    const none = await call(platform, 'post', `/cloud-agents/v1/runs/${run.runId}/mcp`, { host, body: request(1) });
    expect(none.status).toBe(401);
    expect((await mcpPost(run.runId, device.tokens.access_token, request(1))).status).toBe(401);
    const dpop = await call(platform, 'post', `/cloud-agents/v1/runs/${run.runId}/mcp`, { host, headers: { Authorization: `DPoP ${run.mcp.token}` }, body: request(1) });
    expect(dpop.status).toBe(401);
  });

  it("404 with another run's credential", async () => {
    const res = await mcpPost(run.runId, other.mcp.token, request(1));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it('405 on GET and DELETE, with Allow: POST, from the route registry, as the document declares', async () => {
    for (const method of ['get', 'delete'] as const) {
      const res = await call(platform, method, `/cloud-agents/v1/runs/${run.runId}/mcp`, { host, headers: { Authorization: `Bearer ${run.mcp.token}` } });
      expect(res.status).toBe(405);
      expect(res.headers.allow).toBe('POST');
      expect(res.body).toEqual({ error: 'method_not_allowed', message: 'this method is not allowed on this path' });
    }
    const { body } = await call(platform, 'get', '/openapi.json', { host });
    const item = body.paths['/cloud-agents/v1/runs/{runId}/mcp'];
    expect(Object.keys(item).sort()).toEqual(['delete', 'get', 'post']);
    for (const method of ['get', 'delete']) {
      expect(Object.keys(item[method].responses).sort()).toEqual(['400', '405', 'default']);
      expect(item[method].responses['405'].content['application/json'].schema.properties.error.enum).toEqual(['method_not_allowed']);
    }
    // Body errors are JSON-RPC error responses, beside the API's own codes.
    const badRequest = item.post.responses['400'].content['application/json'].schema.oneOf;
    expect(badRequest[0].properties.error.enum).toEqual(['invalid_request']);
    expect(badRequest[1].allOf).toEqual([{ $ref: '#/components/schemas/JsonRpcErrorResponse' }]);
    expect(badRequest[1].properties.error.properties.code.enum).toEqual([-32700, -32600]);
  });

  it('413 for more than 1 MB, before the body is read', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { blob: 'x'.repeat(1024 * 1024) } });
    const res = await mcpPost(run.runId, run.mcp.token, big);
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it('415 for another media type or charset, 406 when JSON is not acceptable, in the error body', async () => {
    const text = await mcpPost(run.runId, run.mcp.token, JSON.stringify(request(1)), { 'Content-Type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.body.error).toBe('unsupported_media_type');
    const latin = await mcpPost(run.runId, run.mcp.token, JSON.stringify(request(1)), { 'Content-Type': 'application/json; charset=iso-8859-1' });
    expect(latin.status).toBe(415);
    expect(latin.body).toEqual({ error: 'unsupported_media_type', message: "the request body's charset is not supported (utf-8)" });
    const sse = await mcpPost(run.runId, run.mcp.token, request(1), { Accept: 'text/event-stream' });
    expect(sse.status).toBe(406);
    expect(sse.body.error).toBe('not_acceptable');
    const unwanted = await mcpPost(run.runId, run.mcp.token, request(1), { Accept: 'application/json;q=0, text/event-stream' });
    expect(unwanted.status).toBe(406);
  });

  it('401 at once after the run ends, and after the credential expires', async () => {
    const ending = await registerRun();
    await call(platform, 'post', `/cloud-agents/v1/runs/${ending.runId}/end`, { host, headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
    expect((await mcpPost(ending.runId, ending.mcp.token, request(1))).status).toBe(401);
    const expiring = await registerRun();
    platform.clock.advance(4 * 3600 * 1000 + 1);
    const res = await mcpPost(expiring.runId, expiring.mcp.token, request(1));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('invalid_token');
    platform.clock.set(Date.now());
  });

  it("401 at once when the run's person leaves or is removed from the organisation", async () => {
    const leaver = await createPerson(platform, organisationId);
    await platform.services.projects.setMemberRole(organisationId, projectId, leaver.id, 'contributor');
    const laptop = await enrolDevice(platform, { organisationId, personId: leaver.id, name: "Leaver's laptop" });
    const run = await registerRun(laptop);
    expect((await mcpPost(run.runId, run.mcp.token, request(1))).status).toBe(200);
    await platform.dataSource.getRepository(MembershipEntity).update({ organisationId, personId: leaver.id }, { removedAt: platform.clock.now() });
    const res = await mcpPost(run.runId, run.mcp.token, request(2));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it("401 once the run's device is revoked", async () => {
    const doomed = await enrolDevice(platform, { organisationId, personId, name: 'Doomed' });
    const doomedRun = await registerRun(doomed);
    await platform.services.deviceTokens.revokeDevice(doomed.device.id);
    expect((await mcpPost(doomedRun.runId, doomedRun.mcp.token, request(1))).status).toBe(401);
  });
});

describe('the rate limit', () => {
  it('refuses the request past MCP_REQUESTS_PER_MINUTE for a run (429), and counts runs apart', async () => {
    const limited = await startPlatform({ env: { MCP_REQUESTS_PER_MINUTE: '3' } });
    try {
      const id = (await createOrganisation(limited, { hosts: ['127.0.0.1'] })).id;
      const person = await createPerson(limited, id);
      const project = (await limited.services.projects.create(id, { name: 'p', owner: person.id })).id;
      const workbench = await enrolDevice(limited, { organisationId: id, personId: person.id });
      const runOf = async () =>
        (await call(limited, 'post', '/cloud-agents/v1/runs', { host: '127.0.0.1', headers: { Authorization: `Bearer ${workbench.tokens.access_token}` }, body: { provider: 'p', projectId: project, workspaceId: 'w', tools: ['t'] } })).body;
      const [first, second] = [await runOf(), await runOf()];
      const post = (r: { runId: string; mcp: { token: string } }) =>
        call(limited, 'post', `/cloud-agents/v1/runs/${r.runId}/mcp`, { host: '127.0.0.1', headers: { Authorization: `Bearer ${r.mcp.token}` }, body: request(1) });
      for (let i = 0; i < 3; i++) expect((await post(first)).status).toBe(200);
      const refused = await post(first);
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too_many_requests');
      expect(refused.headers['retry-after']).toBe('60');
      expect((await post(second)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('the control channel', () => {
  const url = () => `${origin}/relay/v1/connect`;

  it('connects a DPoP-bound workbench with a proof of GET and the http URL, and refuses a proof of anything else', async () => {
    const bound = await enrolDevice(platform, { organisationId, personId, alg: 'ES256', name: 'Bound' });
    const workbench = await connect(bound);
    expect(workbench.socket.readyState).toBe(WebSocket.OPEN);
    const post = await TestWorkbench.refusal(origin, await deviceHeaders(bound, 'POST', url()));
    expect(post.status).toBe(401);
    expect(post.body.error).toBe('invalid_dpop_proof');
    const wsScheme = await TestWorkbench.refusal(origin, await deviceHeaders(bound, 'GET', url().replace(/^http/, 'ws')));
    expect(wsScheme.status).toBe(401);
    const bearer = await TestWorkbench.refusal(origin, { Authorization: `Bearer ${bound.tokens.access_token}` });
    expect(bearer.body.error).toBe('invalid_dpop_proof');
  });

  it('refuses before the upgrade: no token (401), a run credential (401), a token without relay:connect (403)', async () => {
    const none = await TestWorkbench.refusal(origin, {});
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="platform"');
    const run = await registerRun();
    expect((await TestWorkbench.refusal(origin, { Authorization: `Bearer ${run.mcp.token}` })).status).toBe(401);
    const narrow = await enrolDevice(platform, { organisationId, personId, name: 'Narrow' });
    await platform.dataSource.getRepository(DeviceEntity).update({ id: narrow.device.id }, { scope: 'organisation:read' });
    const scope = await TestWorkbench.refusal(origin, { Authorization: `Bearer ${narrow.tokens.access_token}` });
    expect(scope.status).toBe(403);
    expect(scope.body.error).toBe('insufficient_scope');
  });

  it('answers 426 to a request that is not an upgrade', async () => {
    const res = await call(platform, 'get', '/relay/v1/connect', { host, headers: { Authorization: `Bearer ${device.tokens.access_token}` } });
    expect(res.status).toBe(426);
    expect(res.body.error).toBe('upgrade_required');
    expect(res.headers.upgrade).toBe('websocket');
  });

  it('replaces the older socket of a device that connects again (4000); calls go to the newer one', async () => {
    const twice = await enrolDevice(platform, { organisationId, personId, name: 'Twice' });
    const first = await connect(twice);
    const second = await connect(twice);
    expect(await first.closed).toEqual({ code: 4000, reason: 'replaced by a newer connection of this device' });
    const run = await registerRun(twice);
    const res = await mcpPost(run.runId, run.mcp.token, request(1));
    expect(res.body.result.tools).toHaveLength(1);
    expect(second.assertions).toHaveLength(1);
    expect(first.assertions).toHaveLength(0);
  });

  it('answers a request from the workbench with -32601, a frame that is not JSON with -32700, and closes on a binary frame (1003)', async () => {
    const chatty = await enrolDevice(platform, { organisationId, personId, name: 'Chatty' });
    const workbench = await connect(chatty);
    const frames: unknown[] = [];
    workbench.socket.on('message', (data) => frames.push(JSON.parse(data.toString())));
    workbench.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'anything' }));
    workbench.socket.send('not json');
    await until(() => frames.length === 2);
    expect(frames).toEqual([
      { jsonrpc: '2.0', id: 9, error: { code: -32601, message: 'Method not found: anything' } },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the frame is not JSON' } },
    ]);
    workbench.socket.send(Buffer.from([1, 2, 3]), { binary: true });
    expect((await workbench.closed).code).toBe(1003);
  });
});

describe('heartbeats and tokens on the channel', () => {
  let beating: TestPlatform;
  let beatingServer: Awaited<ReturnType<typeof listen>>;
  let beatingOrganisation: string;
  let beatingPerson: string;

  beforeAll(async () => {
    beating = await startPlatform({ env: { RELAY_HEARTBEAT_MS: '100' } });
    beatingOrganisation = (await createOrganisation(beating, { hosts: ['127.0.0.1'] })).id;
    beatingPerson = (await createPerson(beating, beatingOrganisation)).id;
    beatingServer = await listen(beating);
  });
  afterAll(async () => {
    await beatingServer.close();
    await beating.close();
  });

  it('drops a socket that does not answer pings, and keeps one that does', async () => {
    const deaf = await TestWorkbench.connect(beatingServer.origin, await enrolDevice(beating, { organisationId: beatingOrganisation, personId: beatingPerson }), beating.clock, { autoPong: false });
    const alive = await TestWorkbench.connect(beatingServer.origin, await enrolDevice(beating, { organisationId: beatingOrganisation, personId: beatingPerson }), beating.clock);
    expect((await deaf.closed).code).toBe(1006);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(alive.socket.readyState).toBe(WebSocket.OPEN);
    alive.close();
  });

  it('closes the socket (4001) once its access token expires or its device is revoked', async () => {
    const expiring = await TestWorkbench.connect(beatingServer.origin, await enrolDevice(beating, { organisationId: beatingOrganisation, personId: beatingPerson }), beating.clock);
    const revokedDevice = await enrolDevice(beating, { organisationId: beatingOrganisation, personId: beatingPerson });
    const revoked = await TestWorkbench.connect(beatingServer.origin, revokedDevice, beating.clock);
    await beating.services.deviceTokens.revokeDevice(revokedDevice.device.id);
    expect(await revoked.closed).toEqual({ code: 4001, reason: 'the access token expired or the device was revoked' });
    expect(expiring.socket.readyState).toBe(WebSocket.OPEN);
    beating.clock.advance(3600 * 1000 + 1);
    expect((await expiring.closed).code).toBe(4001);
  });

  it('closes every socket with 1001 when the service stops', async () => {
    const stopping = await startPlatform();
    const id = (await createOrganisation(stopping, { hosts: ['127.0.0.1'] })).id;
    const person = (await createPerson(stopping, id)).id;
    const stoppingServer = await listen(stopping);
    const workbench = await TestWorkbench.connect(stoppingServer.origin, await enrolDevice(stopping, { organisationId: id, personId: person }), stopping.clock);
    await stopping.stop();
    expect((await workbench.closed).code).toBe(1001);
    await stoppingServer.close();
    await stopping.close();
  });
});

describe('GET /.well-known/jwks.json', () => {
  it('publishes the public signing keys, cacheable five minutes', async () => {
    const res = await call(platform, 'get', '/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.body.keys.length).toBeGreaterThanOrEqual(1);
    for (const key of res.body.keys) {
      expect(key).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(key.d).toBeUndefined();
    }
  });
});
