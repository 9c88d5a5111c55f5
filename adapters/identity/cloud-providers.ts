import { createHmac } from 'node:crypto';
import * as oidc from 'openid-client';
import type { OAuthProviderConfig, OidcProviderConfig, ProviderConfig } from '../../src/config.js';
import {
  IdentityProviderError,
  PROVIDER_LABELS,
  type IdentityProvider,
  type ProviderChecks,
  type ProviderIdentity,
  type IdentityProviderId,
  type StartedProviderSignIn,
} from '../../src/identity/identity-provider.js';

/**
 * The Cloud identity providers (spec 4.3): Google and Microsoft as OpenID Connect providers
 * (discovery, PKCE, state, nonce, ID token checks by openid-client), GitHub and Facebook as
 * OAuth 2 providers whose user APIs name the person. This service is a confidential client of
 * each (client id and secret from the configuration) and still sends PKCE to all of them.
 */

export interface ProviderOptions {
  /** Accept `http://` endpoints on loopback addresses (development and tests only). */
  allowHttpLoopback: boolean;
  httpTimeoutMs: number;
  /** How long discovered metadata is used before it is fetched again. */
  metadataMaxAgeMs: number;
  clockSkewSeconds: number;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function describeFailure(error: unknown): IdentityProviderError {
  if (error instanceof IdentityProviderError) return error;
  if (error instanceof oidc.AuthorizationResponseError) {
    return error.error === 'access_denied'
      ? new IdentityProviderError('sign-in was cancelled or refused at the provider', 'refused')
      : new IdentityProviderError('the provider did not sign you in', 'refused');
  }
  if (error instanceof oidc.ResponseBodyError) return new IdentityProviderError('the provider refused to complete the sign-in', 'invalid');
  if (error instanceof TypeError || (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))) {
    return new IdentityProviderError('the provider could not be reached', 'unavailable');
  }
  return new IdentityProviderError("the provider's answer could not be verified", 'invalid');
}

abstract class CodeFlowProvider implements IdentityProvider {
  readonly label: string;
  private cached: { configuration: Promise<oidc.Configuration>; loadedAt: number } | undefined;

  constructor(
    readonly id: IdentityProviderId,
    protected readonly options: ProviderOptions,
  ) {
    this.label = PROVIDER_LABELS[id];
  }

  protected insecure(url: string): boolean {
    const parsed = new URL(url);
    return this.options.allowHttpLoopback && parsed.protocol === 'http:' && LOOPBACK_HOSTS.has(parsed.hostname);
  }

  protected abstract load(): Promise<oidc.Configuration>;
  protected abstract scope: string;
  protected abstract identityOf(tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>): Promise<ProviderIdentity>;

  protected configuration(): Promise<oidc.Configuration> {
    if (this.cached && Date.now() - this.cached.loadedAt < this.options.metadataMaxAgeMs) return this.cached.configuration;
    const loading = this.load().then((configuration) => {
      configuration.timeout = Math.ceil(this.options.httpTimeoutMs / 1000);
      return configuration;
    });
    const entry = { configuration: loading, loadedAt: Date.now() };
    this.cached = entry;
    // A failed discovery is remembered for five seconds, not retried by every request.
    loading.catch(() => {
      entry.loadedAt = Date.now() - this.options.metadataMaxAgeMs + 5_000;
    });
    return loading;
  }

  async authorizationOrigin(): Promise<string> {
    const configuration = await this.guard(() => this.configuration());
    return new URL(configuration.serverMetadata().authorization_endpoint as string).origin;
  }

  async start(redirectUri: string, state: string): Promise<StartedProviderSignIn> {
    const configuration = await this.guard(() => this.configuration());
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const nonce = this instanceof OidcProvider ? oidc.randomNonce() : undefined;
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: this.scope,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      ...(nonce ? { nonce } : {}),
    };
    return { authorizationUrl: oidc.buildAuthorizationUrl(configuration, parameters), codeVerifier, nonce };
  }

  async finish(callbackUrl: URL, redirectUri: string, checks: ProviderChecks): Promise<ProviderIdentity> {
    return this.guard(async () => {
      const configuration = await this.configuration();
      const tokens = await oidc.authorizationCodeGrant(
        configuration,
        callbackUrl,
        {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          ...(checks.nonce ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
        },
        { redirect_uri: redirectUri },
      );
      return this.identityOf(tokens);
    });
  }

  protected async guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw describeFailure(error);
    }
  }
}

/**
 * Google and Microsoft. The ID token (signature, `iss`, `aud`, `exp`, `nonce`) is checked by
 * openid-client; its `sub` names the account. An email counts as verified only when the provider
 * says so: Google's `email_verified`; Microsoft sends no such claim for most accounts, and its
 * `email` is whatever the tenant typed in, so there only `email_verified` or `xms_edov` (the
 * email's domain is verified by the tenant that owns it) make it verified.
 */
class OidcProvider extends CodeFlowProvider {
  protected scope = 'openid email profile';

  constructor(
    id: IdentityProviderId,
    private readonly settings: OidcProviderConfig,
    options: ProviderOptions,
  ) {
    super(id, options);
  }

  protected async load(): Promise<oidc.Configuration> {
    const issuer = new URL(this.settings.issuer);
    try {
      return await oidc.discovery(
        issuer,
        this.settings.clientId,
        { client_secret: this.settings.clientSecret, [oidc.clockTolerance]: this.options.clockSkewSeconds },
        oidc.ClientSecretPost(this.settings.clientSecret),
        { execute: this.insecure(this.settings.issuer) ? [oidc.allowInsecureRequests] : [], timeout: Math.ceil(this.options.httpTimeoutMs / 1000) },
      );
    } catch {
      throw new IdentityProviderError(`${this.label} could not be reached`, 'unavailable');
    }
  }

  protected async identityOf(tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>): Promise<ProviderIdentity> {
    const claims = tokens.claims();
    if (!claims?.sub) throw new IdentityProviderError(`${this.label} answered no ID token`, 'invalid');
    const email = typeof claims.email === 'string' && claims.email.includes('@') ? claims.email : undefined;
    const verified = claims.email_verified === true || (this.id === 'microsoft' && claims.xms_edov === true);
    return { subject: claims.sub, email, emailVerified: email !== undefined && verified, name: typeof claims.name === 'string' ? claims.name : undefined };
  }
}

/** Reads a JSON answer of a provider's user API, with the access token, within the timeout. */
async function userApi(url: string, accessToken: string, timeoutMs: number, accept = 'application/json'): Promise<unknown> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept, 'user-agent': 'platform-api' },
    signal: AbortSignal.timeout(timeoutMs),
    redirect: 'error',
  });
  if (!res.ok) throw new IdentityProviderError('the provider refused to name the person', 'invalid');
  const text = await res.text();
  if (text.length > 256 * 1024) throw new IdentityProviderError('the provider answered too much', 'invalid');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new IdentityProviderError('the provider answered something other than JSON', 'invalid');
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const idOf = (value: unknown): string | undefined =>
  typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' && /^[0-9A-Za-z_-]{1,100}$/.test(value) ? value : undefined;

/**
 * GitHub and Facebook: OAuth 2 authorization code (with PKCE), then the user API. GitHub: `/user`
 * for the numeric id and name, `/user/emails` for the address that is both primary and verified
 * (any other is ignored). Facebook: `/me?fields=id,name,email` with an `appsecret_proof`; Facebook
 * answers `email` only for the account's primary, confirmed address.
 */
class OAuthProvider extends CodeFlowProvider {
  protected scope: string;

  constructor(
    id: 'github' | 'facebook',
    private readonly settings: OAuthProviderConfig,
    options: ProviderOptions,
  ) {
    super(id, options);
    this.scope = id === 'github' ? 'read:user user:email' : 'public_profile email';
  }

  protected async load(): Promise<oidc.Configuration> {
    const configuration = new oidc.Configuration(
      { issuer: new URL(this.settings.authorizationUrl).origin, authorization_endpoint: this.settings.authorizationUrl, token_endpoint: this.settings.tokenUrl },
      this.settings.clientId,
      this.settings.clientSecret,
      oidc.ClientSecretPost(this.settings.clientSecret),
    );
    if (this.insecure(this.settings.tokenUrl)) oidc.allowInsecureRequests(configuration);
    return configuration;
  }

  protected async identityOf(tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>): Promise<ProviderIdentity> {
    const token = tokens.access_token;
    const timeout = this.options.httpTimeoutMs;
    if (this.id === 'github') {
      const user = await userApi(`${this.settings.apiUrl}/user`, token, timeout, 'application/vnd.github+json');
      const subject = isRecord(user) ? idOf(user.id) : undefined;
      if (!isRecord(user) || !subject) throw new IdentityProviderError('GitHub did not name the account', 'invalid');
      const emails = await userApi(`${this.settings.apiUrl}/user/emails`, token, timeout, 'application/vnd.github+json');
      const primary = Array.isArray(emails) ? emails.find((entry) => isRecord(entry) && entry.primary === true && entry.verified === true) : undefined;
      const email = isRecord(primary) && typeof primary.email === 'string' && primary.email.includes('@') ? primary.email : undefined;
      const name = typeof user.name === 'string' && user.name.trim() ? user.name : typeof user.login === 'string' ? user.login : undefined;
      return { subject, email, emailVerified: email !== undefined, name };
    }
    const proof = createHmac('sha256', this.settings.clientSecret).update(token).digest('hex');
    const me = await userApi(`${this.settings.apiUrl}/me?fields=id,name,email&appsecret_proof=${proof}`, token, timeout);
    const subject = isRecord(me) ? idOf(me.id) : undefined;
    if (!isRecord(me) || !subject) throw new IdentityProviderError('Facebook did not name the account', 'invalid');
    const email = typeof me.email === 'string' && me.email.includes('@') ? me.email : undefined;
    return { subject, email, emailVerified: email !== undefined, name: typeof me.name === 'string' ? me.name : undefined };
  }
}

export function identityProvider(id: IdentityProviderId, settings: ProviderConfig, options: ProviderOptions): IdentityProvider {
  if (settings.kind === 'oidc') return new OidcProvider(id, settings, options);
  if (id !== 'github' && id !== 'facebook') throw new Error(`${id} is an OpenID Connect provider`);
  return new OAuthProvider(id, settings, options);
}
