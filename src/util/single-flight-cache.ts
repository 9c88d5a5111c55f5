import { SingleFlight } from './single-flight.js';

export interface SingleFlightCacheOptions<V> {
  /** How long an answer is used after it was read. */
  ttlMs: number;
  /** At most this many entries; when full, the ended ones go first, then `evictFirst` ones, then the oldest. */
  maxEntries: number;
  /**
   * In the last `refreshAheadMs` of an entry's life, a request that uses it also starts one
   * background read (shared with any other), so a key in use never ends under load. The answer
   * served is never older than `ttlMs`; a failed refresh leaves the entry to end as it would have.
   * 0 (the default): no refresh ahead.
   */
  refreshAheadMs?: number;
  /** Entries dropped before the others when the cache is full (e.g. remembered misses). */
  evictFirst?: (value: V) => boolean;
  /** Epoch ms (a Clock's, so tests move time instead of waiting). */
  now: () => number;
}

interface Entry<V> {
  value: V;
  until: number;
}

/**
 * A time-bounded cache whose concurrent misses share one look-up (`SingleFlight`): 50 requests
 * at an ended entry make one query, not 50. Errors are not cached. Used where a look-up answers
 * the same for everyone for a few seconds (tenancy's host → organisation); the caches of verified
 * credentials, which revocations drop, are `AuthCache` (src/auth/auth-cache.ts), built on the
 * same `SingleFlight`.
 */
export class SingleFlightCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private readonly flights = new SingleFlight<K, V>();

  constructor(private readonly options: SingleFlightCacheOptions<V>) {}

  get size(): number {
    return this.entries.size;
  }

  /** The answer for `key`: the cached one while it lasts, else `load`'s (one load for all concurrent callers). */
  get(key: K, load: (key: K) => Promise<V>): Promise<V> {
    const now = this.options.now();
    const entry = this.entries.get(key);
    if (entry && entry.until > now) {
      const ahead = this.options.refreshAheadMs ?? 0;
      if (ahead > 0 && entry.until - now <= ahead && !this.flights.has(key)) {
        this.load(key, load).catch(() => undefined);
      }
      return Promise.resolve(entry.value);
    }
    return this.load(key, load);
  }

  /** Forgets every entry (runs under way still answer their callers, and store what they read). */
  clear(): void {
    this.entries.clear();
  }

  private load(key: K, load: (key: K) => Promise<V>): Promise<V> {
    return this.flights.run(key, async () => {
      const value = await load(key);
      this.store(key, value);
      return value;
    });
  }

  private store(key: K, value: V): void {
    const now = this.options.now();
    this.entries.delete(key);
    if (this.options.maxEntries <= 0 || this.options.ttlMs <= 0) return;
    if (this.entries.size >= this.options.maxEntries) {
      for (const [other, entry] of this.entries) if (entry.until <= now) this.entries.delete(other);
      const evictFirst = this.options.evictFirst;
      if (evictFirst && this.entries.size >= this.options.maxEntries) {
        for (const [other, entry] of this.entries) if (evictFirst(entry.value)) this.entries.delete(other);
      }
      while (this.entries.size >= this.options.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, { value, until: now + this.options.ttlMs });
  }
}
