import type { Request } from 'express';
import type { OrganisationRecord } from '../domain/organisation.js';
import type { AuthCache } from './auth-cache.js';
import { hashSecret } from '../util/secrets.js';
import { ApiError, unauthorized } from '../errors.js';
import type { DeviceTokenLookup, OrganisationLookup, TokenDevice } from './lookups.js';
import { ACCESS_TOKEN_PREFIX } from './token-formats.js';
import type { Clock } from '../util/clock.js';
import { DPOP_ADVERTISED_ALGS, DpopError, requestHtu, type DpopVerifier } from './dpop.js';
import type { Principal } from './principal.js';
import type { Credential, Resolved, TokenResolver } from './resolver.js';

/** 401 for a proof that fails (RFC 9449 7.1): the DPoP challenge names the error and the algs. */
export function dpopRefusal(error: DpopError): ApiError {
  const headers: Record<string, string> = {
    'WWW-Authenticate': `DPoP error="${error.code}", error_description="${error.message}", algs="${DPOP_ADVERTISED_ALGS}"`,
  };
  if (error.nonce) headers['DPoP-Nonce'] = error.nonce;
  return new ApiError(401, error.code, error.message, { headers });
}

const LAST_SEEN_EVERY_MS = 60_000;

const BEARER_CHALLENGE = 'Bearer realm="platform", error="invalid_token"';
const DPOP_CHALLENGE = `DPoP error="invalid_token", algs="${DPOP_ADVERTISED_ALGS}"`;

/** A verified device access token, as the cache keeps it (by the token's hash). */
export interface CachedDevice {
  device: TokenDevice;
  expiresAt: Date;
  /** The principal its requests carry: one frozen object per entry, so that the requests of one
   * cached token share it (and the ability kept with it, policies/index.ts `abilityOf`). */
  principal: Readonly<Principal>;
  /** Its organisation, once read (Cloud: no tenant from the host); dropped with the entry on any change. */
  organisation?: OrganisationRecord;
}

/**
 * Device access tokens: `Bearer platform_at_…`, or `DPoP platform_at_…` with a fresh proof when
 * the device bound its tokens to a key. A bound token is never accepted as a Bearer token, and a
 * DPoP-scheme request with an unbound token is refused too: the scheme must say what the token is.
 */
export class DeviceTokenResolver implements TokenResolver {
  readonly kind = 'device' as const;
  private readonly lastSeen = new Map<string, number>();

  constructor(
    private readonly tokens: DeviceTokenLookup,
    private readonly dpop: DpopVerifier,
    private readonly organisations: OrganisationLookup,
    private readonly clock: Clock,
    private readonly touch: (deviceId: string, at: Date) => Promise<void>,
    /** Verified tokens for a few seconds (src/auth/auth-cache.ts); absent: every request reads the database. */
    private readonly cache?: AuthCache<CachedDevice>,
  ) {}

  /** The device of a current token, from the cache or the database (then cached). */
  private async lookUp(tokenHash: string): Promise<CachedDevice | undefined> {
    if (this.cache?.enabled) {
      await this.cache.fresh();
      const hit = this.cache.get(tokenHash);
      // The token's own end is checked on every use, cached or not.
      if (hit && hit.expiresAt.getTime() > this.clock.now().getTime()) return hit;
    }
    return this.cache ? this.cache.once(tokenHash, () => this.read(tokenHash)) : this.read(tokenHash);
  }

  /** The miss path: one read of the token and its device (shared by concurrent misses), then cached. */
  private async read(tokenHash: string): Promise<CachedDevice | undefined> {
    const generation = this.cache?.begin() ?? 0;
    const found = await this.tokens.resolveAccessTokenHash(tokenHash);
    if (!found) return undefined;
    const { device } = found;
    const scopes = Object.freeze(device.scope.split(' '));
    const principal = Object.freeze({ kind: 'device' as const, organisationId: device.organisationId, personId: device.personId, role: undefined, deviceId: device.id, deviceKind: device.kind, scopes });
    const entry: CachedDevice = { device, expiresAt: found.expiresAt, principal };
    this.cache?.set(tokenHash, entry, generation, found.expiresAt);
    return entry;
  }

  recognises(credential: Credential): boolean {
    return credential.token.startsWith(ACCESS_TOKEN_PREFIX);
  }

  async resolve(credential: Credential, req: Request): Promise<Resolved> {
    const challenge = credential.scheme === 'dpop' ? DPOP_CHALLENGE : BEARER_CHALLENGE;
    // One SHA-256 of the token: the stored hash (hashSecret, hex) is the cache key, and the same
    // bytes in base64url the `ath` a DPoP proof must carry.
    const tokenHash = hashSecret(credential.token);
    const found = await this.lookUp(tokenHash);
    if (!found) throw unauthorized('the access token is not valid', challenge);
    const { device } = found;
    // Self-hosted: another organisation's token is refused like an unknown one, before any proof
    // is checked or anything is recorded for it.
    const tenant = req.context.tenant;
    if (tenant && tenant.id !== device.organisationId) throw unauthorized('the access token is not valid', challenge);
    if (device.dpopJkt) {
      if (credential.scheme !== 'dpop') {
        throw dpopRefusal(new DpopError('invalid_dpop_proof', 'this token is bound to a key: send it with the DPoP scheme and a proof'));
      }
      const proof = req.headers.dpop;
      try {
        await this.dpop.verify(typeof proof === 'string' ? proof : undefined, {
          method: req.method,
          url: requestHtu(req),
          accessToken: credential.token,
          accessTokenHash: Buffer.from(tokenHash, 'hex').toString('base64url'),
          boundJkt: device.dpopJkt,
        });
      } catch (error) {
        if (error instanceof DpopError) throw dpopRefusal(error);
        throw error;
      }
      // RFC 9449 8.2: a fresh nonce with every answer spares the client a use_dpop_nonce round.
      if (this.dpop.noncesRequired) req.res?.setHeader('DPoP-Nonce', this.dpop.newNonce());
    } else if (credential.scheme === 'dpop') {
      throw unauthorized('this token is not bound to a key: send it with the Bearer scheme', challenge);
    }
    const organisation = tenant ?? found.organisation ?? (await this.organisations.findById(device.organisationId));
    if (!organisation) throw unauthorized('the access token is not valid', challenge);
    if (!tenant) found.organisation = organisation;
    this.noteSeen(device.id);
    return { organisation, principal: found.principal };
  }

  /** `last seen` is written at most once a minute per device, off the request's path. */
  private noteSeen(deviceId: string): void {
    const now = this.clock.now();
    const previous = this.lastSeen.get(deviceId);
    if (previous !== undefined && now.getTime() - previous < LAST_SEEN_EVERY_MS) return;
    this.lastSeen.set(deviceId, now.getTime());
    if (this.lastSeen.size > 100_000) this.lastSeen.clear();
    this.touch(deviceId, now).catch(() => undefined);
  }
}
