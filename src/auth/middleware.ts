import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Deployment } from '../config.js';
import { ApiError, unauthorized } from '../errors.js';
import type { RouteDefinition } from '../http/route.js';
import type { Credential, TokenResolver } from './resolver.js';
import { outcomeOf, tokenKindLabel, type TokenKindLabel } from '../metrics.js';

/** Told of every verification: the token's kind and `ok` or the refusal's code (metrics). */
export type VerificationObserver = (kind: TokenKindLabel, outcome: string) => void;

const AUTHORIZATION = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*)$/i;

const INVALID_TOKEN_CHALLENGE = 'Bearer realm="platform", error="invalid_token"';

/** At most this many characters of Authorization header are looked at. */
const MAX_AUTHORIZATION_LENGTH = 8192;

export function parseAuthorization(header: string | undefined): Credential | undefined {
  if (!header || header.length > MAX_AUTHORIZATION_LENGTH) return undefined;
  const match = AUTHORIZATION.exec(header.trim());
  if (!match) return undefined;
  return { scheme: (match[1] as string).toLowerCase() as Credential['scheme'], token: match[2] as string };
}

/**
 * Authentication: find the resolver of the credential's kind among those the route accepts,
 * resolve it to a principal, and settle the tenant. Self-hosted: the token's organisation must
 * be the one served at this host name. Cloud: the token (or, later, the session's
 * `X-Platform-Organisation`) decides the organisation.
 */
export function authentication(resolvers: readonly TokenResolver[], deployment: Deployment, observe?: VerificationObserver) {
  return (route: RouteDefinition): RequestHandler => {
    const accepted = route.auth === 'public' ? [] : resolvers.filter((r) => (route.auth as readonly string[]).includes(r.kind));
    return async (req: Request, _res: Response, next: NextFunction) => {
      let kind: TokenKindLabel = 'none';
      try {
        const header = req.headers.authorization;
        if (header === undefined && route.authOptional) return next();
        const credential = parseAuthorization(header);
        // RFC 6750 3.1: a request without credentials gets a bare challenge; one that sent a
        // token we cannot use is told `invalid_token`, so a client knows to get a new one.
        if (!credential) {
          throw header !== undefined && /^(Bearer|DPoP)\b/i.test(header)
            ? unauthorized('the access token is malformed', INVALID_TOKEN_CHALLENGE)
            : unauthorized();
        }
        const resolver = accepted.find((candidate) => candidate.recognises(credential));
        kind = resolver ? tokenKindLabel(resolver.kind, credential) : 'unrecognised';
        if (!resolver) throw unauthorized('this kind of token is not accepted here', INVALID_TOKEN_CHALLENGE);
        const { principal, organisation } = await resolver.resolve(credential, req);
        const tenant = req.context.tenant;
        if (deployment === 'self-hosted' && tenant && tenant.id !== organisation.id) {
          throw unauthorized('the token belongs to another organisation');
        }
        if (principal.kind === 'device' && route.deviceScope && !principal.scopes.includes(route.deviceScope)) {
          // RFC 6750 3.1: the token is fine, it just does not reach this far.
          throw new ApiError(403, 'insufficient_scope', `this operation needs the ${route.deviceScope} scope`, {
            headers: { 'WWW-Authenticate': `Bearer realm="platform", error="insufficient_scope", scope="${route.deviceScope}"` },
          });
        }
        req.context.principal = principal;
        req.context.tenant = organisation;
        observe?.(kind, 'ok');
        next();
      } catch (error) {
        observe?.(kind, outcomeOf(error));
        next(error);
      }
    };
  };
}
