import { expect } from '@jest/globals';
import type { Platform } from '../../src/app.js';
import { BASE_URL, CONSOLE_REDIRECT, pkce } from './cloud.js';
import type { CookieJar } from './cookie-jar.js';
import { TestIdentityProvider } from './idp.js';
import { FakeOAuthProvider } from './oauth2-server.js';
import { call } from './platform.js';

/**
 * The identity providers a Cloud deployment signs people in with, played on loopback:
 * `oidc-provider` as Google and Microsoft, a small OAuth 2 server as GitHub and Facebook, each
 * speaking the shapes its adapter calls. Shared by the sign-in suites so that every one drives the
 * same flow the same way.
 */

export type Provider = 'google' | 'microsoft' | 'github' | 'facebook';
export const PROVIDERS: Provider[] = ['google', 'microsoft', 'github', 'facebook'];

export class StandInProviders {
  private constructor(
    readonly google: TestIdentityProvider,
    readonly microsoft: TestIdentityProvider,
    readonly github: FakeOAuthProvider,
    readonly facebook: FakeOAuthProvider,
  ) {}

  /** All four, registered with the callback URLs of a Cloud deployment at `BASE_URL`. */
  static async start(): Promise<StandInProviders> {
    const [google, microsoft, github, facebook] = await Promise.all([
      TestIdentityProvider.start({ clientId: 'platform-cloud', interactive: { redirectUris: [`${BASE_URL}/auth/v1/callback/google`], confidential: true } }),
      TestIdentityProvider.start({ clientId: 'platform-cloud', interactive: { redirectUris: [`${BASE_URL}/auth/v1/callback/microsoft`], confidential: true } }),
      FakeOAuthProvider.start('github'),
      FakeOAuthProvider.start('facebook'),
    ]);
    return new StandInProviders(google, microsoft, github, facebook);
  }

  /** The deployment's settings that point at them. */
  env(): Record<string, string> {
    return {
      GOOGLE_CLIENT_ID: this.google.clientId,
      GOOGLE_CLIENT_SECRET: this.google.clientSecret,
      GOOGLE_ISSUER: this.google.issuer,
      MICROSOFT_CLIENT_ID: this.microsoft.clientId,
      MICROSOFT_CLIENT_SECRET: this.microsoft.clientSecret,
      MICROSOFT_ISSUER: this.microsoft.issuer,
      ...this.github.env(),
      ...this.facebook.env(),
    };
  }

  /** Someone signed in at `provider` (as `login` at the OpenID ones) opens the authorize URL: where the provider sends their browser. */
  authorize(provider: Provider, authorizeUrl: string, login: string): Promise<URL> {
    switch (provider) {
      case 'google':
        return this.google.authorize(authorizeUrl, login);
      case 'microsoft':
        return this.microsoft.authorize(authorizeUrl, login);
      case 'github':
        return this.github.authorize(authorizeUrl);
      case 'facebook':
        return this.facebook.authorize(authorizeUrl);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.google.close(), this.microsoft.close(), this.github.close(), this.facebook.close()]);
  }
}

export interface StartedSignIn {
  verifier: string;
  challenge: string;
  /** Where the service sent the browser: the provider's authorize URL, or the client's redirect URI with an error. */
  location: URL;
}

/** `GET /auth/v1/start` as the console opens it, in `browser` (which keeps the flow's cookie), with a fresh PKCE pair and `extra` parameters. */
export async function startSignIn(platform: Platform, browser: CookieJar, provider: string, extra: Record<string, string> = {}): Promise<StartedSignIn> {
  const { verifier, challenge } = await pkce();
  const query = new URLSearchParams({ provider, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'client-state', ...extra });
  const res = await call(platform, 'get', `/auth/v1/start?${query}`, { headers: browser.headers() });
  expect(res.status).toBe(302);
  browser.store(res.headers['set-cookie']);
  return { verifier, challenge, location: new URL(res.headers.location!) };
}

/** The provider's answer `back` arrives at our callback in `browser`: where the service sends the browser next (the client's redirect URI). */
export async function returnToCallback(platform: Platform, browser: CookieJar, back: URL): Promise<URL> {
  const res = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: browser.headers() });
  expect(res.status).toBe(302);
  expect(res.headers['cache-control']).toBe('no-store');
  return new URL(res.headers.location!);
}
