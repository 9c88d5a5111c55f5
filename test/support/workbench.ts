import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import { WebSocket } from 'ws';
import type { Clock } from '../../src/util/clock.js';
import { deviceHeaders, type EnrolledDevice } from './devices.js';
import { recordAnswer, recordSecret } from './suite-record.js';

/** The operation a WebSocket upgrade answers, as the suite's coverage check counts answers. */
const CONNECT_OPERATION = 'connectControlChannel';

/**
 * A desktop workbench as the tests need one: it holds the control channel of a real device
 * (`ws`, Bearer or DPoP like the device's other requests), checks every `cloudMcp.call`'s
 * assertion against the service's published keys (jose's remote JWK set), and answers MCP
 * messages with the official SDK's `Server` (one per run), whose tools echo their arguments.
 */

export interface VerifiedAssertion {
  payload: JWTPayload;
  kid: string | undefined;
  message: unknown;
}

export interface CloseInfo {
  code: number;
  reason: string;
}

type Behaviour = 'answer' | 'silent' | 'garbage' | 'refuse';

/** A transport that hands the SDK server one message at a time and collects what it sends back. */
class CallTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly waiting = new Map<string | number, (message: JSONRPCMessage) => void>();

  async start(): Promise<void> {}
  async close(): Promise<void> {
    this.onclose?.();
  }
  async send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && message.id !== undefined && !('method' in message)) this.waiting.get(message.id)?.(message);
  }

  /** A request's response, or null once a notification (or response) was taken. */
  handle(message: JSONRPCMessage): Promise<JSONRPCMessage | null> {
    if ('method' in message && 'id' in message && message.id !== undefined) {
      const id = message.id;
      const answered = new Promise<JSONRPCMessage>((resolve) => this.waiting.set(id, resolve));
      this.onmessage?.(message);
      return answered.finally(() => this.waiting.delete(id));
    }
    this.onmessage?.(message);
    return Promise.resolve(null);
  }
}

/** A notification the service sent (`hello`, `policy.changed`): docs/api/policy-push.md. */
export interface Notification {
  method: string;
  params: Record<string, unknown>;
  /** The frame as received, to check it carries nothing else. */
  text: string;
}

export class TestWorkbench {
  readonly assertions: VerifiedAssertion[] = [];
  /** Every notification, in order of arrival; the first frame is always `hello`. */
  readonly notifications: Notification[] = [];
  /** Frames in order of arrival, by method (`cloudMcp.call`, `hello`, `policy.changed`). */
  readonly methods: string[] = [];
  private readonly notificationWaiters = new Set<() => void>();
  readonly problems: string[] = [];
  readonly closed: Promise<CloseInfo>;
  behaviour: Behaviour = 'answer';
  private readonly servers = new Map<string, CallTransport>();
  private readonly seenJti = new Set<string>();

  private constructor(
    readonly socket: WebSocket,
    /** The `iss` every assertion must carry: the origin of the MCP endpoint the agent called. */
    private readonly issuer: string,
    private readonly device: EnrolledDevice,
    private readonly clock: Clock,
    private readonly jwks: ReturnType<typeof createRemoteJWKSet>,
  ) {
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })));
    socket.on('message', (data) => void this.receive(data.toString()));
  }

  /** Opens the control channel at `origin` (the platform listening on loopback) as `device`. */
  static async connect(
    origin: string,
    device: EnrolledDevice,
    clock: Clock,
    options: { autoPong?: boolean; headers?: Record<string, string>; issuer?: string } = {},
  ): Promise<TestWorkbench> {
    const url = `${origin}/relay/v1/connect`;
    const headers = options.headers ?? (await deviceHeaders(device, 'GET', url));
    const socket = new WebSocket(url.replace(/^http/, 'ws'), { headers, autoPong: options.autoPong ?? true });
    const jwks = createRemoteJWKSet(new URL(`${origin}/.well-known/jwks.json`), { cooldownDuration: 0 });
    const workbench = new TestWorkbench(socket, options.issuer ?? origin, device, clock, jwks);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => {
        // The handshake's 101 Switching Protocols, which no supertest request can see.
        recordAnswer(CONNECT_OPERATION, 101, undefined);
        resolve();
      });
      socket.once('unexpected-response', (_req, res) => reject(new Error(`refused with ${res.statusCode}`)));
      socket.once('error', reject);
    });
    // The service's first frame on every socket (docs/api/policy-push.md): tests start after it.
    await workbench.waitFor('hello');
    return workbench;
  }

  /** What a refused upgrade answered: status and JSON body. */
  static async refusal(origin: string, headers: Record<string, string>): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
    const socket = new WebSocket(`${origin.replace(/^http/, 'ws')}/relay/v1/connect`, { headers });
    return new Promise((resolve, reject) => {
      socket.once('open', () => reject(new Error('the upgrade was accepted')));
      socket.once('error', () => undefined);
      socket.once('unexpected-response', (_req, res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          recordAnswer(CONNECT_OPERATION, res.statusCode ?? 0, typeof body.error === 'string' ? body.error : undefined);
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
      });
    });
  }

  close(): void {
    this.socket.close(1000);
  }

  /** The notifications of `method` received so far. */
  received(method: string): Notification[] {
    return this.notifications.filter((notification) => notification.method === method);
  }

  /** Waits until `count` notifications of `method` have arrived (at most `timeoutMs`), and answers them. */
  async waitFor(method: string, count = 1, timeoutMs = 5_000): Promise<Notification[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received(method).length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.received(method).length} of ${count} ${method} notification(s) after ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.notificationWaiters.add(done);
      });
    }
    return this.received(method);
  }

  private server(runId: string): CallTransport {
    let transport = this.servers.get(runId);
    if (transport) return transport;
    transport = new CallTransport();
    const server = new Server({ name: 'test-workbench', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: 'echo', description: 'Says back what it is given.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => ({
      content: [{ type: 'text', text: `echo: ${String((request.params.arguments as { text?: unknown } | undefined)?.text ?? '')}` }],
    }));
    void server.connect(transport);
    this.servers.set(runId, transport);
    return transport;
  }

  private send(frame: object): void {
    this.socket.send(JSON.stringify(frame));
  }

  private async receive(text: string): Promise<void> {
    const frame = JSON.parse(text) as { id?: string; method?: string; params?: { runId: string; assertion: string; message: JSONRPCMessage } };
    if (typeof frame.method === 'string') this.methods.push(frame.method);
    if ((frame.method === 'hello' || frame.method === 'policy.changed') && frame.id === undefined) {
      this.notifications.push({ method: frame.method, params: frame.params as unknown as Record<string, unknown>, text });
      for (const wake of [...this.notificationWaiters]) wake();
      this.notificationWaiters.clear();
      return;
    }
    if (frame.method !== 'cloudMcp.call' || frame.id === undefined || !frame.params) {
      this.problems.push(`unexpected frame: ${text.slice(0, 200)}`);
      return;
    }
    const { runId, assertion, message } = frame.params;
    // A bearer of the run's person's authority for a minute: no log line may hold it.
    recordSecret(assertion);
    try {
      const { payload, protectedHeader } = await jwtVerify(assertion, this.jwks, {
        issuer: this.issuer,
        audience: this.device.device.id,
        algorithms: ['ES256'],
        typ: 'platform-relay+jwt',
        currentDate: this.clock.now(),
        requiredClaims: ['iat', 'exp', 'jti', 'sub'],
      });
      if (payload.sub !== this.device.device.personId) throw new Error(`sub ${payload.sub} is not the run's person`);
      if (payload.scope !== 'tasks:write') throw new Error(`scope ${String(payload.scope)}`);
      if (payload.run_id !== runId) throw new Error(`run_id ${String(payload.run_id)} is not ${runId}`);
      if ((payload.exp ?? 0) - (payload.iat ?? 0) > 600) throw new Error('the assertion lives too long');
      if (this.seenJti.has(payload.jti!)) throw new Error('a jti was used twice');
      this.seenJti.add(payload.jti!);
      this.assertions.push({ payload, kid: protectedHeader.kid, message });
    } catch (error) {
      this.problems.push(`assertion refused: ${(error as Error).message}`);
      this.send({ jsonrpc: '2.0', id: frame.id, error: { code: -32001, message: 'the assertion does not verify' } });
      return;
    }
    if (this.behaviour === 'silent') return;
    if (this.behaviour === 'garbage') {
      this.send({ jsonrpc: '2.0', id: frame.id, result: { something: 'else' } });
      return;
    }
    if (this.behaviour === 'refuse') {
      this.send({ jsonrpc: '2.0', id: frame.id, error: { code: -32002, message: 'the person declined' } });
      return;
    }
    const response = await this.server(runId).handle(message);
    this.send({ jsonrpc: '2.0', id: frame.id, result: response });
  }
}
