/**
 * How a call for a workbench reaches the replica that holds its control channel. One replica:
 * in process (adapters/state/memory-relay-routing.ts). Several: presence and the calls' way
 * there through Redis (adapters/state/redis-relay-routing.ts).
 */

/** The parameters of a `cloudMcp.call` (docs/api/agents.md "The workbench control channel"). */
export interface RelayCallParams {
  runId: string;
  assertion: string;
  message: unknown;
}

export type RelayFailure = 'not_connected' | 'timeout' | 'disconnected' | 'unavailable' | 'refused';

/** What a relayed call ended as: the workbench's `result`, or why there is none. */
export type RelayOutcome =
  | { ok: true; result: unknown }
  | { ok: false; reason: RelayFailure; message: string; code?: number | undefined };

/**
 * A policy publish or restore that committed (docs/api/policy-push.md): which scope changed, the
 * publish's number and the scope's effective revision right after it. Never the document.
 */
export interface PolicyChange {
  organisationId: string;
  /** Null: the organisation's policy; otherwise the project whose override changed. */
  projectId: string | null;
  /** The publish number (per organisation, as `…/revisions` lists them). */
  number: number;
  /** The scope's effective revision right after the publish: the ETag of `GET /policy/v1` (with `projectId` for a project), unquoted. */
  revision: string;
}

/** The replica's own sockets, as the routing hands calls and evictions to them. */
export interface LocalDelivery {
  /** Sends the call on this replica's socket of the device and waits for the answer. */
  deliver(deviceId: string, params: RelayCallParams, timeoutMs: number): Promise<RelayOutcome>;
  /** Closes this replica's socket of the device if it is still `connectionId` (a newer one took over elsewhere). */
  evict(deviceId: string, connectionId: string): void;
  /** Tells this replica's sockets to which the change applies (another replica's publish). */
  policyChanged(change: PolicyChange): void;
}

export interface RelayRouting {
  /** 'in process' or 'redis', for readiness. */
  readonly kind: 'in process' | 'redis';
  start(local: LocalDelivery): Promise<void>;
  stop(): Promise<void>;
  /** Whether calls can travel between replicas now (always, in process). */
  healthy(): boolean;
  /** This replica holds the device's socket now; a holder elsewhere is told to close its own. */
  claim(deviceId: string, connectionId: string): Promise<void>;
  /** Keeps the claim alive (every heartbeat); false when another connection holds it now. */
  refresh(deviceId: string, connectionId: string): Promise<boolean>;
  /** The socket closed: forget the claim, unless a newer connection holds it. */
  release(deviceId: string, connectionId: string): Promise<void>;
  /** A call for a device whose socket is not on this replica. */
  forward(deviceId: string, params: RelayCallParams, timeoutMs: number): Promise<RelayOutcome>;
  /** A policy change made on this replica, for every other replica's sockets (none in process). */
  broadcast(change: PolicyChange): Promise<void>;
}

export const NOT_CONNECTED: RelayOutcome = { ok: false, reason: 'not_connected', message: 'the workbench that started the run is not connected' };
