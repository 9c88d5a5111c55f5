import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Deployment } from '../config.js';
import type { OrganisationRecord } from '../modules/organisation/entities.js';
import type { OrganisationService } from '../modules/organisation/service.js';
import { unknownTenant } from './errors.js';

/**
 * Tenancy. Self-hosted: the organisation is the one served at the request's host name (the
 * forwarded host only when TRUST_PROXY trusts the proxy; Express decides that); no match is
 * 404 `unknown_tenant`. Cloud: one base address for everyone, the organisation comes from the
 * token (devices) or the session's `X-Platform-Organisation` header, so nothing happens here.
 *
 * Host look-ups are cached for a few seconds: every tenant request passes here.
 */
export function tenancy(deployment: Deployment, organisations: OrganisationService, cacheMs = 5_000): RequestHandler {
  if (deployment === 'cloud') {
    return (_req: Request, _res: Response, next: NextFunction) => next();
  }
  const cache = new Map<string, { organisation: OrganisationRecord | null; until: number }>();
  return async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const host = (req.hostname ?? '').toLowerCase();
      const now = Date.now();
      let hit = cache.get(host);
      if (!hit || hit.until <= now) {
        hit = { organisation: host ? await organisations.findByHost(host) : null, until: now + cacheMs };
        if (cache.size > 1000) cache.clear();
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
