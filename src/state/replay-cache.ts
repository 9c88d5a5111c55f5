/**
 * Remembers one-time values (DPoP proof `jti`s) until they expire. `unique` is atomic: of two
 * concurrent calls with the same key, exactly one gets `true`. In-process for one replica
 * (adapters/state/memory-replay-cache.ts), Redis for several (adapters/state/redis-replay-cache.ts).
 */
export interface ReplayCache {
  /** True the first time `key` is seen before `expiresAt`; false for every later sighting. */
  unique(key: string, expiresAt: Date): Promise<boolean>;
}
