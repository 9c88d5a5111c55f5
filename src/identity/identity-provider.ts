/** The identity providers a person can sign in with on Cloud, besides emailed codes. */
export const IDENTITY_PROVIDERS = ['google', 'microsoft', 'github', 'facebook'] as const;
export type IdentityProviderId = (typeof IDENTITY_PROVIDERS)[number];

/**
 * What the Cloud sign-in service (src/modules/signin) needs of an identity provider, implemented
 * by adapters/identity/cloud-providers.ts; declared here, outside both, so that adapters import
 * no module (eslint.config.js, the layer zones). Send the
 * browser there, then turn the provider's answer at our callback into a person. The service
 * keeps everything between the two halves (state, PKCE verifier, nonce); an adapter keeps nothing.
 */
export interface ProviderIdentity {
  /** The provider's stable id of the account: `sub`, or the user API's numeric id. */
  subject: string;
  /** The account's email address, when the provider gave one. */
  email: string | undefined;
  /** Whether the provider vouches that the account owns `email`; an unverified address never joins accounts. */
  emailVerified: boolean;
  name: string | undefined;
}

export interface StartedProviderSignIn {
  authorizationUrl: URL;
  codeVerifier: string;
  /** OpenID Connect only: the ID token must carry it back. */
  nonce: string | undefined;
}

export interface ProviderChecks {
  state: string;
  codeVerifier: string;
  nonce: string | undefined;
}

/** A sign-in the provider did not complete; `message` is safe to show. */
export class IdentityProviderError extends Error {
  constructor(
    message: string,
    /** `refused`: the person cancelled or the provider said no; `unavailable`: it could not be
     * reached or is misconfigured; `invalid`: its answer failed our checks. */
    readonly reason: 'refused' | 'unavailable' | 'invalid',
  ) {
    super(message);
    this.name = 'IdentityProviderError';
  }
}

export interface IdentityProvider {
  readonly id: IdentityProviderId;
  readonly label: string;
  /** The origin the browser is sent to (a page's CSP `form-action` must allow it). */
  authorizationOrigin(): Promise<string>;
  start(redirectUri: string, state: string): Promise<StartedProviderSignIn>;
  /** `callbackUrl` is our callback as the provider called it (its query holds the answer). */
  finish(callbackUrl: URL, redirectUri: string, checks: ProviderChecks): Promise<ProviderIdentity>;
}

export const PROVIDER_LABELS: Record<IdentityProviderId | 'email', string> = {
  google: 'Google',
  microsoft: 'Microsoft',
  github: 'GitHub',
  facebook: 'Facebook',
  email: 'Email',
};
