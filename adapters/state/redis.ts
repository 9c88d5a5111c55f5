import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * The shared Redis connection (REDIS_URL): rate-limit counters, the DPoP replay cache and relay
 * presence live there when several replicas serve together. Fails fast rather than queueing
 * commands forever while Redis is away, and reconnects on its own (every 0.2 s more, at most
 * every 2 s) for as long as the service runs.
 */
export function connectRedis(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}

/**
 * One JSON line per attempt to reach Redis while it is away (the reason, the attempt, the wait
 * before the next; never a stack trace), and one when it answers again.
 */
export function logConnectionAttempts(redis: Redis, logger: Logger): void {
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
