import type { ReplayCache } from '../../src/state/replay-cache.js';
import type { Clock } from '../../src/util/clock.js';

/**
 * The replay cache of a single replica. Entries are dropped once expired (swept as new ones
 * arrive), so memory stays proportional to the proofs seen within the acceptance window.
 */
export class MemoryReplayCache implements ReplayCache {
  private readonly entries = new Map<string, number>();
  private nextSweep = 0;

  constructor(
    private readonly clock: Clock,
    private readonly sweepEveryMs = 10_000,
  ) {}

  async unique(key: string, expiresAt: Date): Promise<boolean> {
    const now = this.clock.now().getTime();
    if (now >= this.nextSweep) this.sweep(now);
    const seenUntil = this.entries.get(key);
    if (seenUntil !== undefined && seenUntil > now) return false;
    this.entries.set(key, expiresAt.getTime());
    return true;
  }

  get size(): number {
    return this.entries.size;
  }

  private sweep(now: number): void {
    for (const [key, until] of this.entries) if (until <= now) this.entries.delete(key);
    this.nextSweep = now + this.sweepEveryMs;
  }
}
