import { cookieHeader, readCookie } from '../../http/cookies.js';
import { hashSecret, newSecret, safeEqual } from '../../util/secrets.js';

/**
 * The browser a provider sign-in belongs to. `GET /auth/v1/start` (and the approval page's
 * sign-in) sets a short-lived cookie holding a random secret, and the flow keeps only its SHA-256;
 * the callback finishes the flow only in a browser that sends the same secret back. Whoever
 * started a flow is the only one who can finish it: an authorize URL handed to someone else (to
 * slip their provider account into the starter's, or to sign them in as the starter) ends at the
 * callback with `access_denied`, and nothing is created or changed.
 *
 * - HttpOnly and Secure (browsers keep Secure cookies of `http://localhost` too); named
 *   `__Host-platform_flow` when PLATFORM_BASE_URL is https, so no sibling domain can set or
 *   shadow it, `platform_flow` otherwise;
 * - `SameSite=Lax`: the provider's redirect back is a top-level navigation from another site,
 *   which Lax cookies travel with (Strict ones do not);
 * - one per browser: a browser that already holds a well-formed binding keeps it, so two sign-ins
 *   started in two tabs both finish; its lifetime is renewed to the flow's.
 */

export const FLOW_COOKIE = 'platform_flow';
export const SECURE_FLOW_COOKIE = '__Host-platform_flow';
export const BROWSER_BINDING_PREFIX = 'platform_fb_';
const BINDING = /^platform_fb_[A-Za-z0-9_-]{43}$/;

export function flowCookieName(baseOrigin: string): string {
  return baseOrigin.startsWith('https:') ? SECURE_FLOW_COOKIE : FLOW_COOKIE;
}

/** The binding secret the browser sent, if well-formed. */
export function browserBindingOf(cookie: string | undefined, baseOrigin: string): string | undefined {
  const value = readCookie(cookie, flowCookieName(baseOrigin));
  return value !== undefined && BINDING.test(value) ? value : undefined;
}

/** The browser's binding for a new flow: the one it holds, or a new one. */
export function bindingForStart(cookie: string | undefined, baseOrigin: string): string {
  return browserBindingOf(cookie, baseOrigin) ?? newSecret(BROWSER_BINDING_PREFIX);
}

export function flowCookie(baseOrigin: string, binding: string, maxAgeSeconds: number): string {
  return cookieHeader(flowCookieName(baseOrigin), binding, { maxAgeSeconds, secure: true, sameSite: 'Lax' });
}

export function bindingHash(binding: string): string {
  return hashSecret(binding);
}

/** Whether the callback's browser is the one that started the flow (constant time). */
export function sameBrowser(storedHash: string | null, binding: string | undefined): boolean {
  if (storedHash === null || binding === undefined) return false;
  return safeEqual(bindingHash(binding), storedHash);
}
