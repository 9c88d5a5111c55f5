/**
 * Concurrent callers asking for the same key share one run of the work: when a cache entry ends
 * under load, the requests in flight wait for one look-up instead of each making their own.
 * A settled run is forgotten at once, failed or not: an error is handed to the callers that
 * shared the run and never kept for the next one.
 */
export class SingleFlight<K, V> {
  private readonly running = new Map<K, Promise<V>>();

  /** The run under way for `key`, or a new one of `work`. */
  run(key: K, work: () => Promise<V>): Promise<V> {
    const current = this.running.get(key);
    if (current) return current;
    const started = Promise.resolve()
      .then(work)
      .finally(() => {
        if (this.running.get(key) === started) this.running.delete(key);
      });
    this.running.set(key, started);
    return started;
  }

  /** Whether a run is under way for `key`. */
  has(key: K): boolean {
    return this.running.has(key);
  }

  /** Runs under way. */
  get size(): number {
    return this.running.size;
  }
}
