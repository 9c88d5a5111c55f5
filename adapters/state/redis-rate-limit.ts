import { createHash } from 'node:crypto';
import { primariesOf, type RedisClient } from './redis.js';
import { RedisStore } from 'rate-limit-redis';
import { ProbeFailure } from '../../src/readiness.js';

/**
 * Rate-limit counters in Redis (rate-limit-redis), made to recover on their own when Redis goes
 * away and comes back, including when it was away when the service started.
 *
 * rate-limit-redis runs its counters as Lua scripts by SHA1 (`EVALSHA`). Its store sends
 * `SCRIPT LOAD` once, when it is created, and keeps the promise of the answer; on a `NOSCRIPT`
 * error (Redis restarted and forgot its scripts) it loads the script again and retries once.
 * Two ways that breaks: a `SCRIPT LOAD` that fails (Redis away at start, or away again when
 * `NOSCRIPT` made it reload) leaves a rejected promise in the store, and every later request
 * fails on it, for good, even after Redis is back.
 *
 * The store sends its commands through `send` here, which answers a `SCRIPT LOAD` that RedisClient
 * could not take with the SHA1 of the script, computed here: exactly what Redis would have
 * answered (it names scripts by the SHA1 hex of their text). The store so always holds the right
 * SHA; while Redis is away its `EVALSHA` fails (the request is refused with 503, never let
 * through), and once Redis is back without the script, `EVALSHA` says `NOSCRIPT` and the store
 * loads it again itself. On top of that, every script seen is loaded again as soon as the
 * connection is ready after a reconnect, so the first request after an outage does not pay for
 * it, and `check()` (readiness) loads any that is missing.
 */
export class RedisRateLimitStores {
  /** Every script a store has asked to load, by its SHA1. */
  private readonly scripts = new Map<string, string>();

  constructor(private readonly redis: RedisClient) {
    redis.on('ready', () => void this.loadMissing().catch(() => undefined));
  }

  /** One store per rule, its keys under `platform:rl:<rule>:` (src/http/rate-limit.ts `RateLimits` takes this factory). */
  stores(): (rule: { name: string }) => RedisStore {
    return (rule) =>
      new RedisStore({
        prefix: `platform:rl:${rule.name}:`,
        sendCommand: (command: string, ...args: string[]) => this.send(command, args) as never,
      });
  }

  /**
   * Usable when every script the stores run is loaded in Redis (any missing one is loaded now).
   * Redis away: it throws as any unreachable part does; Redis answering but refusing the scripts
   * (an ACL, a read-only replica): `scripts not loaded`.
   */
  async check(): Promise<'ok'> {
    await this.redis.ping();
    try {
      await this.loadMissing();
    } catch {
      throw new ProbeFailure('scripts not loaded');
    }
    return 'ok';
  }

  /** The SHAs of the scripts the stores run (tests compare them with what Redis answers). */
  get scriptShas(): string[] {
    return [...this.scripts.keys()];
  }

  private async send(command: string, args: string[]): Promise<unknown> {
    const [subcommand, script] = args;
    if (command.toUpperCase() === 'SCRIPT' && subcommand?.toUpperCase() === 'LOAD' && script !== undefined) {
      const sha = createHash('sha1').update(script, 'utf8').digest('hex');
      this.scripts.set(sha, script);
      try {
        // On a cluster, on every primary: EVALSHA runs on the primary of the counter's key.
        const [answer] = await Promise.all(primariesOf(this.redis).map((node) => node.call('SCRIPT', 'LOAD', script)));
        return answer ?? sha;
      } catch {
        return sha;
      }
    }
    return this.redis.call(command, ...args);
  }

  private async loadMissing(): Promise<void> {
    const shas = this.scriptShas;
    if (shas.length === 0) return;
    await Promise.all(
      primariesOf(this.redis).map(async (node) => {
        const loaded = (await node.call('SCRIPT', 'EXISTS', ...shas)) as number[];
        await Promise.all(shas.filter((_, index) => loaded[index] !== 1).map((sha) => node.call('SCRIPT', 'LOAD', this.scripts.get(sha)!)));
      }),
    );
  }
}
