import { randomUUID } from 'node:crypto';
import { isCluster, subscriberOf, type RedisClient } from './redis.js';
import type { Logger } from 'pino';
import {
  NOT_CONNECTED,
  type LocalDelivery,
  type PolicyChange,
  type RelayCallParams,
  type RelayOutcome,
  type RelayRouting,
} from '../../src/state/relay-routing.js';

/**
 * Relay presence and routing shared by every replica through Redis.
 *
 * - Presence: `<prefix>presence:<deviceId>` holds `<replica> <connection>` of the socket that
 *   holds the device, with an expiry of a few heartbeats that each heartbeat renews; a replica
 *   that dies leaves it to expire. A new connection swaps itself in atomically and tells the
 *   previous holder (on another replica) to close its socket.
 * - Calls: each replica subscribes (on a connection of its own) to `<prefix>replica:<id>`. A call
 *   for a device held elsewhere is published to the holder's channel with a fresh id and the
 *   caller's channel; the holder sends it on the socket and publishes the outcome back. The
 *   caller's own timer decides the timeout. A holder that is gone (nobody subscribed) is known at
 *   once: the publish reaches no one.
 * - Policy changes (docs/api/policy-push.md): every replica also subscribes to `<prefix>policy`.
 *   The replica where a publish committed tells its own sockets at once and publishes the change
 *   there (scope, number, revision: never the document); every other replica tells its own.
 * Messages are JSON; everything that travels is what the socket would carry anyway (the MCP
 * message and its signed assertion). Redis is trusted infrastructure here as for rate limits and
 * the replay cache; the assertion's signature is what the workbench relies on.
 */

/** A failure's first line, never its stack (Redis errors repeat while it is away). */
function reasonOf(error: unknown): string {
  return ((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '').slice(0, 300);
}

type Wire =
  | { t: 'call'; id: string; from: string; deviceId: string; params: RelayCallParams; timeoutMs: number }
  | { t: 'answer'; id: string; outcome: RelayOutcome }
  | { t: 'evict'; deviceId: string; connectionId: string }
  | { t: 'policy'; from: string; change: PolicyChange };

const policyChannel = (prefix: string) => `${prefix}policy`;

/**
 * Tells every replica's sockets of a policy change (docs/api/policy-push.md): what a replica's
 * routing does for its own publishes, and the command line for its own (it holds no sockets).
 * `from` is the sender, whose own copy its routing ignores.
 */
export async function publishPolicyChange(redis: RedisClient, change: PolicyChange, from: string, prefix = 'platform:relay:'): Promise<void> {
  const message: Wire = { t: 'policy', from, change };
  // On a cluster, sharded like the subscriptions (every replica holds one on this channel's shard).
  if (isCluster(redis)) await redis.spublish(policyChannel(prefix), JSON.stringify(message));
  else await redis.publish(policyChannel(prefix), JSON.stringify(message));
}

/** Swap in the new holder, answering the previous one. */
const CLAIM = `local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return old`;
/** Renew our claim; take it again if it lapsed; 0 when someone else holds it. */
const REFRESH = `local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
/** Delete our claim only. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

interface RelayCommands {
  relayClaim(key: string, value: string, ttlMs: number): Promise<string | null>;
  relayRefresh(key: string, value: string, ttlMs: number): Promise<number>;
  relayRelease(key: string, value: string): Promise<number>;
}

export interface RedisRelayOptions {
  /** How long a claim lives without a heartbeat. */
  presenceTtlMs: number;
  prefix?: string;
  logger: Logger;
}

export class RedisRelayRouting implements RelayRouting {
  readonly kind = 'redis' as const;
  readonly replicaId = randomUUID();
  private readonly commands: RedisClient & RelayCommands;
  private readonly subscriber: RedisClient;
  private readonly prefix: string;
  private readonly pending = new Map<string, (outcome: RelayOutcome) => void>();
  private local: LocalDelivery | undefined;
  private subscribed = false;
  private readonly sharded: boolean;

  constructor(
    redis: RedisClient,
    private readonly options: RedisRelayOptions,
  ) {
    this.prefix = options.prefix ?? 'platform:relay:';
    this.commands = redis as RedisClient & RelayCommands;
    this.commands.defineCommand('relayClaim', { numberOfKeys: 1, lua: CLAIM });
    this.commands.defineCommand('relayRefresh', { numberOfKeys: 1, lua: REFRESH });
    this.commands.defineCommand('relayRelease', { numberOfKeys: 1, lua: RELEASE });
    // Subscribing needs a connection of its own. It queues SUBSCRIBE until it connects and
    // subscribes again after every reconnection (ioredis' autoResubscribe).
    // On a cluster, sharded pub/sub: a publish's answer counts the channel's subscribers
    // cluster-wide only there (adapters/state/redis.ts `subscriberOf`).
    this.sharded = isCluster(redis);
    this.subscriber = subscriberOf(redis, { sharded: this.sharded });
    // The shared connection logs every attempt to reach Redis (one line each, no stack); this one
    // would only repeat it. Readiness says `relay: not subscribed` meanwhile.
    this.subscriber.on('error', () => undefined);
    this.subscriber.on('ready', () => {
      this.subscribed = true;
    });
    this.subscriber.on('close', () => {
      this.subscribed = false;
    });
  }

  private channel(replicaId: string): string {
    return `${this.prefix}replica:${replicaId}`;
  }

  private policyChannel(): string {
    return policyChannel(this.prefix);
  }

  private presenceKey(deviceId: string): string {
    return `${this.prefix}presence:${deviceId}`;
  }

  private holder(connectionId: string): string {
    return `${this.replicaId} ${connectionId}`;
  }

  async start(local: LocalDelivery): Promise<void> {
    this.local = local;
    this.subscriber.on(this.sharded ? 'smessage' : 'message', (_channel: string, text: string) => this.receive(text));
    this.subscriber.connect().catch(() => undefined);
    // Queued until Redis answers: a replica started while Redis is away subscribes when it comes
    // back, and readiness says `relay: not subscribed` until then. Start-up waits for it only
    // while Redis answers (a moment), never for Redis to come back.
    // On a cluster each channel is its own shard subscription (two channels are two slots); the
    // policy channel is one every replica subscribes to, so a sharded publish reaches them all.
    const channel = this.channel(this.replicaId);
    const subscribed = (
      this.sharded ? Promise.all([this.subscriber.ssubscribe(channel), this.subscriber.ssubscribe(this.policyChannel())]) : this.subscriber.subscribe(channel, this.policyChannel())
    ).then(
      () => {
        this.subscribed = true;
      },
      (error: unknown) => this.options.logger.warn({ reason: reasonOf(error) }, 'relay subscriber: could not subscribe yet'),
    );
    if (this.commands.status === 'ready') await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
  }

  async stop(): Promise<void> {
    // Each settle removes its own entry.
    for (const settle of [...this.pending.values()]) settle({ ok: false, reason: 'unavailable', message: 'this replica is shutting down' });
    this.subscriber.disconnect();
  }

  healthy(): boolean {
    return this.subscribed && this.subscriber.status === 'ready';
  }

  async claim(deviceId: string, connectionId: string): Promise<void> {
    const previous = await this.commands.relayClaim(this.presenceKey(deviceId), this.holder(connectionId), this.options.presenceTtlMs);
    if (!previous) return;
    const [replica, connection] = previous.split(' ');
    if (replica && connection && replica !== this.replicaId) {
      await this.publish(replica, { t: 'evict', deviceId, connectionId: connection });
    }
  }

  async refresh(deviceId: string, connectionId: string): Promise<boolean> {
    return (await this.commands.relayRefresh(this.presenceKey(deviceId), this.holder(connectionId), this.options.presenceTtlMs)) === 1;
  }

  async release(deviceId: string, connectionId: string): Promise<void> {
    await this.commands.relayRelease(this.presenceKey(deviceId), this.holder(connectionId));
  }

  async forward(deviceId: string, params: RelayCallParams, timeoutMs: number): Promise<RelayOutcome> {
    let holder: string | null;
    try {
      holder = await this.commands.get(this.presenceKey(deviceId));
    } catch {
      return { ok: false, reason: 'unavailable', message: 'the relay cannot reach its shared state just now; try again shortly' };
    }
    const replica = holder?.split(' ')[0];
    // Held by nobody, or by this replica in a claim its socket no longer backs.
    if (!replica || replica === this.replicaId) return NOT_CONNECTED;
    const id = randomUUID();
    return new Promise<RelayOutcome>((resolve) => {
      const timer = setTimeout(() => settle({ ok: false, reason: 'timeout', message: 'the workbench did not answer in time' }), timeoutMs);
      const settle = (outcome: RelayOutcome) => {
        if (!this.pending.delete(id)) return;
        clearTimeout(timer);
        resolve(outcome);
      };
      this.pending.set(id, settle);
      this.publish(replica, { t: 'call', id, from: this.replicaId, deviceId, params, timeoutMs })
        .then((receivers) => {
          // The holder is gone (its claim not yet expired): nobody will answer.
          if (receivers === 0) settle(NOT_CONNECTED);
        })
        .catch(() => settle({ ok: false, reason: 'unavailable', message: 'the relay cannot reach its shared state just now; try again shortly' }));
    });
  }

  async broadcast(change: PolicyChange): Promise<void> {
    await publishPolicyChange(this.commands, change, this.replicaId, this.prefix);
  }

  private publish(replicaId: string, message: Wire): Promise<number> {
    const channel = this.channel(replicaId);
    return this.sharded ? (this.commands.spublish(channel, JSON.stringify(message)) as Promise<number>) : this.commands.publish(channel, JSON.stringify(message));
  }

  private receive(text: string): void {
    let message: Wire;
    try {
      message = JSON.parse(text) as Wire;
    } catch {
      return;
    }
    if (message.t === 'answer') {
      this.pending.get(message.id)?.(message.outcome);
    } else if (message.t === 'policy') {
      // This replica's own publish reached its sockets before it was sent.
      if (message.from !== this.replicaId) this.local?.policyChanged(message.change);
    } else if (message.t === 'evict') {
      this.local?.evict(message.deviceId, message.connectionId);
    } else if (message.t === 'call' && this.local) {
      const { id, from, deviceId, params, timeoutMs } = message;
      void this.local
        .deliver(deviceId, params, timeoutMs)
        .then((outcome) => this.publish(from, { t: 'answer', id, outcome }))
        .catch((error: unknown) => this.options.logger.warn({ reason: reasonOf(error) }, 'relay: could not send an answer back'));
    }
  }
}
