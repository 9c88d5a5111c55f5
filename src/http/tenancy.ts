import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Deployment } from '../config.js';
import { HOST_NAME, type OrganisationRecord } from '../domain/organisation.js';
import { unknownTenant } from '../errors.js';
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
 * Host look-ups are cached for a few seconds: every tenant request passes here.
 */
export function tenancy(deployment: Deployment, organisations: TenantLookup, cacheMs = 5_000): RequestHandler {
  if (deployment === 'cloud') {
    return (_req: Request, _res: Response, next: NextFunction) => next();
  }
  const cache = new Map<string, { organisation: OrganisationRecord | null; until: number }>();
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const host = requestOrigin(req).hostname;
      // A Host that cannot name an organisation costs no query and takes no cache room.
      if (!HOST_NAME.test(host)) throw unknownTenant();
      const now = Date.now();
      let hit = cache.get(host);
      if (!hit || hit.until <= now) {
        hit = { organisation: await organisations.findByHost(host), until: now + cacheMs };
        // Misses are remembered briefly too, but never at the expense of the hosts that answer.
        if (cache.size >= 1000) {
          for (const [key, entry] of cache) if (!entry.organisation || entry.until <= now) cache.delete(key);
          if (cache.size >= 1000) cache.clear();
        }
        cache.set(host, hit);
      }
      if (!hit.organisation) throw unknownTenant();
      req.context.tenant = hit.organisation;
      next();
    } catch (error) {
      next(error);
    }
  };
}
