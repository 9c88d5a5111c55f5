import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import {
  NOT_CONNECTED,
  type LocalDelivery,
  type PolicyChange,
  type RelayCallParams,
  type RelayOutcome,
  type RelayRouting,
} from '../../state/relay-routing.js';
import { withinJsonBounds } from '../../http/json-bounds.js';
import {
  HELLO_MAX_PROJECTS,
  HELLO_TIMEOUT_MS,
  helloFrame,
  policyChangedFrame,
  projectChangeReaches,
  scopeKey,
  type HelloPolicy,
  type PolicyPushPorts,
} from './policy-push.js';

/**
 * The workbench control channel (docs/api/agents.md "The workbench control channel"): one WebSocket per workbench at
 * `GET /relay/v1/connect`, JSON-RPC 2.0 text frames. The service calls `cloudMcp.call` with
 * `{runId, assertion, message}`; the workbench answers with the MCP response message as the
 * JSON-RPC `result` (null for a notification), or a JSON-RPC `error` when it refuses the call.
 * The first frame on every socket is the `hello` notification, and `policy.changed` notifications
 * follow policy publishes (policy-push.ts, docs/api/policy-push.md); calls wait for the hello.
 *
 * Close codes the service sends:
 * - 1001 going away: the service is shutting down (reconnect, another replica will take it);
 * - 1003 unsupported data: a binary frame (frames are JSON text);
 * - 1009 message too big: a frame over RELAY_MAX_FRAME_BYTES (sent by `ws` itself);
 * - 4000 replaced: the same device connected again (here or on another replica); the newer
 *   socket is the one that stays;
 * - 4001 token no longer valid: the access token the socket was opened with expired, or the
 *   device was revoked (checked every heartbeat); reconnect with a fresh token.
 * A socket that does not answer a ping by the next one is dropped without a close frame (1006).
 */

export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_UNSUPPORTED_DATA = 1003;
export const CLOSE_REPLACED = 4000;
export const CLOSE_TOKEN_INVALID = 4001;

/** Largest frame either way: an MCP request is at most 1 MB; answers (tool results) may be larger. */
export const RELAY_MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** Deepest nesting accepted in a frame (JSON.stringify recurses on what is relayed). */
export const MAX_JSON_DEPTH = 64;

export const CALL_METHOD = 'cloudMcp.call';

export interface ChannelOwner {
  deviceId: string;
  organisationId: string;
  /** The device's person (who approved it): whose project roles decide which project policies it hears of. */
  personId: string;
  deviceKind: 'workbench' | 'node';
  /** The access token the socket was opened with, checked again at every heartbeat. */
  accessToken: string;
}

export interface RelayHubOptions {
  heartbeatMs: number;
  callTimeoutMs: number;
  logger: Logger;
  /** Whether the socket's access token still admits its device (not expired, not revoked). */
  stillValid: (owner: ChannelOwner) => Promise<boolean>;
  /** The policy scopes that apply to a device and their revisions (hello, policy.changed). */
  policy: PolicyPushPorts;
}

interface PendingCall {
  settle: (outcome: RelayOutcome) => void;
}

class Connection {
  readonly id = randomUUID();
  alive = true;
  readonly pending = new Map<string, PendingCall>();
  /** The newest publish number this connection was told of, per policy scope. */
  private readonly told = new Map<string, number>();
  /** Changes that arrived before the hello was sent; offered once it is. */
  private waiting: PolicyChange[] | undefined = [];
  readonly ready: Promise<void>;
  private markReady!: () => void;

  constructor(
    readonly owner: ChannelOwner,
    readonly socket: WebSocket,
  ) {
    this.ready = new Promise((resolve) => (this.markReady = resolve));
  }

  get greeted(): boolean {
    return this.waiting === undefined;
  }

  /** Sends the hello (the first frame), then whatever changed meanwhile that it did not name. */
  greet(policy: HelloPolicy | null): void {
    if (this.greeted) return;
    if (policy) {
      if (policy.organisation.number !== null) this.told.set(scopeKey(null), policy.organisation.number);
      for (const project of policy.projects) if (project.number !== null) this.told.set(scopeKey(project.projectId), project.number);
    }
    this.send(helloFrame(policy));
    const waiting = this.waiting ?? [];
    this.waiting = undefined;
    for (const change of waiting) this.offer(change);
    this.markReady();
  }

  /** Sends `policy.changed` unless this connection was told of this publish, or a newer one, of the scope. */
  offer(change: PolicyChange): void {
    if (this.waiting) {
      this.waiting.push(change);
      return;
    }
    const key = scopeKey(change.projectId);
    if ((this.told.get(key) ?? 0) >= change.number) return;
    this.told.set(key, change.number);
    this.send(policyChangedFrame(change));
  }

  /** The socket closed before its hello: calls waiting for it give up. */
  abandon(): void {
    this.waiting = undefined;
    this.markReady();
  }

  send(frame: object): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  close(code: number, reason: string): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.close(code, reason);
  }
}

function jsonRpcError(id: unknown, code: number, message: string): object {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/** This replica's control channels, and the one way calls reach a workbench from here. */
export class RelayHub implements LocalDelivery {
  private readonly connections = new Map<string, Connection>();
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: RELAY_MAX_FRAME_BYTES, perMessageDeflate: false, clientTracking: false });
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly routing: RelayRouting,
    private readonly options: RelayHubOptions,
  ) {}

  async start(): Promise<void> {
    await this.routing.start(this);
    this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Closes every socket (1001) and stops taking calls. */
  async stop(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const connection of this.connections.values()) connection.close(CLOSE_GOING_AWAY, 'the service is shutting down');
    await Promise.all([...this.connections.values()].map((connection) => this.routing.release(connection.owner.deviceId, connection.id).catch(() => undefined)));
    this.connections.clear();
    await this.routing.stop();
  }

  /** Sockets open on this replica. */
  get size(): number {
    return this.connections.size;
  }

  /** Completes the upgrade of a request already authenticated as the device `owner`. */
  accept(req: IncomingMessage, socket: Duplex, head: Buffer, owner: ChannelOwner): void {
    this.server.handleUpgrade(req, socket, head, (ws) => this.attach(ws, owner));
  }

  private attach(socket: WebSocket, owner: ChannelOwner): void {
    const connection = new Connection(owner, socket);
    const previous = this.connections.get(owner.deviceId);
    this.connections.set(owner.deviceId, connection);
    if (previous) previous.close(CLOSE_REPLACED, 'replaced by a newer connection of this device');
    socket.on('message', (data, isBinary) => this.receive(connection, data, isBinary));
    socket.on('pong', () => {
      connection.alive = true;
    });
    socket.on('error', (error) => this.options.logger.debug({ err: error, deviceId: owner.deviceId }, 'relay socket error'));
    socket.on('close', (code) => this.detach(connection, code));
    this.greet(connection);
    this.routing.claim(owner.deviceId, connection.id).catch((error: unknown) => this.options.logger.warn({ reason: error instanceof Error ? error.message.split('\n')[0] : String(error), deviceId: owner.deviceId }, 'relay: could not record presence'));
    this.options.logger.info({ deviceId: owner.deviceId, organisationId: owner.organisationId, connectionId: connection.id }, 'relay channel connected');
  }

  /** Reads the current revisions and sends the hello; without them (slow or failing reads) the hello says `policy: null`. */
  private greet(connection: Connection): void {
    const { owner } = connection;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), HELLO_TIMEOUT_MS);
      timer.unref();
    });
    const read = this.options.policy
      .hello({ organisationId: owner.organisationId, personId: owner.personId, deviceKind: owner.deviceKind })
      .then((policy) => ({ ...policy, projects: policy.projects.slice(0, HELLO_MAX_PROJECTS) }))
      .catch((error: unknown) => {
        this.options.logger.warn({ deviceId: owner.deviceId, reason: error instanceof Error ? error.message.split('\n')[0] : String(error) }, 'relay: could not read the policy revisions for a hello');
        return null;
      });
    void Promise.race([read, timeout]).then((policy) => {
      clearTimeout(timer);
      connection.greet(policy);
    });
  }

  /**
   * A policy publish or restore that committed on this replica: its sockets are told at once,
   * the other replicas' through the routing.
   */
  publishPolicyChange(change: PolicyChange): void {
    this.policyChanged(change);
    this.routing.broadcast(change).catch((error: unknown) =>
      this.options.logger.warn({ organisationId: change.organisationId, reason: error instanceof Error ? error.message.split('\n')[0] : String(error) }, 'relay: could not tell the other replicas of a policy change'),
    );
  }

  /** Tells this replica's sockets to which the change applies (policy-push.ts has the rule). */
  policyChanged(change: PolicyChange): void {
    this.options.policy.forget();
    const audience = [...this.connections.values()].filter((connection) => connection.owner.organisationId === change.organisationId);
    if (audience.length === 0) return;
    if (change.projectId === null) {
      for (const connection of audience) connection.offer(change);
      return;
    }
    const workbenches = audience.filter((connection) => connection.owner.deviceKind === 'workbench');
    if (workbenches.length === 0) return;
    this.options.policy.members(change.organisationId, change.projectId).then(
      (members) => {
        if (!members) return;
        for (const connection of workbenches) {
          if (this.connections.get(connection.owner.deviceId) === connection && projectChangeReaches(connection.owner, members)) connection.offer(change);
        }
      },
      (error: unknown) =>
        this.options.logger.warn({ organisationId: change.organisationId, reason: error instanceof Error ? error.message.split('\n')[0] : String(error) }, "relay: could not read a project's members for a policy change"),
    );
  }

  private detach(connection: Connection, code: number): void {
    connection.abandon();
    const deviceId = connection.owner.deviceId;
    if (this.connections.get(deviceId) === connection) {
      this.connections.delete(deviceId);
      this.routing.release(deviceId, connection.id).catch(() => undefined);
    }
    // Each settle removes its own entry.
    for (const call of [...connection.pending.values()]) {
      call.settle({ ok: false, reason: 'disconnected', message: 'the workbench disconnected before it answered' });
    }
    this.options.logger.info({ deviceId, connectionId: connection.id, code }, 'relay channel closed');
  }

  /** A call for the device: on this replica's socket, or through the routing to the replica that holds it. */
  call(deviceId: string, params: RelayCallParams, timeoutMs = this.options.callTimeoutMs): Promise<RelayOutcome> {
    if (this.connections.has(deviceId)) return this.deliver(deviceId, params, timeoutMs);
    return this.routing.forward(deviceId, params, timeoutMs);
  }

  deliver(deviceId: string, params: RelayCallParams, timeoutMs: number): Promise<RelayOutcome> {
    const connection = this.connections.get(deviceId);
    if (!connection || connection.socket.readyState !== WebSocket.OPEN) return Promise.resolve(NOT_CONNECTED);
    // The hello is the first frame a workbench sees; a call waits for it (a moment).
    if (!connection.greeted) return connection.ready.then(() => this.deliver(deviceId, params, timeoutMs));
    const id = randomUUID();
    return new Promise<RelayOutcome>((resolve) => {
      const timer = setTimeout(() => settle({ ok: false, reason: 'timeout', message: 'the workbench did not answer in time' }), timeoutMs);
      const settle = (outcome: RelayOutcome) => {
        if (!connection.pending.delete(id)) return;
        clearTimeout(timer);
        resolve(outcome);
      };
      connection.pending.set(id, { settle });
      connection.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method: CALL_METHOD, params }), (error) => {
        if (error) settle({ ok: false, reason: 'disconnected', message: 'the workbench disconnected before it answered' });
      });
    });
  }

  evict(deviceId: string, connectionId: string): void {
    const connection = this.connections.get(deviceId);
    if (connection?.id === connectionId) connection.close(CLOSE_REPLACED, 'replaced by a newer connection of this device');
  }

  /** A frame from a workbench: an answer to one of our calls, or something we refuse politely. */
  private receive(connection: Connection, data: RawData, isBinary: boolean): void {
    if (isBinary) {
      connection.close(CLOSE_UNSUPPORTED_DATA, 'frames are JSON-RPC text');
      return;
    }
    let frame: unknown;
    try {
      frame = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
    } catch {
      connection.send(jsonRpcError(null, -32700, 'Parse error: the frame is not JSON'));
      return;
    }
    // A frame is bounded (depth; its size bounds keys and strings) before anything recursive reads it.
    if (!withinJsonBounds(frame, { maxDepth: MAX_JSON_DEPTH, maxKeys: RELAY_MAX_FRAME_BYTES, maxStringLength: RELAY_MAX_FRAME_BYTES })) {
      connection.send(jsonRpcError(null, -32600, `Invalid Request: nested deeper than ${MAX_JSON_DEPTH}`));
      return;
    }
    if (frame === null || typeof frame !== 'object' || Array.isArray(frame) || (frame as { jsonrpc?: unknown }).jsonrpc !== '2.0') {
      connection.send(jsonRpcError(null, -32600, 'Invalid Request: one JSON-RPC 2.0 object per frame'));
      return;
    }
    const message = frame as { id?: unknown; method?: unknown; result?: unknown; error?: unknown };
    if (message.method !== undefined) {
      // The service offers the workbench no methods (yet); notifications are ignored.
      if (message.id !== undefined) connection.send(jsonRpcError(message.id, -32601, `Method not found: ${String(message.method).slice(0, 100)}`));
      return;
    }
    if (typeof message.id !== 'string') return;
    const call = connection.pending.get(message.id);
    if (!call) return; // An answer after its call timed out, or to nothing we asked.
    if (message.error !== undefined) {
      // The rule takes this for no change of type (`unknown` narrowed by `!== undefined`); the fields below are read through it.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
      const error = message.error as { code?: unknown; message?: unknown } | null;
      call.settle({
        ok: false,
        reason: 'refused',
        code: typeof error?.code === 'number' && Number.isInteger(error.code) ? error.code : undefined,
        message: typeof error?.message === 'string' ? error.message.slice(0, 500) : 'the workbench refused the call',
      });
      return;
    }
    call.settle({ ok: true, result: 'result' in message ? message.result : undefined });
  }

  /** Pings every socket; drops those that missed the last one; renews presence; checks tokens. */
  private beat(): void {
    for (const connection of this.connections.values()) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      try {
        connection.socket.ping();
      } catch {
        connection.socket.terminate();
        continue;
      }
      const { deviceId } = connection.owner;
      this.routing
        .refresh(deviceId, connection.id)
        .then((held) => {
          if (!held) connection.close(CLOSE_REPLACED, 'replaced by a newer connection of this device');
        })
        .catch(() => undefined);
      this.options
        .stillValid(connection.owner)
        .then((valid) => {
          if (!valid) connection.close(CLOSE_TOKEN_INVALID, 'the access token expired or the device was revoked');
        })
        .catch(() => undefined);
    }
  }
}
