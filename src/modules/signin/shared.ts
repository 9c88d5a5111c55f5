import type { SignInClient } from './settings.js';

/**
 * What the parts of Cloud sign-in share (spec 4.3): the client's request a flow carries from
 * its start to its one-time code, the refusals a client hears at its redirect URI, and the rules
 * on codes, states and addresses.
 *
 * The parts: the provider flow (provider-flow.ts), emailed codes (email-codes.ts), accounts and
 * link tickets (accounts.ts), and the one-time codes a client exchanges at the token endpoint
 * (code-exchange.ts); service.ts puts them together.
 */

/** The built-in approval page is a client of this flow too, with one redirect URI of its own. */
export type FlowClient = SignInClient | 'device-page';
export const DEVICE_PAGE_CALLBACK = '/device/callback';

/** RFC 7636 4.1 and 4.2: a verifier of 43 to 128 unreserved characters; an S256 challenge of 43. */
export const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
export const MAX_STATE_LENGTH = 500;

/** What a client asked for when it started a sign-in. */
export interface ClientRequest {
  client: FlowClient;
  redirectUri: string;
  codeChallenge: string;
  state: string | undefined;
}

/** A refusal the client hears at its redirect URI (RFC 6749 4.1.2.1), never as a JSON answer. */
export class RedirectError extends Error {
  constructor(
    readonly code: 'invalid_request' | 'access_denied' | 'already_linked' | 'temporarily_unavailable' | 'server_error',
    message: string,
  ) {
    super(message);
    this.name = 'RedirectError';
  }
}

/** Email addresses compare case-insensitively everywhere (issue 10's invitations too). */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The service's own origin (`serviceOrigin`, src/http/origin.ts), the start of every absolute URL sign-in builds. */
export function signInOrigin(origin: string | undefined): string {
  if (origin === undefined) throw new Error('Cloud sign-in needs PLATFORM_BASE_URL');
  return origin;
}

/** The client's redirect URI with `error`, `error_description`, `state` and `iss`. */
export function errorRedirect(request: Pick<ClientRequest, 'redirectUri' | 'state'>, error: RedirectError, issuer: string): URL {
  const url = new URL(request.redirectUri);
  url.searchParams.append('error', error.code);
  url.searchParams.append('error_description', error.message);
  if (request.state !== undefined) url.searchParams.append('state', request.state);
  url.searchParams.append('iss', issuer);
  return url;
}
