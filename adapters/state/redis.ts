import { Redis } from 'ioredis';

/**
 * The shared Redis connection (REDIS_URL): rate-limit counters, the DPoP replay cache and relay
 * presence live there when several replicas serve together. Fails fast rather than queueing
 * commands forever while Redis is away.
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
