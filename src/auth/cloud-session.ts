import type { Request } from 'express';
import type { AuthCache } from './auth-cache.js';
import { hashSecret } from '../util/secrets.js';
import { notFound, unauthorized } from '../errors.js';
import type { MembershipLookup, SessionLookup } from './lookups.js';
import { SESSION_ACCESS_PREFIX } from './token-formats.js';
import type { Credential, Resolved, TokenResolver } from './resolver.js';

const ORGANISATION_HEADER = 'x-platform-organisation';
const ORGANISATION_ID = /^org_[0-9a-z]{1,40}$/;

const invalidToken = (message: string) => unauthorized(message, 'Bearer realm="platform", error="invalid_token"');

/**
 * Cloud sessions: `Bearer platform_sa_…` from `POST /auth/v1/token`. A session is not tied to an
 * organisation: the request names the one it acts for with `X-Platform-Organisation` (spec 5),
 * and membership is checked on every request, so a person removed from a team loses it at their
 * next request. Not a member, or no such organisation: 404 `not_found` (nothing tells the two
 * apart). Without the header the request acts for the person's personal organisation.
 */
export class CloudSessionResolver implements TokenResolver {
  readonly kind = 'cloud-session' as const;

  constructor(
    private readonly sessions: SessionLookup,
    private readonly organisations: MembershipLookup,
    /** Resolved (session, organisation) pairs for a few seconds (src/auth/auth-cache.ts). */
    private readonly cache?: AuthCache<Resolved>,
  ) {}

  recognises(credential: Credential): boolean {
    return credential.scheme === 'bearer' && credential.token.startsWith(SESSION_ACCESS_PREFIX);
  }

  async resolve(credential: Credential, req: Request): Promise<Resolved> {
    const header = req.headers[ORGANISATION_HEADER];
    // One SHA-256 of the token: the stored hash, and with the header the cache key.
    const tokenHash = hashSecret(credential.token);
    const key = this.cache?.enabled ? `${tokenHash}\n${typeof header === 'string' ? header.trim() : header === undefined ? '-' : '?'}` : undefined;
    if (key !== undefined) {
      await this.cache!.fresh();
      const hit = this.cache!.get(key);
      if (hit) return hit;
    }
    // Concurrent misses of one token with one header share one look-up.
    return key === undefined ? this.read(tokenHash, header, undefined) : this.cache!.once(key, () => this.read(tokenHash, header, key));
  }

  /** The miss path: the session, then the membership; cached under `key` when there is one. */
  private async read(tokenHash: string, header: string | string[] | undefined, key: string | undefined): Promise<Resolved> {
    const generation = this.cache?.begin() ?? 0;
    const found = await this.sessions.resolveAccessTokenHash(tokenHash);
    if (!found) throw invalidToken('the access token is not valid: expired, signed out, or never issued');
    const { session } = found;
    let membership;
    if (header === undefined) {
      membership = (await this.organisations.membershipsOf(session.personId)).find((entry) => entry.organisation.kind === 'personal');
      if (!membership) throw invalidToken('the account of this session no longer exists');
    } else {
      const id = typeof header === 'string' ? header.trim() : '';
      membership = ORGANISATION_ID.test(id) ? await this.organisations.membershipIn(session.personId, id) : undefined;
      if (!membership) throw notFound('no such organisation among yours');
    }
    const resolved: Resolved = {
      organisation: membership.organisation,
      // Frozen: a cached session's requests share it, and the ability kept with it (abilityOf).
      principal: Object.freeze({
        kind: 'cloud-session',
        organisationId: membership.organisation.id,
        personId: session.personId,
        role: membership.role,
        deviceId: undefined,
        scopes: Object.freeze([]),
        sessionId: session.id,
      }),
    };
    if (key !== undefined) this.cache!.set(key, resolved, generation, found.expiresAt);
    return resolved;
  }
}
