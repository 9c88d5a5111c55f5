import type { RedisClient } from './redis.js';
import { unavailable } from '../../src/errors.js';
import type { ReplayCache } from '../../src/state/replay-cache.js';
import type { Clock } from '../../src/util/clock.js';

/**
 * The replay cache shared by every replica: `SET key 1 PX ttl NX` is atomic in RedisClient, so one
 * proof is accepted once across the whole deployment. Keys are namespaced and expire by
 * themselves. A Redis failure refuses the request with 503 `unavailable`: failing
 * open would let replays through.
 */
export class RedisReplayCache implements ReplayCache {
  constructor(
    private readonly redis: RedisClient,
    private readonly clock: Clock,
    private readonly prefix = 'platform:dpop:jti:',
  ) {}

  async unique(key: string, expiresAt: Date): Promise<boolean> {
    const ttl = Math.max(1, expiresAt.getTime() - this.clock.now().getTime());
    let answer: string | null;
    try {
      answer = await this.redis.set(this.prefix + key, '1', 'PX', ttl, 'NX');
    } catch {
      throw unavailable('the replay cache');
    }
    return answer === 'OK';
  }

  /** Readiness: the cache can write (a key of its own, gone a second later), as `unique` must. */
  async check(): Promise<'ok'> {
    await this.redis.set(`${this.prefix}readiness`, '1', 'PX', 1_000);
    return 'ok';
  }
}
