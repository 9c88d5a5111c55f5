/**
 * Cookies the service's own pages and flows set (the approval page's session, the sign-in flow's
 * browser binding). One reader for all of them: a `Cookie` header longer than any browser sends
 * for this origin is ignored whole, and the scan is one pass over the header.
 */

/** Browsers send at most about 4 KB per cookie; a header over this is not ours to read. */
const MAX_COOKIE_HEADER = 8192;

/** The value of the first cookie named `name`, or undefined (absent, empty, or an oversized header). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header || header.length > MAX_COOKIE_HEADER) return undefined;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index < 0) continue;
    if (part.slice(0, index).trim() === name) return part.slice(index + 1).trim() || undefined;
  }
  return undefined;
}

export interface CookieOptions {
  maxAgeSeconds: number;
  secure: boolean;
  /** `Lax` lets a top-level navigation back from another site (an identity provider) carry it. */
  sameSite: 'Lax' | 'Strict';
}

/** A `Set-Cookie` value: always `Path=/` and HttpOnly (no page script ever reads these). */
export function cookieHeader(name: string, value: string, options: CookieOptions): string {
  const attributes = [`${name}=${value}`, 'Path=/', `Max-Age=${options.maxAgeSeconds}`, 'HttpOnly', `SameSite=${options.sameSite}`];
  if (options.secure) attributes.push('Secure');
  return attributes.join('; ');
}
