import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit, type Store } from 'express-rate-limit';
import type { ErrorCode } from '../error-codes.js';
import { ApiError, unavailable } from '../errors.js';

/**
 * Rate limits (express-rate-limit). Counters live in this process, or in Redis when REDIS_URL
 * is set so that every replica counts together (adapters/state/redis-rate-limit.ts). A limit
 * keyed by network address runs before tenancy and authentication, so refused requests cost
 * almost nothing; a limit keyed by person runs right after authentication.
 */

export interface RateLimitRule {
  /** Names the counter (and its Redis key prefix); one counter per rule, shared by its routes. */
  name: string;
  /** `address`: before tenancy and authentication; `person`, `device` (a device token's device)
   * and `run` (a run credential's run): right after authentication. */
  by: 'address' | 'person' | 'device' | 'run';
  limit: number;
  windowMs: number;
  /** The error code of the 429 (default `too_many_requests`; emailed codes answer `slow_down`). */
  code?: ErrorCode;
}

export type RateLimitStoreFactory = (rule: RateLimitRule) => Store | undefined;

export function memoryStores(): RateLimitStoreFactory {
  return () => undefined; // express-rate-limit's own MemoryStore
}

export const tooManyRequests = (retryAfterSeconds: number, code: ErrorCode = 'too_many_requests'): ApiError =>
  new ApiError(429, code, `too many requests; try again in ${retryAfterSeconds} seconds`, {
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });

export class RateLimits {
  private readonly limiters = new Map<string, RequestHandler>();

  constructor(
    private readonly stores: RateLimitStoreFactory,
    private readonly enabled: boolean,
  ) {}

  /** The middleware of a rule; routes naming the same rule share one counter. */
  handler(rule: RateLimitRule): RequestHandler {
    const existing = this.limiters.get(rule.name);
    if (existing) return existing;
    const store = this.stores(rule);
    const limiter = this.enabled
      ? rateLimit({
          windowMs: rule.windowMs,
          limit: rule.limit,
          standardHeaders: 'draft-8',
          legacyHeaders: false,
          identifier: rule.name,
          ...(store ? { store } : {}),
          // An unreachable Redis must not lift the limits.
          passOnStoreError: false,
          // An address is counted as the client's own: IPv4-mapped IPv6 as IPv4, IPv6 per /64 (one
          // subscriber's network); `req.ip` takes forwarded addresses only from TRUST_PROXY.
          keyGenerator: (req: Request) => {
            const principal = req.context.principal;
            if (rule.by === 'person') return `person:${principal?.personId ?? principal?.deviceId ?? 'none'}`;
            if (rule.by === 'run') return `run:${principal?.runId ?? 'none'}`;
            if (rule.by === 'device') return `device:${principal?.deviceId ?? 'none'}`;
            return `ip:${ipKeyGenerator(req.ip ?? '', 64)}`;
          },
          handler: (_req: Request, _res: Response, next: NextFunction) => next(tooManyRequests(Math.ceil(rule.windowMs / 1000), rule.code)),
        })
      : (_req: Request, _res: Response, next: NextFunction) => next();
    // A counter store that cannot answer (Redis away) refuses the request: 503, never unlimited.
    const guarded: RequestHandler = (req, res, next) => {
      void limiter(req, res, (error?: unknown) =>
        next(error === undefined || error instanceof ApiError ? error : unavailable('the rate-limit store')),
      );
    };
    this.limiters.set(rule.name, guarded);
    return guarded;
  }
}
