import * as oidc from 'openid-client';
import type { IssuerSettings } from './organisation-oidc.js';

/**
 * Signs a person in at their organisation's OpenID Connect provider from a browser: the
 * authorization code flow with PKCE (S256), `state` and `nonce` (openid-client).
 *
 * - The client is the organisation's own (`auth.clientId` of discovery) used as a public client:
 *   the organisation record holds no client secret, and PKCE is what binds the code to the
 *   browser that asked for it (OAuth 2.0 Security BCP 2.1.1). The provider must list
 *   `<origin>/device/callback` among the client's redirect URIs.
 * - Scope `openid` plus the organisation's API scope, so that the access token answered is a
 *   person token for this API and goes through exactly the checks every person token does.
 *   Providers that pick the token's audience by resource indicator (RFC 8707) get the API
 *   audience as `resource` when it is an http(s) URL, as RFC 8707 asks of a resource; other
 *   audiences (`api://…`) are left to the provider's own defaults.
 * - Provider metadata comes from its discovery document, cached per issuer and client; a failed
 *   discovery is not remembered.
 *
 * This adapter answers facts; it keeps nothing. Where the verifier, nonce and state live
 * between the two halves of a sign-in is the caller's business.
 */

export interface LoginOptions {
  allowHttpLoopbackIssuers: boolean;
  httpTimeoutMs: number;
  /** How long discovered provider metadata is trusted before it is fetched again. */
  metadataMaxAgeMs: number;
  /** Seconds of clock skew tolerated on the ID token's times. */
  clockSkewSeconds: number;
}

/** A sign-in that could not be completed; the words are safe to show the person. */
export class OrganisationLoginError extends Error {
  constructor(
    message: string,
    /**
     * `unavailable`: the provider cannot be used (unreachable, misconfigured); `refused`: the
     * provider said no (the person cancelled, or may not sign in to this client); `invalid`: the
     * answer at the redirect URI or the token exchange did not pass the checks.
     */
    readonly reason: 'unavailable' | 'refused' | 'invalid',
  ) {
    super(message);
    this.name = 'OrganisationLoginError';
  }
}

export interface StartedLogin {
  /** Where to send the browser. */
  authorizationUrl: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export interface FinishedLogin {
  /** The access token answered: a person token for this API, not yet verified by us. */
  accessToken: string;
  /** `sub` of the ID token, whose `nonce` matched. */
  idTokenSubject: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

interface Cached {
  configuration: Promise<oidc.Configuration>;
  loadedAt: number;
}

export class OrganisationLogin {
  private readonly configurations = new Map<string, Cached>();

  constructor(private readonly options: LoginOptions) {}

  private insecureAllowed(issuer: URL): boolean {
    return this.options.allowHttpLoopbackIssuers && issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname);
  }

  private configuration(settings: IssuerSettings): Promise<oidc.Configuration> {
    const key = `${settings.issuer}\n${settings.clientId}`;
    const cached = this.configurations.get(key);
    if (cached && Date.now() - cached.loadedAt < this.options.metadataMaxAgeMs) return cached.configuration;
    const loading = this.discover(settings);
    this.configurations.set(key, { configuration: loading, loadedAt: Date.now() });
    loading.catch(() => this.configurations.delete(key));
    return loading;
  }

  private async discover(settings: IssuerSettings): Promise<oidc.Configuration> {
    let issuer: URL;
    try {
      issuer = new URL(settings.issuer);
    } catch {
      throw new OrganisationLoginError('the organisation issuer is not a URL', 'unavailable');
    }
    if (issuer.protocol !== 'https:' && !this.insecureAllowed(issuer)) {
      throw new OrganisationLoginError('the organisation issuer must be an https URL', 'unavailable');
    }
    let configuration: oidc.Configuration;
    try {
      configuration = await oidc.discovery(issuer, settings.clientId, { [oidc.clockTolerance]: this.options.clockSkewSeconds }, oidc.None(), {
        execute: this.insecureAllowed(issuer) ? [oidc.allowInsecureRequests] : [],
        timeout: Math.ceil(this.options.httpTimeoutMs / 1000),
      });
    } catch {
      throw new OrganisationLoginError("your organisation's identity provider could not be reached", 'unavailable');
    }
    if (!configuration.serverMetadata().authorization_endpoint || !configuration.serverMetadata().token_endpoint) {
      throw new OrganisationLoginError("your organisation's identity provider does not offer browser sign-in", 'unavailable');
    }
    configuration.timeout = Math.ceil(this.options.httpTimeoutMs / 1000);
    return configuration;
  }

  /** The origin the browser is sent to for sign-in (a page's CSP `form-action` must allow it). */
  async authorizationOrigin(settings: IssuerSettings): Promise<string> {
    const configuration = await this.configuration(settings);
    return new URL(configuration.serverMetadata().authorization_endpoint as string).origin;
  }

  async start(settings: IssuerSettings, redirectUri: string): Promise<StartedLogin> {
    const configuration = await this.configuration(settings);
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: `openid ${settings.apiScope}`,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      ...resourceParameter(settings),
    };
    return { authorizationUrl: oidc.buildAuthorizationUrl(configuration, parameters), state, nonce, codeVerifier };
  }

  /**
   * Checks the provider's answer at the redirect URI (`iss` when the provider sends it, `state`,
   * then any `error`), exchanges the code with the PKCE verifier, and checks the ID token's
   * `nonce`. Answers the access token for the caller to verify as a person token.
   */
  async finish(settings: IssuerSettings, callbackUrl: URL, checks: LoginChecks): Promise<FinishedLogin> {
    const configuration = await this.configuration(settings);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(
        configuration,
        callbackUrl,
        { pkceCodeVerifier: checks.codeVerifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true },
        resourceParameter(settings),
      );
    } catch (error) {
      throw describeFailure(error);
    }
    const subject = tokens.claims()?.sub;
    if (!subject) throw new OrganisationLoginError('your identity provider answered no ID token', 'invalid');
    if (tokens.token_type?.toLowerCase() !== 'bearer' || typeof tokens.access_token !== 'string') {
      throw new OrganisationLoginError('your identity provider answered an access token of a kind this service does not accept', 'invalid');
    }
    return { accessToken: tokens.access_token, idTokenSubject: subject };
  }
}

function resourceParameter(settings: IssuerSettings): Record<string, string> {
  let audience: URL;
  try {
    audience = new URL(settings.audience);
  } catch {
    return {};
  }
  return (audience.protocol === 'https:' || audience.protocol === 'http:') && !audience.hash ? { resource: settings.audience } : {};
}

function describeFailure(error: unknown): OrganisationLoginError {
  if (error instanceof OrganisationLoginError) return error;
  if (error instanceof oidc.AuthorizationResponseError) {
    return error.error === 'access_denied'
      ? new OrganisationLoginError('sign-in was cancelled or refused at your identity provider', 'refused')
      : new OrganisationLoginError('your identity provider did not sign you in', 'refused');
  }
  if (error instanceof oidc.ResponseBodyError) {
    return new OrganisationLoginError('your identity provider refused to complete the sign-in; please start again', 'invalid');
  }
  if (error instanceof TypeError || (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))) {
    return new OrganisationLoginError("your organisation's identity provider could not be reached", 'unavailable');
  }
  return new OrganisationLoginError('the answer from your identity provider could not be verified; please start again', 'invalid');
}
