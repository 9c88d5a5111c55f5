import type { Request } from 'express';
import type { AuthCache } from './auth-cache.js';
import { hashSecret } from '../util/secrets.js';
import { PersonTokenError, peekIssuer, type OrganisationOidcVerifier } from '../../adapters/identity/organisation-oidc.js';
import { unauthorized } from '../errors.js';
import { RemovedMember, type PersonTokenOrganisations } from './lookups.js';
import { ORGANISATION_ROLES, type OrganisationRole } from './principal.js';
import type { Credential, Resolved, TokenResolver } from './resolver.js';

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

const invalidToken = (message: string) =>
  unauthorized(message, `Bearer realm="platform", error="invalid_token"`);

/** Reads a claim by a dotted path (`realm_access.roles`), as identity providers nest them. */
function claimAt(payload: Record<string, unknown>, path: string): unknown {
  let value: unknown = payload;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** The role a token's claim names; the highest recognised one when the claim is a list. */
export function roleFromClaim(value: unknown): OrganisationRole | undefined {
  const values = Array.isArray(value) ? value : [value];
  for (const role of ORGANISATION_ROLES) if (values.includes(role)) return role;
  return undefined;
}

/** Longest values of the claims the service reads (OpenID Connect Core 5.7: `sub` is at most 255 ASCII characters). */
export const CLAIM_LIMITS = { sub: 255, email: 320, name: 1000, role: 256, roles: 200 } as const;

/** A claim that is a non-empty string (not only white space) of at most `max` characters, or absent when allowed. */
function textClaim(value: unknown, claim: string, max: number, required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) {
    throw new PersonTokenError(`the token's ${claim} claim must be a non-empty string of at most ${max} characters`);
  }
  return value;
}

/**
 * The claims the service reads, typed: `sub` (required), `email`, `name`, `email_verified` and the
 * organisation's role claim (when it has one). A claim of another type, empty, or longer than
 * CLAIM_LIMITS refuses the token (401 `invalid_token`) rather than being coerced or failing later.
 * The role claim is a string or an array of up to CLAIM_LIMITS.roles strings (providers send
 * groups and roles as arrays); absent, it means `member`.
 */
export function personClaims(payload: Record<string, unknown>, roleClaim: string | null) {
  const subject = textClaim(payload.sub, 'sub', CLAIM_LIMITS.sub, true)!;
  const email = textClaim(payload.email, 'email', CLAIM_LIMITS.email, false);
  const name = textClaim(payload.name, 'name', CLAIM_LIMITS.name, false);
  const verified = payload.email_verified;
  if (verified !== undefined && typeof verified !== 'boolean' && verified !== 'true' && verified !== 'false') {
    throw new PersonTokenError("the token's email_verified claim must be true or false");
  }
  let roles: unknown;
  if (roleClaim) {
    roles = claimAt(payload, roleClaim);
    const list = Array.isArray(roles) ? roles : roles === undefined ? [] : [roles];
    if (list.length > CLAIM_LIMITS.roles) throw new PersonTokenError(`the token's ${roleClaim} claim names more than ${CLAIM_LIMITS.roles} roles`);
    for (const role of list) textClaim(role, roleClaim, CLAIM_LIMITS.role, true);
  }
  return { subject, email, name, emailVerified: verified === false || verified === 'false' ? false : undefined, roles };
}

/**
 * Self-hosted person tokens: `Bearer <JWT>` from the organisation's OpenID Connect provider.
 * The unverified `iss` only chooses which organisation's settings to verify against; nothing
 * else of the token is read before its signature and claims are checked.
 */
export class PersonTokenResolver implements TokenResolver {
  readonly kind = 'person' as const;

  constructor(
    private readonly verifier: OrganisationOidcVerifier,
    private readonly organisations: PersonTokenOrganisations,
    /** Verified tokens for a few seconds, never past their `exp` (src/auth/auth-cache.ts). */
    private readonly cache?: AuthCache<Resolved>,
  ) {}

  recognises(credential: Credential): boolean {
    return credential.scheme === 'bearer' && !credential.token.startsWith('platform_') && JWT_SHAPE.test(credential.token);
  }

  async resolve(credential: Credential, req: Request): Promise<Resolved> {
    const key = this.cache?.enabled ? hashSecret(credential.token) : undefined;
    if (key !== undefined) {
      await this.cache!.fresh();
      const hit = this.cache!.get(key);
      if (hit) {
        // The organisation served here must still be the token's (as on the full path below).
        const tenant = req.context.tenant;
        if (tenant && tenant.id !== hit.organisation.id) throw invalidToken("the token was issued by another organisation's provider");
        return hit;
      }
    }
    if (key === undefined) return (await this.verify(credential, req)).resolved;
    // Concurrent misses of one token at one organisation share one verification.
    return this.cache!.once(`${key}\n${req.context.tenant?.id ?? '-'}`, async () => {
      const generation = this.cache!.begin();
      const resolved = await this.verify(credential, req);
      this.cache!.set(key, resolved.resolved, generation, resolved.expiresAt);
      return resolved.resolved;
    });
  }

  private async verify(credential: Credential, req: Request): Promise<{ resolved: Resolved; expiresAt: number | undefined }> {
    try {
      const { issuer } = peekIssuer(credential.token);
      const tenant = req.context.tenant;
      const organisation = tenant?.oidcIssuer === issuer ? tenant : await this.organisations.findByIssuer(issuer);
      if (!organisation || !organisation.oidcIssuer || !organisation.oidcClientId || !organisation.oidcAudience || !organisation.oidcApiScope) {
        throw new PersonTokenError('the token was not issued by a provider this service trusts');
      }
      if (tenant && tenant.id !== organisation.id) {
        throw new PersonTokenError("the token was issued by another organisation's provider");
      }
      const payload = await this.verifier.verify(credential.token, {
        issuer: organisation.oidcIssuer,
        clientId: organisation.oidcClientId,
        audience: organisation.oidcAudience,
        apiScope: organisation.oidcApiScope,
      });
      const claims = personClaims(payload, organisation.oidcRoleClaim);
      // With a role claim configured the provider is the authority on every request: a claim
      // that is gone or names no known role means `member`, so a person demoted at the
      // provider loses the role here too. Without one, the stored role (set by an admin) holds.
      const role = organisation.oidcRoleClaim ? (roleFromClaim(claims.roles) ?? 'member') : undefined;
      const { person, role: effectiveRole } = await this.organisations.signIn(organisation, {
        issuer: organisation.oidcIssuer,
        subject: claims.subject,
        name: claims.name,
        email: claims.email,
        emailVerified: claims.emailVerified,
        role,
      });
      return {
        resolved: {
          organisation,
          // Frozen: a cached token's requests share it, and the ability kept with it (abilityOf).
          principal: Object.freeze({
            kind: 'person',
            organisationId: organisation.id,
            personId: person.id,
            role: effectiveRole,
            deviceId: undefined,
            scopes: Object.freeze([organisation.oidcApiScope]),
          }),
        },
        // A token without `exp` is not cached past the cache's own max age.
        expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
      };
    } catch (error) {
      if (error instanceof PersonTokenError || error instanceof RemovedMember) throw invalidToken(error.message);
      throw error;
    }
  }
}
