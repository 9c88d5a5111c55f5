import type { Request } from 'express';
import type { OrganisationRecord } from '../domain/organisation.js';
import type { Principal, TokenKind } from './principal.js';

/** The credential of the Authorization header, split once. */
export interface Credential {
  scheme: 'bearer' | 'dpop';
  token: string;
}

export interface Resolved {
  principal: Principal;
  organisation: OrganisationRecord;
}

/**
 * One resolver per token kind (spec section 5). A resolver says whether a credential is of its
 * kind by its form alone (prefix, scheme, JWT shape), then resolves it or throws a 401.
 * Device tokens, DPoP-bound device tokens, Cloud sessions and run credentials plug in beside
 * the person-token resolver without touching the middleware.
 */
export interface TokenResolver {
  readonly kind: TokenKind;
  recognises(credential: Credential): boolean;
  resolve(credential: Credential, req: Request): Promise<Resolved>;
}
