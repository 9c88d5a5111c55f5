import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import type { Clock } from '../../src/util/clock.js';

/**
 * Verifies person tokens (JWT access tokens) from an organisation's own OpenID Connect provider.
 *
 * - The provider's metadata comes from its discovery document (openid-client), its keys from
 *   the published JWKS (jose remote key set: cached, refetched when a token names an unknown
 *   `kid`, at most once per cooldown, so key rotation needs no restart).
 * - Only asymmetric algorithms are accepted; `none` and every HMAC algorithm are refused before
 *   any key is looked at, so a public key can never be used as an HMAC secret.
 * - `iss` must be the organisation's issuer exactly; `aud` its audience; `exp`/`nbf` with a
 *   small skew; the organisation's API scope must be granted (`scope` or `scp`).
 */

export const PERSON_TOKEN_ALGORITHMS = [
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519',
] as const;

export interface IssuerSettings {
  issuer: string;
  clientId: string;
  audience: string;
  apiScope: string;
}

export interface VerifierOptions {
  clock: Clock;
  clockSkewSeconds: number;
  jwksCooldownMs: number;
  jwksCacheMaxAgeMs: number;
  allowHttpLoopbackIssuers: boolean;
  httpTimeoutMs: number;
}

/** Why a token was refused; the words are safe to show the caller (no token content). */
export class PersonTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PersonTokenError';
  }
}

interface KeySet {
  jwks: ReturnType<typeof createRemoteJWKSet>;
}

/** How long a failed discovery is remembered: a provider that is down is asked again at most this
 * often, instead of once per request that names it. */
const FAILED_DISCOVERY_BACKOFF_MS = 5_000;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function grantedScopes(payload: JWTPayload): string[] {
  const scope = payload.scope;
  const scp = payload.scp;
  const out: string[] = [];
  if (typeof scope === 'string') out.push(...scope.split(' ').filter(Boolean));
  if (Array.isArray(scope)) out.push(...scope.filter((s): s is string => typeof s === 'string'));
  if (typeof scp === 'string') out.push(...scp.split(' ').filter(Boolean));
  if (Array.isArray(scp)) out.push(...scp.filter((s): s is string => typeof s === 'string'));
  return out;
}

/** Reads the claims of a token without trusting them: only to choose the organisation by `iss`. */
export function peekIssuer(token: string): { issuer: string; algorithm: string } {
  let header: ReturnType<typeof decodeProtectedHeader>;
  let payload: JWTPayload;
  try {
    header = decodeProtectedHeader(token);
    payload = decodeJwt(token);
  } catch {
    throw new PersonTokenError('the token is not a well-formed JWT');
  }
  if (typeof header.alg !== 'string' || !(PERSON_TOKEN_ALGORITHMS as readonly string[]).includes(header.alg)) {
    throw new PersonTokenError('the token is signed with an algorithm that is not accepted');
  }
  if (typeof payload.iss !== 'string' || payload.iss === '') throw new PersonTokenError('the token has no issuer');
  return { issuer: payload.iss, algorithm: header.alg };
}

export class OrganisationOidcVerifier {
  /** Per issuer: its metadata and key set (or the failure to get them), and until when to use it. */
  private readonly keySets = new Map<string, { loading: Promise<KeySet>; until: number }>();

  constructor(private readonly options: VerifierOptions) {}

  private allowsInsecure(issuer: URL): boolean {
    return this.options.allowHttpLoopbackIssuers && issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname);
  }

  private async loadKeySet(settings: IssuerSettings): Promise<KeySet> {
    const issuerUrl = new URL(settings.issuer);
    if (issuerUrl.protocol !== 'https:' && !this.allowsInsecure(issuerUrl)) {
      throw new PersonTokenError('the organisation issuer must be an https URL');
    }
    const execute = this.allowsInsecure(issuerUrl) ? [oidc.allowInsecureRequests] : [];
    const configuration = await oidc.discovery(issuerUrl, settings.clientId, undefined, undefined, {
      execute,
      timeout: Math.ceil(this.options.httpTimeoutMs / 1000),
    });
    const jwksUri = configuration.serverMetadata().jwks_uri;
    if (!jwksUri) throw new PersonTokenError('the provider publishes no jwks_uri');
    const jwksUrl = new URL(jwksUri);
    if (jwksUrl.protocol !== 'https:' && !this.allowsInsecure(jwksUrl)) throw new PersonTokenError('the provider publishes its keys over plain http');
    const jwks = createRemoteJWKSet(jwksUrl, {
      cooldownDuration: this.options.jwksCooldownMs,
      cacheMaxAge: this.options.jwksCacheMaxAgeMs,
      timeoutDuration: this.options.httpTimeoutMs,
    });
    return { jwks };
  }

  private keySet(settings: IssuerSettings): Promise<KeySet> {
    const now = Date.now();
    const cached = this.keySets.get(settings.issuer);
    if (cached && cached.until > now) return cached.loading;
    // The provider's metadata is read again after OIDC_JWKS_MAX_AGE_MS (a moved jwks_uri is
    // followed); the key set itself also refetches on an unknown `kid`, within its cooldown.
    const entry = { loading: this.loadKeySet(settings), until: now + this.options.jwksCacheMaxAgeMs };
    this.keySets.set(settings.issuer, entry);
    entry.loading.catch(() => {
      entry.until = Date.now() + FAILED_DISCOVERY_BACKOFF_MS;
    });
    return entry.loading;
  }

  async verify(token: string, settings: IssuerSettings): Promise<JWTPayload & { sub: string }> {
    let keys: KeySet;
    try {
      keys = await this.keySet(settings);
    } catch (error) {
      if (error instanceof PersonTokenError) throw error;
      throw new PersonTokenError("the organisation's identity provider could not be reached");
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys.jwks, {
        issuer: settings.issuer,
        audience: settings.audience,
        algorithms: [...PERSON_TOKEN_ALGORITHMS],
        clockTolerance: this.options.clockSkewSeconds,
        currentDate: this.options.clock.now(),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (error) {
      throw new PersonTokenError(describeJoseError(error));
    }
    if (!grantedScopes(payload).includes(settings.apiScope)) {
      throw new PersonTokenError(`the token does not grant the scope ${settings.apiScope}`);
    }
    return payload as JWTPayload & { sub: string };
  }
}

function describeJoseError(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'the token is not yet valid';
    if (error.claim === 'aud') return 'the token is not meant for this service (audience)';
    if (error.claim === 'iss') return 'the token has the wrong issuer';
    return `the token's ${error.claim} claim is invalid`;
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'the token is signed with a key the provider does not publish';
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return 'the token is signed with an algorithm that is not accepted';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  if (error instanceof joseErrors.JWKSTimeout || (error instanceof Error && error.name === 'JWKSInvalid')) {
    return "the organisation's keys could not be fetched";
  }
  return 'the token is invalid';
}
