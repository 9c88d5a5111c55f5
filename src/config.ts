/**
 * Configuration comes from the environment only. Every variable is read and validated here,
 * once, at start; a bad value stops the process with one line naming the variable.
 * The README documents each variable (keep the table there in step with this file).
 */

import type { RetentionDays, RetentionSetting } from './sweeper/kinds.js';

export type Deployment = 'self-hosted' | 'cloud';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface DatabaseConfig {
  kind: 'sqlite' | 'mysql';
  /** mysql only: `mariadb://` URLs select MariaDB's flavour of schema reading. */
  flavour: 'mysql' | 'mariadb';
  /** sqlite: a file path or ':memory:'; mysql: the connection URL. */
  location: string;
}

export interface Config {
  deployment: Deployment;
  /** The public base address on Cloud; on self-hosted the organisation's host name decides it. */
  baseUrl: string | undefined;
  port: number;
  host: string;
  /** SHUTDOWN_TIMEOUT_SECONDS: how long in-flight requests may take to finish after SIGTERM. */
  shutdownTimeoutSeconds: number;
  /** WEB_CONCURRENCY: worker processes sharing the port (node:cluster); above 1 needs REDIS_URL. */
  webConcurrency: number;
  /** The HTTP server's bounds on slow, idle and too many clients (src/lifecycle.ts). */
  server: ServerLimits;
  database: DatabaseConfig;
  redisUrl: string | undefined;
  logLevel: LogLevel;
  /** Express `trust proxy` value: false, true, a hop count, or a list of addresses/subnets. */
  trustProxy: boolean | number | string[];
  jsonBodyLimitBytes: number;
  /** METRICS_TOKEN: the bearer token `/metrics` asks for; open without one. */
  metricsToken: string | undefined;
  /** CORS_ALLOWED_ORIGINS: browser origins (consoles) answered with CORS headers; none: no CORS at all. */
  corsAllowedOrigins: string[];
  /** Bounds on every JSON body (and free-form JSON read back from storage); routes may declare their own. */
  json: {
    maxDepth: number;
    maxKeys: number;
    maxStringLength: number;
  };
  discoveryMaxAgeSeconds: number;
  /** In-process caches of verified credentials (src/auth/auth-cache.ts); 0 entries or 0 s: off. */
  authCache: {
    maxEntries: number;
    maxAgeSeconds: number;
  };
  oidc: {
    /** Seconds of clock skew tolerated on `exp`/`nbf`/`iat` of person tokens. */
    clockSkewSeconds: number;
    /** Minimum milliseconds between two JWKS refetches triggered by an unknown `kid`. */
    jwksCooldownMs: number;
    /** How long fetched JWKS and issuer metadata are trusted before a refetch. */
    jwksCacheMaxAgeMs: number;
    /** Allow `http://` issuers on loopback addresses (development and tests only). */
    allowHttpLoopbackIssuers: boolean;
    httpTimeoutMs: number;
  };
  /** Create a `localhost` organisation on an empty self-hosted database at start. */
  bootstrapLocalhost: boolean;
  /** Run pending migrations at start (the Helm chart runs them once, in a hook Job, instead). */
  migrateOnStart: boolean;
  /** Rate limits on enrolment and sign-in operations (switch off only for load tests). */
  rateLimitsEnabled: boolean;
  ingest: {
    /** Largest ingest envelope, bytes (its own limit, read after authentication). */
    maxBytes: number;
    /** Most items (events, usage, audit, tasks together) in one envelope. */
    maxItems: number;
    /** Most object keys and array items in one envelope (JSON_MAX_KEYS is for ordinary bodies). */
    maxJsonKeys: number;
    /** Longest string in an envelope (an agent's answer or a command's output may be long). */
    maxStringLength: number;
    /** Milliseconds of work redaction may spend on one envelope (in slices); more: 413. */
    redactionBudgetMs: number;
    /** Uploads a minute per device; more: 429 with Retry-After. */
    perDevicePerMinute: number;
  };
  policy: {
    /** Publishing and restoring need `If-Match` (428 without it). */
    requireIfMatch: boolean;
  };
  devices: {
    accessTokenTtlSeconds: number;
    refreshTokenTtlSeconds: number;
    /** A concurrent refresh of the same token by the same device and key within this many
     * seconds gets the same new pair instead of ending every token of the device. */
    refreshGraceSeconds: number;
    deviceCodeTtlSeconds: number;
    pollIntervalSeconds: number;
  };
  dpop: {
    windowSeconds: number;
    futureSkewSeconds: number;
    requireNonce: boolean;
    /** Shared by every replica; random per process when unset (one replica only). */
    nonceSecret: Buffer | undefined;
    nonceLifetimeSeconds: number;
  };
  cloudAgents: {
    /** Longest a run credential lives (spec 8: four hours); a run may ask for less. */
    credentialMaxTtlSeconds: number;
    /** Largest MCP request body (spec 8: 1 MB), checked before the body is read. */
    mcpMaxBytes: number;
    /** MCP requests per minute and run, counted across replicas (spec 8: 300). */
    mcpRequestsPerMinute: number;
  };
  relay: {
    /** How long an MCP request waits for the workbench's answer before -32000. */
    callTimeoutMs: number;
    /** Ping interval of the control channel; a socket that missed the previous pong is dropped. */
    heartbeatMs: number;
    /** Lifetime of the signed assertion that goes with each relayed call. */
    assertionTtlSeconds: number;
  };
  signingKeys: {
    /** Seals the private signing keys kept in the database; unset: keys live in this process only. */
    secret: Buffer | undefined;
    /** A new signing key takes over this often. */
    rotationSeconds: number;
  };
  cloud: CloudSignInConfig;
  teams: TeamsConfig;
  mail: MailConfig;
  /** The sweeper (src/sweeper): what is past its use goes, every few minutes, one replica at a time. */
  sweeper: {
    enabled: boolean;
    intervalSeconds: number;
    /** Rows per batch (one statement; the rows it locks). */
    batchSize: number;
    /** Wait between two batches, milliseconds. */
    batchPauseMs: number;
  };
  /** Days each kind of history is kept (RETENTION_*_DAYS); a kind not set is kept forever. */
  retention: RetentionDays;
}

/** What one HTTP server process holds for its clients. */
export interface ServerLimits {
  /** MAX_CONNECTIONS: open connections (control channels included); past it a new one is closed at once. */
  maxConnections: number;
  /** KEEP_ALIVE_TIMEOUT_SECONDS: how long an idle keep-alive connection is kept; above the proxy's own upstream idle timeout. */
  keepAliveTimeoutSeconds: number;
  /** HEADERS_TIMEOUT_SECONDS: from a request's first byte to the end of its head. */
  headersTimeoutSeconds: number;
  /** REQUEST_TIMEOUT_SECONDS: from a request's first byte to the end of its body. */
  requestTimeoutSeconds: number;
}

/** Cloud teams (spec 4.5): the plan of a new team, and invitations. */
export interface TeamsConfig {
  /** The plan a new team gets (`teams`). */
  plan: 'free' | 'teams' | 'enterprise';
  /** How long an invitation link works (spec 8: seven days). */
  invitationTtlSeconds: number;
  /**
   * The console's page for an invitation, with `{token}` where the token goes; unset: the link is
   * the API's public preview of the invitation, `<PLATFORM_BASE_URL>/cloud/v1/invitations/<token>`.
   */
  invitationUrl: string | undefined;
  /** Invitations one person may send per rolling hour (each sends a mail to an address they chose). */
  invitationsPerHour: number;
}

/** The identity providers a person can sign in with on Cloud (spec 4.3), and emailed codes. */
export type IdentityProviderId = 'google' | 'microsoft' | 'github' | 'facebook';
export const IDENTITY_PROVIDERS: readonly IdentityProviderId[] = ['google', 'microsoft', 'github', 'facebook'];
export type SignInProviderId = IdentityProviderId | 'email';
export type SignInClient = 'console' | 'mobile';
export const SIGN_IN_CLIENTS: readonly SignInClient[] = ['console', 'mobile'];

/** An OpenID Connect provider: its issuer (metadata by discovery) and this service's client. */
export interface OidcProviderConfig {
  kind: 'oidc';
  clientId: string;
  clientSecret: string;
  issuer: string;
}

/** A plain OAuth 2 provider: its endpoints, its user API, and this service's client. */
export interface OAuthProviderConfig {
  kind: 'oauth2';
  clientId: string;
  clientSecret: string;
  authorizationUrl: string;
  tokenUrl: string;
  apiUrl: string;
}

export type ProviderConfig = OidcProviderConfig | OAuthProviderConfig;

export interface CloudSignInConfig {
  /** Exact redirect URIs each client may name at `/auth/v1/start` and `/auth/v1/email/start`. */
  redirectUris: Record<SignInClient, readonly string[]>;
  /** Enabled identity providers (client id and secret configured). */
  providers: Partial<Record<IdentityProviderId, ProviderConfig>>;
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
  /** Codes one address may be sent in a rolling day (AUTH_EMAIL_CODES_PER_DAY). */
  emailCodesPerDay: number;
  /** Codes the whole service may send in a rolling minute, to anyone (AUTH_EMAIL_CODES_PER_MINUTE). */
  emailCodesPerMinute: number;
  /** Leading zero bits of the built-in proof of work `POST /auth/v1/email/start` asks for; 0: off. */
  emailProofOfWorkBits: number;
  emailCodeTries: number;
  linkTicketTtlSeconds: number;
  /** Key of the HMAC that emailed codes are stored under; random per process when unset. */
  codeSecret: Buffer | undefined;
  /** Sign-in requests per network address per minute, per operation. */
  rateLimitPerMinute: number;
  /** Token requests (code exchanges and refreshes) per network address per minute. */
  tokenRateLimitPerMinute: number;
}

export interface MailConfig {
  /** `smtp://` or `smtps://`; unset: mails are written to `outboxDir` as `.eml` files. */
  smtpUrl: string | undefined;
  from: string;
  outboxDir: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return value as T;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new ConfigError(name, `must be a whole number (got "${value}")`);
  const parsed = Number(value);
  if (parsed < min || parsed > max) throw new ConfigError(name, `must be between ${min} and ${max} (got ${parsed})`);
  return parsed;
}

/** Days of history to keep (1 to 36500); unset: kept forever. */
function retentionDays(env: Env): RetentionDays {
  const names: RetentionSetting[] = ['RETENTION_INGEST_EVENTS_DAYS', 'RETENTION_INGEST_USAGE_DAYS', 'RETENTION_INGEST_AUDIT_DAYS', 'RETENTION_INGEST_TASKS_DAYS', 'RETENTION_RUN_EVENTS_DAYS'];
  const retention: RetentionDays = {};
  for (const name of names) {
    if (read(env, name) === undefined) continue;
    retention[name] = integer(env, name, 0, 1, 36_500);
  }
  return retention;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new ConfigError(name, `must be true or false (got "${value}")`);
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, mb: 1024 * 1024 };

function byteSize(env: Env, name: string, fallback: number): number {
  const value = read(env, name);
  if (value === undefined) return fallback;
  const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(value);
  if (!match) throw new ConfigError(name, `must be a size such as 1mb, 512kb or 1048576 (got "${value}")`);
  const bytes = Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? 1);
  if (bytes < 1024 || bytes > 64 * 1024 * 1024) throw new ConfigError(name, 'must be between 1kb and 64mb');
  return bytes;
}

function httpUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${value}")`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(name, `must be an http(s) URL (got "${value}")`);
  }
  if (url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new ConfigError(name, 'must be a bare origin such as https://platform.example.com (no path, query or fragment)');
  }
  return url.origin;
}

function database(env: Env): DatabaseConfig {
  const value = read(env, 'DATABASE_URL') ?? 'sqlite:./data/platform.sqlite';
  if (value.startsWith('sqlite:')) {
    const location = value.slice('sqlite:'.length).replace(/^\/\//, '');
    if (location === '') throw new ConfigError('DATABASE_URL', 'sqlite: needs a file path or :memory:');
    return { kind: 'sqlite', flavour: 'mysql', location };
  }
  if (value.startsWith('mysql://') || value.startsWith('mariadb://')) {
    try {
      const url = new URL(value.replace(/^mariadb:/, 'mysql:'));
      if (url.pathname.length < 2) throw new Error('no database');
      return { kind: 'mysql', flavour: value.startsWith('mariadb:') ? 'mariadb' : 'mysql', location: url.toString() };
    } catch {
      throw new ConfigError('DATABASE_URL', 'must be mysql://user:password@host:port/database');
    }
  }
  throw new ConfigError('DATABASE_URL', 'must start with sqlite: or mysql:// (the value is not shown, it may hold a password)');
}

function trustProxy(env: Env): Config['trustProxy'] {
  const value = read(env, 'TRUST_PROXY');
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  const entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  const named = new Set(['loopback', 'linklocal', 'uniquelocal']);
  for (const entry of entries) {
    const address = entry.split('/')[0] ?? '';
    const isAddress = /^[\d.]+$/.test(address) || /^[\da-f:]+$/i.test(address);
    if (!named.has(entry) && !isAddress) {
      throw new ConfigError('TRUST_PROXY', `must be false, true, a hop count, or addresses/subnets (got "${entry}")`);
    }
  }
  return entries;
}

function redisUrl(env: Env): string | undefined {
  const value = read(env, 'REDIS_URL');
  if (value === undefined) return undefined;
  if (!/^rediss?:\/\//.test(value)) throw new ConfigError('REDIS_URL', 'must start with redis:// or rediss://');
  return value;
}

function secretKey(env: Env, name: string): Buffer | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length < 32) throw new ConfigError(name, 'must be at least 32 random bytes, base64url (openssl rand -base64 32)');
  return bytes;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Schemes that run or read something in the browser instead of reaching an app. */
const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:', 'view-source:']);

/**
 * A redirect URI a client may be sent back to: absolute, no fragment (RFC 6749 3.1.2), https or
 * http on a loopback address (RFC 8252 7.3); a mobile app may also use a private-use scheme,
 * which must be a reverse domain name (RFC 8252 7.1: `com.example.app:/callback`).
 */
function redirectUris(env: Env, name: string, client: SignInClient): string[] {
  const value = read(env, name);
  if (value === undefined) return [];
  const uris = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const uri of uris) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new ConfigError(name, `"${uri}" is not an absolute URI`);
    }
    if (url.hash || uri.includes('#')) throw new ConfigError(name, `"${uri}" must not have a fragment`);
    if (url.protocol === 'https:') continue;
    if (url.protocol === 'http:') {
      if (LOOPBACK_HOSTS.has(url.hostname)) continue;
      throw new ConfigError(name, `"${uri}": http is allowed only on loopback addresses (127.0.0.1, [::1], localhost)`);
    }
    if (client === 'mobile' && !FORBIDDEN_SCHEMES.has(url.protocol) && /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) continue;
    throw new ConfigError(
      name,
      client === 'mobile'
        ? `"${uri}" must be https, http on a loopback address, or a reverse-domain private-use scheme (com.example.app:/callback)`
        : `"${uri}" must be https, or http on a loopback address`,
    );
  }
  return uris;
}

function endpointUrl(env: Env, name: string, fallback: string, allowHttpLoopback: boolean): string {
  const value = read(env, name) ?? fallback;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `must be an absolute https URL (got "${value}")`);
  }
  const loopbackHttp = allowHttpLoopback && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) {
    throw new ConfigError(name, 'must be an https URL (http only on loopback with OIDC_ALLOW_HTTP_LOOPBACK=true)');
  }
  if (url.hash || url.search) throw new ConfigError(name, 'must have no query or fragment');
  return value.replace(/\/$/, '');
}

/** Where each provider answers by default; every URL can be set (tests point them at loopback). */
const PROVIDER_DEFAULTS = {
  google: { issuer: 'https://accounts.google.com' },
  // `common`: work, school and personal accounts; openid-client resolves its `{tenantid}` issuer.
  microsoft: { issuer: 'https://login.microsoftonline.com/common/v2.0' },
  github: { authorizationUrl: 'https://github.com/login/oauth/authorize', tokenUrl: 'https://github.com/login/oauth/access_token', apiUrl: 'https://api.github.com' },
  facebook: {
    authorizationUrl: 'https://www.facebook.com/v23.0/dialog/oauth',
    tokenUrl: 'https://graph.facebook.com/v23.0/oauth/access_token',
    apiUrl: 'https://graph.facebook.com/v23.0',
  },
} as const;

function identityProviders(env: Env, allowHttpLoopback: boolean): CloudSignInConfig['providers'] {
  const providers: CloudSignInConfig['providers'] = {};
  for (const id of IDENTITY_PROVIDERS) {
    const prefix = id.toUpperCase();
    const clientId = read(env, `${prefix}_CLIENT_ID`);
    const clientSecret = read(env, `${prefix}_CLIENT_SECRET`);
    if (clientId === undefined && clientSecret === undefined) continue;
    if (clientId === undefined) throw new ConfigError(`${prefix}_CLIENT_ID`, `is required with ${prefix}_CLIENT_SECRET`);
    if (clientSecret === undefined) throw new ConfigError(`${prefix}_CLIENT_SECRET`, `is required with ${prefix}_CLIENT_ID`);
    if (id === 'google' || id === 'microsoft') {
      providers[id] = { kind: 'oidc', clientId, clientSecret, issuer: endpointUrl(env, `${prefix}_ISSUER`, PROVIDER_DEFAULTS[id].issuer, allowHttpLoopback) };
    } else {
      const defaults = PROVIDER_DEFAULTS[id];
      providers[id] = {
        kind: 'oauth2',
        clientId,
        clientSecret,
        authorizationUrl: endpointUrl(env, `${prefix}_AUTHORIZATION_URL`, defaults.authorizationUrl, allowHttpLoopback),
        tokenUrl: endpointUrl(env, `${prefix}_TOKEN_URL`, defaults.tokenUrl, allowHttpLoopback),
        apiUrl: endpointUrl(env, `${prefix}_API_URL`, defaults.apiUrl, allowHttpLoopback),
      };
    }
  }
  return providers;
}

const DEFAULT_PROVIDER_ORDER: readonly SignInProviderId[] = ['google', 'microsoft', 'github', 'facebook', 'email'];

/** The configured order first; any provider it leaves out follows in the default order. */
function providerOrder(env: Env): SignInProviderId[] {
  const value = read(env, 'AUTH_PROVIDER_ORDER');
  if (value === undefined) return [...DEFAULT_PROVIDER_ORDER];
  const named = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of named) {
    if (!(DEFAULT_PROVIDER_ORDER as readonly string[]).includes(entry)) {
      throw new ConfigError('AUTH_PROVIDER_ORDER', `must name providers among ${DEFAULT_PROVIDER_ORDER.join(', ')} (got "${entry}")`);
    }
  }
  const order = [...new Set(named)] as SignInProviderId[];
  return [...order, ...DEFAULT_PROVIDER_ORDER.filter((id) => !order.includes(id))];
}

/**
 * The console's invitation page: an https URL (http on a loopback address, for development) with
 * `{token}` once, in its path, query or fragment (a fragment keeps the token out of the console
 * server's logs). The token is base64url, so it needs no escaping wherever it goes.
 */
function invitationUrl(env: Env): string | undefined {
  const name = 'CLOUD_INVITATION_URL';
  const value = read(env, name);
  if (value === undefined) return undefined;
  if (value.split('{token}').length !== 2) throw new ConfigError(name, 'must hold {token} exactly once, e.g. https://console.example.com/invitations#{token}');
  let url: URL;
  try {
    url = new URL(value.replace('{token}', 'token'));
  } catch {
    throw new ConfigError(name, `must be an absolute https URL (got "${value}")`);
  }
  if (url.username || url.password) throw new ConfigError(name, 'must not carry user information');
  if (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) return value;
  throw new ConfigError(name, 'must be https, or http on a loopback address (127.0.0.1, [::1], localhost)');
}

/** A bearer token of at least 16 visible ASCII characters (`openssl rand -base64 32`); never shown in errors. */
function metricsToken(env: Env): string | undefined {
  const value = read(env, 'METRICS_TOKEN');
  if (value === undefined) return undefined;
  if (!/^[\x21-\x7e]{16,512}$/.test(value)) throw new ConfigError('METRICS_TOKEN', 'must be 16 to 512 visible ASCII characters without spaces (openssl rand -base64 32); the value is not shown');
  return value;
}

/**
 * Exact browser origins, comma-separated: `https://console.example.com` (http only on a loopback
 * address, for development), no path, no wildcard, no `null`. Written as the browser sends them.
 */
function corsAllowedOrigins(env: Env): string[] {
  const name = 'CORS_ALLOWED_ORIGINS';
  const value = read(env, name);
  if (value === undefined) return [];
  const origins = value.split(',').map((entry) => entry.trim());
  for (const entry of origins) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || url.origin === 'null' || url.origin !== entry.toLowerCase() || entry.endsWith('/')) {
      throw new ConfigError(name, `must be a comma-separated list of origins such as https://console.example.com, without path or wildcard (got "${entry}")`);
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
      throw new ConfigError(name, `must be https origins, or http on a loopback address (got "${entry}")`);
    }
  }
  return [...new Set(origins.map((entry) => entry.toLowerCase()))];
}

function smtpUrl(env: Env): string | undefined {
  const value = read(env, 'SMTP_URL');
  if (value === undefined) return undefined;
  if (!/^smtps?:\/\/[^/]/.test(value)) throw new ConfigError('SMTP_URL', 'must start with smtp:// or smtps:// (the value is not shown, it may hold a password)');
  return value;
}

function mailFrom(env: Env, baseUrl: string | undefined): string {
  const value = read(env, 'MAIL_FROM');
  if (value !== undefined) {
    if (!/^[^\r\n]{3,320}$/.test(value) || !value.includes('@')) throw new ConfigError('MAIL_FROM', 'must be an address such as Platform <no-reply@platform.example>');
    return value;
  }
  const host = baseUrl ? new URL(baseUrl).hostname : 'localhost';
  return `Platform <no-reply@${host}>`;
}

export function loadConfig(env: Env = process.env): Config {
  const deployment = oneOf(env, 'PLATFORM_DEPLOYMENT', ['self-hosted', 'cloud'] as const, 'self-hosted');
  const base = read(env, 'PLATFORM_BASE_URL');
  const baseUrl = base === undefined ? undefined : httpUrl('PLATFORM_BASE_URL', base);
  if (deployment === 'cloud' && baseUrl === undefined) {
    throw new ConfigError('PLATFORM_BASE_URL', 'is required when PLATFORM_DEPLOYMENT=cloud');
  }
  const webConcurrency = integer(env, 'WEB_CONCURRENCY', 1, 1, 64);
  const redis = redisUrl(env);
  if (webConcurrency > 1 && redis === undefined) {
    // Each worker would keep its own rate limits, replay cache and relay routing.
    throw new ConfigError('WEB_CONCURRENCY', 'above 1 needs REDIS_URL: workers share rate limits, the DPoP replay cache and relay routing through Redis');
  }
  const headersTimeoutSeconds = integer(env, 'HEADERS_TIMEOUT_SECONDS', 20, 1, 300);
  const requestTimeoutSeconds = integer(env, 'REQUEST_TIMEOUT_SECONDS', 30, 1, 3600);
  if (requestTimeoutSeconds < headersTimeoutSeconds) throw new ConfigError('REQUEST_TIMEOUT_SECONDS', `must be at least HEADERS_TIMEOUT_SECONDS (${headersTimeoutSeconds})`);
  return {
    deployment,
    baseUrl,
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: read(env, 'HOST') ?? '0.0.0.0',
    shutdownTimeoutSeconds: integer(env, 'SHUTDOWN_TIMEOUT_SECONDS', 30, 1, 3600),
    webConcurrency,
    server: {
      maxConnections: integer(env, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      keepAliveTimeoutSeconds: integer(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 65, 1, 3600),
      headersTimeoutSeconds,
      requestTimeoutSeconds,
    },
    database: database(env),
    redisUrl: redis,
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    trustProxy: trustProxy(env),
    jsonBodyLimitBytes: byteSize(env, 'JSON_BODY_LIMIT', 1024 * 1024),
    metricsToken: metricsToken(env),
    corsAllowedOrigins: corsAllowedOrigins(env),
    json: {
      // Below 8 levels a policy document (tools.servers[].tools.<name>) could not be published.
      maxDepth: integer(env, 'JSON_MAX_DEPTH', 32, 8, 256),
      maxKeys: integer(env, 'JSON_MAX_KEYS', 10_000, 100, 1_000_000),
      maxStringLength: integer(env, 'JSON_MAX_STRING_LENGTH', 65_536, 1_024, 64 * 1024 * 1024),
    },
    discoveryMaxAgeSeconds: 300,
    authCache: {
      maxEntries: integer(env, 'AUTH_CACHE_MAX_ENTRIES', 10_000, 0, 1_000_000),
      maxAgeSeconds: integer(env, 'AUTH_CACHE_MAX_AGE_SECONDS', 5, 0, 30),
    },
    oidc: {
      clockSkewSeconds: integer(env, 'OIDC_CLOCK_SKEW_SECONDS', 30, 0, 300),
      jwksCooldownMs: integer(env, 'OIDC_JWKS_COOLDOWN_MS', 30_000, 0, 3_600_000),
      jwksCacheMaxAgeMs: integer(env, 'OIDC_JWKS_MAX_AGE_MS', 600_000, 1_000, 86_400_000),
      allowHttpLoopbackIssuers: boolean(env, 'OIDC_ALLOW_HTTP_LOOPBACK', false),
      httpTimeoutMs: integer(env, 'OIDC_HTTP_TIMEOUT_MS', 5_000, 100, 60_000),
    },
    bootstrapLocalhost: boolean(env, 'PLATFORM_BOOTSTRAP_LOCALHOST', true),
    migrateOnStart: boolean(env, 'MIGRATE_ON_START', true),
    rateLimitsEnabled: boolean(env, 'RATE_LIMITS_ENABLED', true),
    ingest: {
      maxBytes: byteSize(env, 'INGEST_MAX_BYTES', 4 * 1024 * 1024),
      maxItems: integer(env, 'INGEST_MAX_ITEMS', 5000, 1, 100_000),
      maxJsonKeys: integer(env, 'INGEST_MAX_KEYS', 250_000, 100, 10_000_000),
      maxStringLength: integer(env, 'INGEST_MAX_STRING_LENGTH', 1024 * 1024, 1_024, 64 * 1024 * 1024),
      redactionBudgetMs: integer(env, 'INGEST_REDACTION_BUDGET_MS', 2000, 1, 60_000),
      perDevicePerMinute: integer(env, 'INGEST_RATE_LIMIT_PER_MINUTE', 120, 1, 100_000),
    },
    policy: {
      requireIfMatch: boolean(env, 'POLICY_REQUIRE_IF_MATCH', false),
    },
    devices: {
      accessTokenTtlSeconds: integer(env, 'DEVICE_ACCESS_TOKEN_TTL_SECONDS', 3600, 60, 86_400),
      refreshTokenTtlSeconds: integer(env, 'DEVICE_REFRESH_TOKEN_TTL_SECONDS', 30 * 86_400, 3600, 365 * 86_400),
      refreshGraceSeconds: integer(env, 'DEVICE_REFRESH_GRACE_SECONDS', 10, 0, 120),
      deviceCodeTtlSeconds: integer(env, 'DEVICE_CODE_TTL_SECONDS', 600, 60, 3600),
      pollIntervalSeconds: integer(env, 'DEVICE_POLL_INTERVAL_SECONDS', 5, 1, 60),
    },
    dpop: {
      windowSeconds: integer(env, 'DPOP_PROOF_WINDOW_SECONDS', 60, 5, 600),
      futureSkewSeconds: integer(env, 'DPOP_FUTURE_SKEW_SECONDS', 5, 0, 60),
      requireNonce: boolean(env, 'DPOP_REQUIRE_NONCE', false),
      nonceSecret: secretKey(env, 'DPOP_NONCE_SECRET'),
      nonceLifetimeSeconds: integer(env, 'DPOP_NONCE_LIFETIME_SECONDS', 300, 30, 3600),
    },
    cloudAgents: {
      credentialMaxTtlSeconds: integer(env, 'RUN_CREDENTIAL_MAX_TTL_SECONDS', 4 * 3600, 60, 4 * 3600),
      mcpMaxBytes: byteSize(env, 'MCP_MAX_BYTES', 1024 * 1024),
      mcpRequestsPerMinute: integer(env, 'MCP_REQUESTS_PER_MINUTE', 300, 1, 10_000_000),
    },
    relay: {
      callTimeoutMs: integer(env, 'RELAY_CALL_TIMEOUT_MS', 30_000, 100, 600_000),
      heartbeatMs: integer(env, 'RELAY_HEARTBEAT_MS', 30_000, 50, 600_000),
      assertionTtlSeconds: integer(env, 'RELAY_ASSERTION_TTL_SECONDS', 60, 10, 600),
    },
    signingKeys: {
      secret: secretKey(env, 'SIGNING_KEYS_SECRET'),
      rotationSeconds: integer(env, 'SIGNING_KEY_ROTATION_SECONDS', 30 * 86_400, 3_600, 365 * 86_400),
    },
    cloud: {
      redirectUris: {
        console: redirectUris(env, 'AUTH_CONSOLE_REDIRECT_URIS', 'console'),
        mobile: redirectUris(env, 'AUTH_MOBILE_REDIRECT_URIS', 'mobile'),
      },
      providers: identityProviders(env, boolean(env, 'OIDC_ALLOW_HTTP_LOOPBACK', false)),
      providerOrder: providerOrder(env),
      accessTokenTtlSeconds: integer(env, 'AUTH_ACCESS_TOKEN_TTL_SECONDS', 900, 60, 86_400),
      refreshTokenTtlSeconds: integer(env, 'AUTH_REFRESH_TOKEN_TTL_SECONDS', 30 * 86_400, 3600, 365 * 86_400),
      refreshGraceSeconds: integer(env, 'AUTH_REFRESH_GRACE_SECONDS', 10, 0, 120),
      signInCodeTtlSeconds: integer(env, 'AUTH_SIGN_IN_CODE_TTL_SECONDS', 60, 10, 600),
      flowTtlSeconds: integer(env, 'AUTH_FLOW_TTL_SECONDS', 600, 60, 3600),
      emailCodeTtlSeconds: integer(env, 'AUTH_EMAIL_CODE_TTL_SECONDS', 600, 60, 3600),
      emailCodesPerHour: integer(env, 'AUTH_EMAIL_CODES_PER_HOUR', 5, 1, 100),
      emailCodesPerDay: integer(env, 'AUTH_EMAIL_CODES_PER_DAY', 20, 1, 2400),
      emailCodesPerMinute: integer(env, 'AUTH_EMAIL_CODES_PER_MINUTE', 60, 1, 1_000_000),
      emailProofOfWorkBits: integer(env, 'AUTH_EMAIL_PROOF_OF_WORK_BITS', 0, 0, 32),
      emailCodeTries: integer(env, 'AUTH_EMAIL_CODE_TRIES', 5, 1, 10),
      linkTicketTtlSeconds: integer(env, 'AUTH_LINK_TICKET_TTL_SECONDS', 300, 60, 3600),
      codeSecret: secretKey(env, 'AUTH_CODE_SECRET'),
      rateLimitPerMinute: integer(env, 'AUTH_RATE_LIMIT_PER_MINUTE', 30, 1, 100_000),
      tokenRateLimitPerMinute: integer(env, 'AUTH_TOKEN_RATE_LIMIT_PER_MINUTE', 120, 1, 100_000),
    },
    teams: {
      plan: oneOf(env, 'CLOUD_TEAM_PLAN', ['free', 'teams', 'enterprise'] as const, 'teams'),
      invitationTtlSeconds: integer(env, 'CLOUD_INVITATION_TTL_SECONDS', 7 * 86_400, 3600, 90 * 86_400),
      invitationUrl: invitationUrl(env),
      invitationsPerHour: integer(env, 'CLOUD_INVITATIONS_PER_HOUR', 100, 1, 100_000),
    },
    mail: {
      smtpUrl: smtpUrl(env),
      from: mailFrom(env, baseUrl),
      outboxDir: read(env, 'MAIL_OUTBOX_DIR') ?? './data/outbox',
    },
    sweeper: {
      enabled: boolean(env, 'SWEEPER_ENABLED', true),
      intervalSeconds: integer(env, 'SWEEPER_INTERVAL_SECONDS', 300, 10, 86_400),
      batchSize: integer(env, 'SWEEPER_BATCH_SIZE', 1000, 10, 10_000),
      batchPauseMs: integer(env, 'SWEEPER_BATCH_PAUSE_MS', 20, 0, 10_000),
    },
    retention: retentionDays(env),
  };
}

/** One environment variable `loadConfig` reads, for the README's table and the Helm chart. */
export interface ConfigVariable {
  name: string;
  /** Holds a credential or a key: the Helm chart keeps it in a Secret, never in a ConfigMap. */
  secret: boolean;
  /** The value that applies when the variable is unset, as the README's table writes it; none: undefined. */
  default: string | undefined;
}

/**
 * Every variable `loadConfig` reads. test/deploy/config-variables.test.ts fails when this list,
 * `loadConfig`, the README's configuration table and the chart (charts/platform/values.yaml and
 * values.schema.json) disagree, and when a listed default is not what `loadConfig` applies.
 */
export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  { name: 'PLATFORM_DEPLOYMENT', secret: false, default: 'self-hosted' },
  { name: 'PLATFORM_BASE_URL', secret: false, default: undefined },
  { name: 'PORT', secret: false, default: '3000' },
  { name: 'HOST', secret: false, default: '0.0.0.0' },
  { name: 'SHUTDOWN_TIMEOUT_SECONDS', secret: false, default: '30' },
  { name: 'WEB_CONCURRENCY', secret: false, default: '1' },
  { name: 'MAX_CONNECTIONS', secret: false, default: '10000' },
  { name: 'KEEP_ALIVE_TIMEOUT_SECONDS', secret: false, default: '65' },
  { name: 'HEADERS_TIMEOUT_SECONDS', secret: false, default: '20' },
  { name: 'REQUEST_TIMEOUT_SECONDS', secret: false, default: '30' },
  { name: 'DATABASE_URL', secret: true, default: 'sqlite:./data/platform.sqlite' },
  { name: 'REDIS_URL', secret: true, default: undefined },
  { name: 'LOG_LEVEL', secret: false, default: 'info' },
  { name: 'TRUST_PROXY', secret: false, default: 'false' },
  { name: 'JSON_BODY_LIMIT', secret: false, default: '1mb' },
  { name: 'METRICS_TOKEN', secret: true, default: undefined },
  { name: 'CORS_ALLOWED_ORIGINS', secret: false, default: undefined },
  { name: 'OIDC_CLOCK_SKEW_SECONDS', secret: false, default: '30' },
  { name: 'OIDC_JWKS_COOLDOWN_MS', secret: false, default: '30000' },
  { name: 'OIDC_JWKS_MAX_AGE_MS', secret: false, default: '600000' },
  { name: 'OIDC_HTTP_TIMEOUT_MS', secret: false, default: '5000' },
  { name: 'OIDC_ALLOW_HTTP_LOOPBACK', secret: false, default: 'false' },
  { name: 'PLATFORM_BOOTSTRAP_LOCALHOST', secret: false, default: 'true' },
  { name: 'MIGRATE_ON_START', secret: false, default: 'true' },
  { name: 'RATE_LIMITS_ENABLED', secret: false, default: 'true' },
  { name: 'DEVICE_ACCESS_TOKEN_TTL_SECONDS', secret: false, default: '3600' },
  { name: 'DEVICE_REFRESH_TOKEN_TTL_SECONDS', secret: false, default: '2592000' },
  { name: 'DEVICE_REFRESH_GRACE_SECONDS', secret: false, default: '10' },
  { name: 'DEVICE_CODE_TTL_SECONDS', secret: false, default: '600' },
  { name: 'DEVICE_POLL_INTERVAL_SECONDS', secret: false, default: '5' },
  { name: 'AUTH_CACHE_MAX_ENTRIES', secret: false, default: '10000' },
  { name: 'AUTH_CACHE_MAX_AGE_SECONDS', secret: false, default: '5' },
  { name: 'DPOP_PROOF_WINDOW_SECONDS', secret: false, default: '60' },
  { name: 'DPOP_FUTURE_SKEW_SECONDS', secret: false, default: '5' },
  { name: 'DPOP_REQUIRE_NONCE', secret: false, default: 'false' },
  { name: 'DPOP_NONCE_SECRET', secret: true, default: undefined },
  { name: 'DPOP_NONCE_LIFETIME_SECONDS', secret: false, default: '300' },
  { name: 'INGEST_MAX_BYTES', secret: false, default: '4mb' },
  { name: 'INGEST_MAX_ITEMS', secret: false, default: '5000' },
  { name: 'JSON_MAX_DEPTH', secret: false, default: '32' },
  { name: 'JSON_MAX_KEYS', secret: false, default: '10000' },
  { name: 'JSON_MAX_STRING_LENGTH', secret: false, default: '65536' },
  { name: 'INGEST_MAX_KEYS', secret: false, default: '250000' },
  { name: 'INGEST_MAX_STRING_LENGTH', secret: false, default: '1048576' },
  { name: 'INGEST_REDACTION_BUDGET_MS', secret: false, default: '2000' },
  { name: 'INGEST_RATE_LIMIT_PER_MINUTE', secret: false, default: '120' },
  { name: 'POLICY_REQUIRE_IF_MATCH', secret: false, default: 'false' },
  { name: 'RUN_CREDENTIAL_MAX_TTL_SECONDS', secret: false, default: '14400' },
  { name: 'MCP_MAX_BYTES', secret: false, default: '1mb' },
  { name: 'MCP_REQUESTS_PER_MINUTE', secret: false, default: '300' },
  { name: 'RELAY_CALL_TIMEOUT_MS', secret: false, default: '30000' },
  { name: 'RELAY_HEARTBEAT_MS', secret: false, default: '30000' },
  { name: 'RELAY_ASSERTION_TTL_SECONDS', secret: false, default: '60' },
  { name: 'SIGNING_KEYS_SECRET', secret: true, default: undefined },
  { name: 'SIGNING_KEY_ROTATION_SECONDS', secret: false, default: '2592000' },
  { name: 'AUTH_CONSOLE_REDIRECT_URIS', secret: false, default: undefined },
  { name: 'AUTH_MOBILE_REDIRECT_URIS', secret: false, default: undefined },
  { name: 'GOOGLE_CLIENT_ID', secret: false, default: undefined },
  { name: 'GOOGLE_CLIENT_SECRET', secret: true, default: undefined },
  { name: 'MICROSOFT_CLIENT_ID', secret: false, default: undefined },
  { name: 'MICROSOFT_CLIENT_SECRET', secret: true, default: undefined },
  { name: 'GOOGLE_ISSUER', secret: false, default: 'https://accounts.google.com' },
  { name: 'MICROSOFT_ISSUER', secret: false, default: 'https://login.microsoftonline.com/common/v2.0' },
  { name: 'GITHUB_CLIENT_ID', secret: false, default: undefined },
  { name: 'GITHUB_CLIENT_SECRET', secret: true, default: undefined },
  { name: 'FACEBOOK_CLIENT_ID', secret: false, default: undefined },
  { name: 'FACEBOOK_CLIENT_SECRET', secret: true, default: undefined },
  { name: 'GITHUB_AUTHORIZATION_URL', secret: false, default: 'https://github.com/login/oauth/authorize' },
  { name: 'GITHUB_TOKEN_URL', secret: false, default: 'https://github.com/login/oauth/access_token' },
  { name: 'GITHUB_API_URL', secret: false, default: 'https://api.github.com' },
  { name: 'FACEBOOK_AUTHORIZATION_URL', secret: false, default: 'https://www.facebook.com/v23.0/dialog/oauth' },
  { name: 'FACEBOOK_TOKEN_URL', secret: false, default: 'https://graph.facebook.com/v23.0/oauth/access_token' },
  { name: 'FACEBOOK_API_URL', secret: false, default: 'https://graph.facebook.com/v23.0' },
  { name: 'AUTH_PROVIDER_ORDER', secret: false, default: 'google,microsoft,github,facebook,email' },
  { name: 'AUTH_ACCESS_TOKEN_TTL_SECONDS', secret: false, default: '900' },
  { name: 'AUTH_REFRESH_TOKEN_TTL_SECONDS', secret: false, default: '2592000' },
  { name: 'AUTH_REFRESH_GRACE_SECONDS', secret: false, default: '10' },
  { name: 'AUTH_SIGN_IN_CODE_TTL_SECONDS', secret: false, default: '60' },
  { name: 'AUTH_FLOW_TTL_SECONDS', secret: false, default: '600' },
  { name: 'AUTH_EMAIL_CODE_TTL_SECONDS', secret: false, default: '600' },
  { name: 'AUTH_EMAIL_CODES_PER_HOUR', secret: false, default: '5' },
  { name: 'AUTH_EMAIL_CODES_PER_DAY', secret: false, default: '20' },
  { name: 'AUTH_EMAIL_CODES_PER_MINUTE', secret: false, default: '60' },
  { name: 'AUTH_EMAIL_PROOF_OF_WORK_BITS', secret: false, default: '0' },
  { name: 'AUTH_EMAIL_CODE_TRIES', secret: false, default: '5' },
  { name: 'AUTH_LINK_TICKET_TTL_SECONDS', secret: false, default: '300' },
  { name: 'AUTH_CODE_SECRET', secret: true, default: undefined },
  { name: 'AUTH_RATE_LIMIT_PER_MINUTE', secret: false, default: '30' },
  { name: 'AUTH_TOKEN_RATE_LIMIT_PER_MINUTE', secret: false, default: '120' },
  { name: 'CLOUD_TEAM_PLAN', secret: false, default: 'teams' },
  { name: 'CLOUD_INVITATION_TTL_SECONDS', secret: false, default: '604800' },
  { name: 'CLOUD_INVITATION_URL', secret: false, default: undefined },
  { name: 'CLOUD_INVITATIONS_PER_HOUR', secret: false, default: '100' },
  { name: 'SMTP_URL', secret: true, default: undefined },
  { name: 'MAIL_FROM', secret: false, default: undefined },
  { name: 'MAIL_OUTBOX_DIR', secret: false, default: './data/outbox' },
  { name: 'SWEEPER_ENABLED', secret: false, default: 'true' },
  { name: 'SWEEPER_INTERVAL_SECONDS', secret: false, default: '300' },
  { name: 'SWEEPER_BATCH_SIZE', secret: false, default: '1000' },
  { name: 'SWEEPER_BATCH_PAUSE_MS', secret: false, default: '20' },
  { name: 'RETENTION_INGEST_EVENTS_DAYS', secret: false, default: undefined },
  { name: 'RETENTION_INGEST_USAGE_DAYS', secret: false, default: undefined },
  { name: 'RETENTION_INGEST_AUDIT_DAYS', secret: false, default: undefined },
  { name: 'RETENTION_INGEST_TASKS_DAYS', secret: false, default: undefined },
  { name: 'RETENTION_RUN_EVENTS_DAYS', secret: false, default: undefined },
];
