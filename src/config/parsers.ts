import { SIGN_IN_PROVIDERS, type SignInClient, type SignInProviderId } from '../modules/signin/settings.js';
import { Refusal } from './variable.js';
import { accentProblem, logoUrlProblem } from '../web/device-approval/look.js';

/**
 * The parsers of the variables whose values are more than a number, a word or a flag: each reads
 * the variable's trimmed, non-empty text and throws a `Refusal` whose message completes
 * "VARIABLE: …". A value that may hold a password or a key is never repeated in a message.
 */

export interface DatabaseConfig {
  kind: 'sqlite' | 'mysql';
  /** mysql only: `mariadb://` URLs select MariaDB's flavour of schema reading. */
  flavour: 'mysql' | 'mariadb';
  /** sqlite: a file path or ':memory:'; mysql: the connection URL. */
  location: string;
}

export const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that run or read something in the browser instead of reaching an app. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:', 'view-source:']);

function commaList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** An http(s) origin (PLATFORM_BASE_URL): no path, query or fragment. */
export function httpOrigin(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Refusal(`must be an absolute http(s) URL (got "${value}")`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Refusal(`must be an http(s) URL (got "${value}")`);
  if (url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new Refusal('must be a bare origin such as https://platform.example.com (no path, query or fragment)');
  }
  return url.origin;
}

/** Every scheme `database` accepts, as its refusal names them: sqlite:<file>, sqlite::memory:, mysql://…, mariadb://…. */
export const DATABASE_SCHEMES = ['sqlite:', 'mysql://', 'mariadb://'] as const;

export function database(value: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const location = value.slice('sqlite:'.length).replace(/^\/\//, '');
    if (location === '') throw new Refusal('sqlite: needs a file path or :memory:');
    return { kind: 'sqlite', flavour: 'mysql', location };
  }
  if (value.startsWith('mysql://') || value.startsWith('mariadb://')) {
    try {
      const url = new URL(value.replace(/^mariadb:/, 'mysql:'));
      if (url.pathname.length < 2) throw new Error('no database');
      return { kind: 'mysql', flavour: value.startsWith('mariadb:') ? 'mariadb' : 'mysql', location: url.toString() };
    } catch {
      throw new Refusal('must be mysql://user:password@host:port/database or mariadb://user:password@host:port/database');
    }
  }
  throw new Refusal(`must start with ${DATABASE_SCHEMES.slice(0, -1).join(', ')} or ${DATABASE_SCHEMES.at(-1)} (the value is not shown, it may hold a password)`);
}

/** A read replica's URL (`DATABASE_READ_URL`): MySQL or MariaDB only (an embedded SQLite file has no replica). */
export function readDatabase(value: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) throw new Refusal('must be mysql://… or mariadb://… (a read replica of a MySQL or MariaDB primary)');
  return database(value);
}

/** Express `trust proxy`: false, true, a hop count, or a list of addresses/subnets. */
export function trustProxy(value: string): boolean | number | string[] {
  if (value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = commaList(value);
  const named = new Set(['loopback', 'linklocal', 'uniquelocal']);
  for (const entry of entries) {
    const address = entry.split('/')[0] ?? '';
    const isAddress = /^[\d.]+$/.test(address) || /^[\da-f:]+$/i.test(address);
    if (!named.has(entry) && !isAddress) throw new Refusal(`must be false, true, a hop count, or addresses/subnets (got "${entry}")`);
  }
  return entries;
}

export function redisUrl(value: string): string {
  if (!/^rediss?:\/\//.test(value)) throw new Refusal('must start with redis:// or rediss://');
  return value;
}

/** A key of at least 32 random bytes, base64url. */
export function secretKey(value: string): Buffer {
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length < 32) throw new Refusal('must be at least 32 random bytes, base64url (openssl rand -base64 32)');
  return bytes;
}

/**
 * The redirect URIs a client may be sent back to: absolute, no fragment (RFC 6749 3.1.2), https or
 * http on a loopback address (RFC 8252 7.3); a mobile app may also use a private-use scheme,
 * which must be a reverse domain name (RFC 8252 7.1: `com.example.app:/callback`).
 */
export function redirectUris(client: SignInClient): (value: string) => string[] {
  return (value) => {
    const uris = commaList(value);
    for (const uri of uris) {
      let url: URL;
      try {
        url = new URL(uri);
      } catch {
        throw new Refusal(`"${uri}" is not an absolute URI`);
      }
      if (url.hash || uri.includes('#')) throw new Refusal(`"${uri}" must not have a fragment`);
      if (url.protocol === 'https:') continue;
      if (url.protocol === 'http:') {
        if (LOOPBACK_HOSTS.has(url.hostname)) continue;
        throw new Refusal(`"${uri}": http is allowed only on loopback addresses (127.0.0.1, [::1], localhost)`);
      }
      if (client === 'mobile' && !FORBIDDEN_SCHEMES.has(url.protocol) && /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) continue;
      throw new Refusal(
        client === 'mobile'
          ? `"${uri}" must be https, http on a loopback address, or a reverse-domain private-use scheme (com.example.app:/callback)`
          : `"${uri}" must be https, or http on a loopback address`,
      );
    }
    return uris;
  };
}

/**
 * An identity provider's endpoint: https (http on a loopback address only when allowed), no query
 * or fragment. Checked only for an enabled provider (src/config.ts), hence a problem, not a parser.
 */
export function endpointProblem(value: string, allowHttpLoopback: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an absolute https URL (got "${value}")`;
  }
  const loopbackHttp = allowHttpLoopback && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) return 'must be an https URL (http only on loopback with OIDC_ALLOW_HTTP_LOOPBACK=true)';
  if (url.hash || url.search) return 'must have no query or fragment';
  return undefined;
}

/** The configured order first; any provider it leaves out follows in the default order. */
export function providerOrder(value: string): SignInProviderId[] {
  const named = commaList(value);
  for (const entry of named) {
    if (!(SIGN_IN_PROVIDERS as readonly string[]).includes(entry)) {
      throw new Refusal(`must name providers among ${SIGN_IN_PROVIDERS.join(', ')} (got "${entry}")`);
    }
  }
  const order = [...new Set(named)] as SignInProviderId[];
  return [...order, ...SIGN_IN_PROVIDERS.filter((id) => !order.includes(id))];
}

/**
 * The console's invitation page: an https URL (http on a loopback address, for development) with
 * `{token}` once, in its path, query or fragment (a fragment keeps the token out of the console
 * server's logs). The token is base64url, so it needs no escaping wherever it goes.
 */
export function invitationUrl(value: string): string {
  if (value.split('{token}').length !== 2) throw new Refusal('must hold {token} exactly once, e.g. https://console.example.com/invitations#{token}');
  let url: URL;
  try {
    url = new URL(value.replace('{token}', 'token'));
  } catch {
    throw new Refusal(`must be an absolute https URL (got "${value}")`);
  }
  if (url.username || url.password) throw new Refusal('must not carry user information');
  if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) return value;
  throw new Refusal('must be https, or http on a loopback address (127.0.0.1, [::1], localhost)');
}

/** A bearer token of at least 16 visible ASCII characters (`openssl rand -base64 32`); never shown in errors. */
export function metricsToken(value: string): string {
  if (!/^[\x21-\x7e]{16,512}$/.test(value)) throw new Refusal('must be 16 to 512 visible ASCII characters without spaces (openssl rand -base64 32); the value is not shown');
  return value;
}

/**
 * Exact browser origins, comma-separated: `https://console.example.com` (http only on a loopback
 * address, for development), no path, no wildcard, no `null`. Written as the browser sends them.
 */
export function corsAllowedOrigins(value: string): string[] {
  const origins = value.split(',').map((entry) => entry.trim());
  for (const entry of origins) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || url.origin === 'null' || url.origin !== entry.toLowerCase() || entry.endsWith('/')) {
      throw new Refusal(`must be a comma-separated list of origins such as https://console.example.com, without path or wildcard (got "${entry}")`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
      throw new Refusal(`must be https origins, or http on a loopback address (got "${entry}")`);
    }
  }
  return [...new Set(origins.map((entry) => entry.toLowerCase()))];
}

export function smtpUrl(value: string): string {
  if (!/^smtps?:\/\/[^/]/.test(value)) throw new Refusal('must start with smtp:// or smtps:// (the value is not shown, it may hold a password)');
  return value;
}

export function mailFrom(value: string): string {
  if (!/^[^\r\n]{3,320}$/.test(value) || !value.includes('@')) throw new Refusal('must be an address such as Platform <no-reply@platform.example>');
  return value;
}

/** The approval page's logo: an image data: URL or a path of this service (src/web/device-approval/look.ts). */
export function pageLogoUrl(value: string): string {
  const problem = logoUrlProblem(value);
  if (problem) throw new Refusal(problem);
  return value;
}

/** The approval page's accent: a CSS hex colour white text is readable on. */
export function pageAccent(value: string): string {
  const problem = accentProblem(value);
  if (problem) throw new Refusal(problem);
  return value.toLowerCase();
}
