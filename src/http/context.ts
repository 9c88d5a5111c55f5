import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import type { OrganisationRecord } from '../domain/organisation.js';
import type { RequestOrigin } from './origin.js';

/** What the layers of the request path learn, in order: id and origin at the edge, tenant, principal. */
export interface RequestContext {
  requestId: string;
  /** The trusted origin (src/http/origin.ts): set at the edge, before anything reads a host. */
  origin: RequestOrigin | undefined;
  /** The organisation the request is for (self-hosted: by host name; Cloud: by token or header). */
  tenant: OrganisationRecord | undefined;
  principal: Principal | undefined;
  /** `performance.now()` when the request reached the edge (its duration, in metrics and the log). */
  startedAt: number;
}

declare module 'express-serve-static-core' {
  interface Request {
    context: RequestContext;
    /** The service's logger (redacting), for failures worth a line of their own. */
    log: Logger;
  }
}
