/**
 * Configuration comes from the environment only. Every variable is read and validated here,
 * once, at start; a bad value stops the process with one line naming the variable.
 * The README documents each variable (keep the table there in step with this file).
 */

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
  database: DatabaseConfig;
  redisUrl: string | undefined;
  logLevel: LogLevel;
  /** Express `trust proxy` value: false, true, a hop count, or a list of addresses/subnets. */
  trustProxy: boolean | number | string[];
  jsonBodyLimitBytes: number;
  /** Bounds on every JSON body (and free-form JSON read back from storage); routes may declare their own. */
  json: {
    maxDepth: number;
    maxKeys: number;
    maxStringLength: number;
  };
  discoveryMaxAgeSeconds: number;
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

function nonceSecret(env: Env): Buffer | undefined {
  const value = read(env, 'DPOP_NONCE_SECRET');
  if (value === undefined) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length < 32) throw new ConfigError('DPOP_NONCE_SECRET', 'must be at least 32 random bytes, base64url (openssl rand -base64 32)');
  return bytes;
}

export function loadConfig(env: Env = process.env): Config {
  const deployment = oneOf(env, 'PLATFORM_DEPLOYMENT', ['self-hosted', 'cloud'] as const, 'self-hosted');
  const base = read(env, 'PLATFORM_BASE_URL');
  const baseUrl = base === undefined ? undefined : httpUrl('PLATFORM_BASE_URL', base);
  if (deployment === 'cloud' && baseUrl === undefined) {
    throw new ConfigError('PLATFORM_BASE_URL', 'is required when PLATFORM_DEPLOYMENT=cloud');
  }
  return {
    deployment,
    baseUrl,
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: read(env, 'HOST') ?? '0.0.0.0',
    database: database(env),
    redisUrl: redisUrl(env),
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    trustProxy: trustProxy(env),
    jsonBodyLimitBytes: byteSize(env, 'JSON_BODY_LIMIT', 1024 * 1024),
    json: {
      // Below 8 levels a policy document (tools.servers[].tools.<name>) could not be published.
      maxDepth: integer(env, 'JSON_MAX_DEPTH', 32, 8, 256),
      maxKeys: integer(env, 'JSON_MAX_KEYS', 10_000, 100, 1_000_000),
      maxStringLength: integer(env, 'JSON_MAX_STRING_LENGTH', 65_536, 1_024, 64 * 1024 * 1024),
    },
    discoveryMaxAgeSeconds: 300,
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
      nonceSecret: nonceSecret(env),
      nonceLifetimeSeconds: integer(env, 'DPOP_NONCE_LIFETIME_SECONDS', 300, 30, 3600),
    },
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
  { name: 'DATABASE_URL', secret: true, default: 'sqlite:./data/platform.sqlite' },
  { name: 'REDIS_URL', secret: true, default: undefined },
  { name: 'LOG_LEVEL', secret: false, default: 'info' },
  { name: 'TRUST_PROXY', secret: false, default: 'false' },
  { name: 'JSON_BODY_LIMIT', secret: false, default: '1mb' },
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
  { name: 'POLICY_REQUIRE_IF_MATCH', secret: false, default: 'false' },
];
