import type { Request } from 'express';
import type { AuthCache } from './auth-cache.js';
import { hashSecret } from '../util/secrets.js';
import { PersonTokenError, peekIssuer, type OrganisationOidcVerifier } from '../../adapters/identity/organisation-oidc.js';
import { unauthorized } from '../http/errors.js';
import type { OrganisationService } from '../modules/organisation/service.js';
import { RemovedMember, roleFromClaim } from '../modules/organisation/service.js';
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

/**
 * Self-hosted person tokens: `Bearer <JWT>` from the organisation's OpenID Connect provider.
 * The unverified `iss` only chooses which organisation's settings to verify against; nothing
 * else of the token is read before its signature and claims are checked.
 */
export class PersonTokenResolver implements TokenResolver {
  readonly kind = 'person' as const;

  constructor(
    private readonly verifier: OrganisationOidcVerifier,
    private readonly organisations: OrganisationService,
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
    const generation = this.cache?.begin() ?? 0;
    const resolved = await this.verify(credential, req);
    if (key !== undefined) this.cache!.set(key, resolved.resolved, generation, resolved.expiresAt);
    return resolved.resolved;
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
      // With a role claim configured the provider is the authority on every request: a claim
      // that is gone or names no known role means `member`, so a person demoted at the
      // provider loses the role here too. Without one, the stored role (set by an admin) holds.
      const role = organisation.oidcRoleClaim
        ? (roleFromClaim(claimAt(payload, organisation.oidcRoleClaim)) ?? 'member')
        : undefined;
      const { person, role: effectiveRole } = await this.organisations.signIn(organisation, {
        issuer: organisation.oidcIssuer,
        subject: payload.sub,
        name: typeof payload.name === 'string' ? payload.name : undefined,
        email: typeof payload.email === 'string' ? payload.email : undefined,
        emailVerified: payload.email_verified === false || payload.email_verified === 'false' ? false : undefined,
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
