import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Deployment } from '../config.js';
import { HOST_NAME, type OrganisationRecord } from '../domain/organisation.js';
import { unknownTenant } from '../errors.js';
import type { Clock } from '../util/clock.js';
import { SingleFlightCache } from '../util/single-flight-cache.js';
import { requestOrigin } from './origin.js';

/** Where tenancy finds the organisation served at a host: src/app.ts passes the organisation module's service. */
export interface TenantLookup {
  findByHost(host: string): Promise<OrganisationRecord | null>;
}

/**
 * Tenancy. Self-hosted: the organisation is the one served at the host of the request's trusted
 * origin (src/http/origin.ts: PLATFORM_BASE_URL's when set, else the validated Host, or the
 * forwarded host when TRUST_PROXY trusts the proxy), the same host DPoP proofs must name; no
 * match is 404 `unknown_tenant`. Cloud: one base address for everyone, the organisation comes from the
 * token (devices) or the session's `X-Platform-Organisation` header, so nothing happens here.
 *
 * Host look-ups are cached for a few seconds (`cacheMs`): every tenant request passes here. Concurrent
 * misses share one look-up, and a host in use is read again in the background in the last second
 * of its entry (src/util/single-flight-cache.ts), so an entry ending under load costs one look-up,
 * not one per request in flight. Unknown hosts are remembered as long, never at the expense of
 * the hosts that answer.
 */
export function tenancy(deployment: Deployment, organisations: TenantLookup, options: { clock: Clock; cacheMs?: number }): RequestHandler {
  if (deployment === 'cloud') {
    return (_req: Request, _res: Response, next: NextFunction) => next();
  }
  const cacheMs = options.cacheMs ?? 5_000;
  const cache = new SingleFlightCache<string, OrganisationRecord | null>({
    ttlMs: cacheMs,
    maxEntries: 1000,
    refreshAheadMs: Math.min(1_000, Math.floor(cacheMs / 5)),
    evictFirst: (organisation) => organisation === null,
    now: () => options.clock.now().getTime(),
  });
  const findByHost = (host: string) => organisations.findByHost(host);
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const host = requestOrigin(req).hostname;
      // A Host that cannot name an organisation costs no query and takes no cache room.
      if (!HOST_NAME.test(host)) throw unknownTenant();
      const organisation = await cache.get(host, findByHost);
      if (!organisation) throw unknownTenant();
      req.context.tenant = organisation;
      next();
    } catch (error) {
      next(error);
    }
  };
}
