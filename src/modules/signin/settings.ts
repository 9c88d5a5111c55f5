/**
 * What Cloud sign-in is: its identity providers and clients (spec 4.3), and the settings the
 * composition root (src/app.ts) hands the module. The configuration (src/config.ts) reads these
 * lists to validate AUTH_PROVIDER_ORDER and the redirect URI variables: it depends on the module,
 * never the module on it.
 */

import { IDENTITY_PROVIDERS } from '../../identity/identity-provider.js';

// The providers themselves are the identity-provider port's (src/identity/identity-provider.ts).
export { IDENTITY_PROVIDERS, type IdentityProviderId } from '../../identity/identity-provider.js';

/** Every way to sign in, in the default display order of `GET /auth/v1/providers`. */
export const SIGN_IN_PROVIDERS = [...IDENTITY_PROVIDERS, 'email'] as const;
export type SignInProviderId = (typeof SIGN_IN_PROVIDERS)[number];

/** The clients that start a sign-in, each with its own registered redirect URIs. */
export const SIGN_IN_CLIENTS = ['console', 'mobile'] as const;
export type SignInClient = (typeof SIGN_IN_CLIENTS)[number];

/** Cloud sign-in's lifetimes, limits and registrations (the AUTH_* variables). */
export interface SignInSettings {
  /** Exact redirect URIs each client may name at `/auth/v1/start` and `/auth/v1/email/start`. */
  redirectUris: Record<SignInClient, readonly string[]>;
  /** Display order of `GET /auth/v1/providers` (enabled providers and `email`). */
  providerOrder: readonly SignInProviderId[];
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  /** A concurrent refresh of the same token within this many seconds gets the same new pair. */
  refreshGraceSeconds: number;
  /** The one-time code returned to `redirect_uri` (spec 8: 60 seconds). */
  signInCodeTtlSeconds: number;
  /** From `/auth/v1/start` to the provider's answer at the callback. */
  flowTtlSeconds: number;
  emailCodeTtlSeconds: number;
  emailCodesPerHour: number;
  /** Codes one address may be sent in a rolling day. */
  emailCodesPerDay: number;
  /** Codes the whole service may send in a rolling minute, to anyone. */
  emailCodesPerMinute: number;
  emailCodeTries: number;
  linkTicketTtlSeconds: number;
  /** Sign-in requests per network address per minute, per operation. */
  rateLimitPerMinute: number;
  /** Token requests (code exchanges and refreshes) per network address per minute. */
  tokenRateLimitPerMinute: number;
}
