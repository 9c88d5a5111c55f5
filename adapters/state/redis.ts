import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { REDIS_MODES } from '../../src/config/variables.js';

/**
 * The shared Redis: one server, a Redis Cluster, or a Sentinel-managed primary. Every part that
 * uses it (rate limits, the DPoP replay cache, relay presence and routing, revocation fan-out)
 * takes this type; ioredis' `Cluster` answers the same commands as `Redis`.
 */
export type RedisClient = Redis | Cluster;

export type RedisMode = (typeof REDIS_MODES)[number];

export interface RedisSettings {
  /** REDIS_URL: `redis[s]://[user:password@]host:port[,host:port…][/db]`. */
  url: string;
  /** REDIS_MODE (default `standalone`). */
  mode?: RedisMode;
  /** REDIS_SENTINEL_NAME: the primary's name the sentinels know it by (Sentinel only). */
  sentinelName?: string | undefined;
}

/** REDIS_URL taken apart: several addresses (cluster seeds, sentinels) are comma-separated. */
export interface RedisAddress {
  tls: boolean;
  username: string | undefined;
  password: string | undefined;
  hosts: { host: string; port: number }[];
  db: number | undefined;
}

const URL_SHAPE = /^(rediss?):\/\/(?:([^@/?#]*)@)?([^/?#]+)(?:\/(\d*))?\/?$/;
const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+))(?::(\d{1,5}))?$/;

/** Parses REDIS_URL; throws an Error naming the part that is wrong (never the password). */
export function parseRedisUrl(url: string, defaultPort = 6379): RedisAddress {
  const match = URL_SHAPE.exec(url);
  if (!match) throw new Error('must be redis[s]://[user:password@]host:port[,host:port…][/db]');
  const [, scheme, userinfo, authority, db] = match;
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined && userinfo !== '') {
    const colon = userinfo.indexOf(':');
    try {
      username = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon)) || undefined;
      password = colon < 0 ? undefined : decodeURIComponent(userinfo.slice(colon + 1)) || undefined;
    } catch {
      throw new Error('the user or password is not properly percent-encoded');
    }
  }
  const hosts = authority!.split(',').map((entry) => {
    const parts = HOST_PORT.exec(entry.trim());
    const port = Number(parts?.[3] ?? defaultPort);
    if (!parts || port < 1 || port > 65535) throw new Error(`"${entry.trim().slice(0, 100)}" is not a host:port`);
    return { host: parts[1] ?? parts[2]!, port };
  });
  return { tls: scheme === 'rediss', username, password, hosts, db: db ? Number(db) : undefined };
}

/** What every connection shares: fail fast rather than queue forever, reconnect on its own. */
const COMMON: RedisOptions = {
  lazyConnect: true,
  maxRetriesPerRequest: 1,
  enableOfflineQueue: false,
  connectTimeout: 2_000,
  retryStrategy: (times) => Math.min(times * 200, 2_000),
};

/**
 * Commands issued in the same tick go out in one write (ioredis auto-pipelining): under load,
 * the replay cache's SET NX of many requests shares one round trip. Each command stays atomic on
 * its own (a pipeline is not a transaction and needs none here). Subscriber connections never
 * pipeline (`subscriberOf`).
 */
const PIPELINING: RedisOptions = { enableAutoPipelining: true };

/**
 * The shared Redis connection (REDIS_URL, REDIS_MODE): rate-limit counters, the DPoP replay cache,
 * relay presence and revocation fan-out live there when several replicas serve together. Fails
 * fast rather than queueing commands forever while Redis is away, and reconnects on its own (every
 * 0.2 s more, at most every 2 s) for as long as the service runs.
 *
 * - `standalone`: one server, REDIS_URL as ioredis reads it.
 * - `cluster`: REDIS_URL names one or more seed nodes; ioredis learns the rest, follows MOVED/ASK
 *   and a failover (a replica promoted). Every key the service writes is used alone (one key per
 *   command or script), so no key needs a hash tag to share a slot with another; pub/sub
 *   (relay calls, revocations) is cluster-wide.
 * - `sentinel`: REDIS_URL names the sentinels; the primary is the one they name
 *   REDIS_SENTINEL_NAME, followed on a failover. The URL's user and password are the primary's.
 */
export function connectRedis(url: string): Redis;
export function connectRedis(settings: RedisSettings): RedisClient;
export function connectRedis(settings: string | RedisSettings): RedisClient {
  const { url, mode = 'standalone', sentinelName } = typeof settings === 'string' ? { url: settings } : settings;
  if (mode === 'standalone') return new Redis(url, { ...COMMON, ...PIPELINING });
  const address = parseRedisUrl(url, mode === 'sentinel' ? 26379 : 6379);
  const auth = { ...(address.username ? { username: address.username } : {}), ...(address.password ? { password: address.password } : {}) };
  const tls = address.tls ? { tls: {} } : {};
  if (mode === 'sentinel') {
    if (!sentinelName) throw new Error('REDIS_SENTINEL_NAME is required with REDIS_MODE=sentinel');
    return new Redis({
      ...COMMON,
      ...PIPELINING,
      ...auth,
      ...(address.db !== undefined ? { db: address.db } : {}),
      ...(address.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
      sentinels: address.hosts,
      name: sentinelName,
      role: 'master',
      // Told of a failover by the sentinels at once, not at the next failed command.
      failoverDetector: true,
      sentinelRetryStrategy: (times) => Math.min(times * 200, 2_000),
    });
  }
  const nodes: ClusterNode[] = address.hosts;
  return new Cluster(nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    ...PIPELINING,
    scaleReads: 'master',
    clusterRetryStrategy: (times) => Math.min(times * 200, 2_000),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    redisOptions: { ...auth, ...tls, connectTimeout: 2_000, maxRetriesPerRequest: 1 },
  });
}

/**
 * A connection of its own for SUBSCRIBE (a subscribed connection takes no other command): it
 * queues SUBSCRIBE until it connects and subscribes again after every reconnection, never
 * auto-pipelined. On a cluster, ioredis subscribes on one node and PUBLISH reaches every node,
 * but its answer counts only that node's subscribers: a caller that needs the count (relay
 * routing: "is anyone holding this device?") uses sharded pub/sub (`sharded`: SSUBSCRIBE,
 * SPUBLISH, Redis 7), where a channel lives on the shard of its slot and the count is exact.
 */
/** Whether `redis` is a cluster client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

export function subscriberOf(redis: RedisClient, options: { sharded?: boolean } = {}): RedisClient {
  const common = { lazyConnect: true, enableOfflineQueue: true, enableAutoPipelining: false, autoResubscribe: true };
  if (redis instanceof Cluster) {
    return redis.duplicate(undefined, { ...common, shardedSubscribers: options.sharded === true, redisOptions: { ...redis.options.redisOptions, maxRetriesPerRequest: null } });
  }
  const options2 = common;
  return redis.duplicate({ ...options2, maxRetriesPerRequest: null });
}

/** The primaries of a cluster, or the one server: where a script must be loaded. */
export function primariesOf(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/**
 * One JSON line per attempt to reach Redis while it is away (the reason, the attempt, the wait
 * before the next; never a stack trace), and one when it answers again.
 */
export function logConnectionAttempts(redis: RedisClient, logger: Logger): void {
  let reason = 'connection closed';
  let attempts = 0;
  redis.on('error', (error: Error & { code?: unknown }) => {
    reason = (error.message.split('\n')[0] ?? '').slice(0, 300);
  });
  redis.on('reconnecting', (retryInMs: number) => {
    attempts += 1;
    logger.warn({ dependency: 'redis', attempt: attempts, retryInMs, reason }, 'redis not reachable; trying again');
  });
  redis.on('ready', () => {
    if (attempts > 0) logger.info({ dependency: 'redis', attempts }, 'redis reachable');
    attempts = 0;
  });
}
