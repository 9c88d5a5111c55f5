import type { Clock } from '../util/clock.js';
import { SingleFlight } from '../util/single-flight.js';
import type { AuthRevocations } from './revocations.js';

export interface AuthCacheOptions {
  /** AUTH_CACHE_MAX_ENTRIES: at most this many entries; the oldest go first. 0 turns the cache off. */
  maxEntries: number;
  /** AUTH_CACHE_MAX_AGE_SECONDS: an entry is trusted at most this long after it was verified. */
  maxAgeSeconds: number;
}

interface Entry<T> {
  value: T;
  /** Epoch ms after which the entry is not used: verified + max age, or the credential's end. */
  until: number;
}

/**
 * Verified credentials (by the SHA-256 of the token, never the token itself), kept for at most
 * `maxAgeSeconds` and never past the credential's own expiry, in insertion order with a hard
 * bound on their number. Everything is dropped at once when `AuthRevocations` says something
 * ended (src/auth/revocations.ts); an entry computed across such a drop is not stored.
 *
 * Concurrent misses of one key share one look-up (`once`, src/util/single-flight.ts), but only
 * within a generation: a request that arrives after a drop never waits for a look-up that began
 * before it, so sharing makes no revocation later than it is without the cache. Failures and
 * refusals are handed to the requests that shared the look-up and never kept.
 */
export class AuthCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly maxAgeMs: number;
  private readonly flights = new SingleFlight<string, unknown>();

  constructor(
    readonly name: string,
    private readonly options: AuthCacheOptions,
    private readonly clock: Clock,
    private readonly revocations: AuthRevocations,
  ) {
    this.maxAgeMs = options.maxAgeSeconds * 1000;
    revocations.register(this);
  }

  get enabled(): boolean {
    return this.options.maxEntries > 0 && this.maxAgeMs > 0;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The generation to hand back to `set`: read it before the look-up whose result is stored. */
  begin(): number {
    return this.revocations.generation;
  }

  /** Waits for the counter reading when one is due (at most once a second). */
  fresh(): Promise<void> | undefined {
    return this.enabled ? this.revocations.fresh() : undefined;
  }

  get(key: string): T | undefined {
    if (!this.enabled) return undefined;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= this.clock.now().getTime()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Stores `value` unless the caches were dropped since `generation` was read. */
  set(key: string, value: T, generation: number, expiresAt?: Date | number): void {
    if (!this.enabled || generation !== this.revocations.generation) return;
    const now = this.clock.now().getTime();
    const end = expiresAt === undefined ? Number.POSITIVE_INFINITY : typeof expiresAt === 'number' ? expiresAt : expiresAt.getTime();
    const until = Math.min(now + this.maxAgeMs, end);
    if (until <= now) return;
    this.entries.delete(key);
    // The oldest first (insertion order: with one max age, also nearly the order they end in).
    while (this.entries.size >= this.options.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, until });
  }

  /**
   * Runs `lookUp` (the miss path: `begin`, the query, `set`) once for all concurrent callers with
   * the same `key` in the current generation; the cache off, every caller runs its own.
   */
  once<R>(key: string, lookUp: () => Promise<R>): Promise<R> {
    if (!this.enabled) return lookUp();
    return this.flights.run(`${this.revocations.generation}\n${key}`, lookUp) as Promise<R>;
  }

  clear(): void {
    this.entries.clear();
  }
}
