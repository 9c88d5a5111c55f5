/**
 * Configuration comes from the environment only, read and validated here, once, at start. Each
 * variable is declared once, in src/config/variables.ts (type, bounds, default, secret, meaning);
 * this file reads them all with that declaration, checks the rules that tie several together, and
 * shapes the typed configuration the composition root (src/app.ts) hands out: `Config` is derived
 * from the declarations, never written beside them. A bad value stops the process with one line
 * per bad variable, naming it.
 *
 * Modules never import this file: they declare the settings they need and src/app.ts builds them
 * from `Config`. The configuration imports modules' word lists to validate values (one way only).
 */

import { availableParallelism } from 'node:os';
import type { Deployment } from './deployment.js';
import { IDENTITY_PROVIDERS, type IdentityProviderId } from './modules/signin/settings.js';
import type { RetentionDays, RetentionSetting } from './sweeper/kinds.js';
import { endpointProblem } from './config/parsers.js';
import type { ValueOf } from './config/variable.js';
import { VARIABLES, type LOG_LEVELS } from './config/variables.js';

export type { DatabaseConfig } from './config/parsers.js';
export type { Deployment } from './deployment.js';
export type LogLevel = (typeof LOG_LEVELS)[number];

type VariableName = keyof typeof VARIABLES;
/** Every variable's value, as its declaration parses it. */
type Values = { [Name in VariableName]: ValueOf<(typeof VARIABLES)[Name]> };

/** A variable's value refused: `VARIABLE: problem`, one line. */
export interface ConfigProblem {
  variable: string;
  problem: string;
}

/** The configuration cannot work: one line per bad variable, each naming it. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(variable: string, problem: string, more: readonly ConfigProblem[] = []) {
    const problems = [{ variable, problem }, ...more];
    super(problems.map((each) => `${each.variable}: ${each.problem}`).join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }

  /** The first variable refused. */
  get variable(): string {
    return this.problems[0]!.variable;
  }

  /** The message with `prefix` before each line (each names its variable). */
  lines(prefix: string): string {
    return this.problems.map((each) => `${prefix}${each.variable}: ${each.problem}`).join('\n');
  }
}

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

/** The variables of each identity provider: its client, and its endpoints (checked only when it is enabled). */
const PROVIDER_VARIABLES = {
  google: { kind: 'oidc', clientId: 'GOOGLE_CLIENT_ID', clientSecret: 'GOOGLE_CLIENT_SECRET', endpoints: { issuer: 'GOOGLE_ISSUER' } },
  microsoft: { kind: 'oidc', clientId: 'MICROSOFT_CLIENT_ID', clientSecret: 'MICROSOFT_CLIENT_SECRET', endpoints: { issuer: 'MICROSOFT_ISSUER' } },
  github: {
    kind: 'oauth2',
    clientId: 'GITHUB_CLIENT_ID',
    clientSecret: 'GITHUB_CLIENT_SECRET',
    endpoints: { authorizationUrl: 'GITHUB_AUTHORIZATION_URL', tokenUrl: 'GITHUB_TOKEN_URL', apiUrl: 'GITHUB_API_URL' },
  },
  facebook: {
    kind: 'oauth2',
    clientId: 'FACEBOOK_CLIENT_ID',
    clientSecret: 'FACEBOOK_CLIENT_SECRET',
    endpoints: { authorizationUrl: 'FACEBOOK_AUTHORIZATION_URL', tokenUrl: 'FACEBOOK_TOKEN_URL', apiUrl: 'FACEBOOK_API_URL' },
  },
} as const satisfies Record<IdentityProviderId, { kind: ProviderConfig['kind']; clientId: VariableName; clientSecret: VariableName; endpoints: Record<string, VariableName> }>;

const RETENTION_VARIABLES = [
  'AUDIT_RETENTION_DAYS',
  'RETENTION_INGEST_EVENTS_DAYS',
  'RETENTION_INGEST_USAGE_DAYS',
  'RETENTION_INGEST_AUDIT_DAYS',
  'RETENTION_INGEST_TASKS_DAYS',
  'RETENTION_RUN_EVENTS_DAYS',
] as const satisfies readonly (RetentionSetting & VariableName)[];

/** A rule over several variables, checked when every variable it reads has a valid value. */
interface Rule {
  reads: readonly VariableName[];
  check(values: Values): [VariableName, string][];
}

const RULES: readonly Rule[] = [
  {
    reads: ['PLATFORM_DEPLOYMENT', 'PLATFORM_BASE_URL'],
    check: (values) => (values.PLATFORM_DEPLOYMENT === 'cloud' && values.PLATFORM_BASE_URL === undefined ? [['PLATFORM_BASE_URL', 'is required when PLATFORM_DEPLOYMENT=cloud']] : []),
  },
  {
    reads: ['WEB_CONCURRENCY', 'REDIS_URL'],
    // Each worker would keep its own rate limits, replay cache and relay routing.
    check: (values) =>
      values.WEB_CONCURRENCY > 1 && values.REDIS_URL === undefined
        ? [['WEB_CONCURRENCY', 'above 1 needs REDIS_URL: workers share rate limits, the DPoP replay cache and relay routing through Redis']]
        : [],
  },
  {
    reads: ['REDIS_URL', 'REDIS_MODE', 'REDIS_SENTINEL_NAME'],
    check: (values) => {
      if (values.REDIS_MODE === 'sentinel' && values.REDIS_SENTINEL_NAME === undefined) return [['REDIS_SENTINEL_NAME', 'is required when REDIS_MODE=sentinel']];
      if (values.REDIS_MODE === 'standalone' && /^rediss?:\/\/[^/]*,/.test(values.REDIS_URL ?? '')) {
        return [['REDIS_MODE', 'REDIS_URL names several addresses: set REDIS_MODE=cluster or sentinel']];
      }
      return [];
    },
  },
  {
    reads: ['DATABASE_URL', 'DATABASE_READ_URL'],
    check: (values) =>
      values.DATABASE_READ_URL !== undefined && values.DATABASE_URL.kind !== 'mysql'
        ? [['DATABASE_READ_URL', 'needs DATABASE_URL to be MySQL or MariaDB (the replica of that primary)']]
        : [],
  },
  {
    reads: ['HEADERS_TIMEOUT_SECONDS', 'REQUEST_TIMEOUT_SECONDS'],
    check: (values) =>
      values.REQUEST_TIMEOUT_SECONDS < values.HEADERS_TIMEOUT_SECONDS ? [['REQUEST_TIMEOUT_SECONDS', `must be at least HEADERS_TIMEOUT_SECONDS (${values.HEADERS_TIMEOUT_SECONDS})`]] : [],
  },
  // A provider is enabled by its client id and secret, both or neither; then its endpoints must be https.
  ...IDENTITY_PROVIDERS.map((id): Rule => {
    const names = PROVIDER_VARIABLES[id];
    const endpoints: VariableName[] = Object.values(names.endpoints);
    return {
      reads: [names.clientId, names.clientSecret, 'OIDC_ALLOW_HTTP_LOOPBACK', ...endpoints],
      check(values) {
        const clientId = values[names.clientId];
        const clientSecret = values[names.clientSecret];
        if (clientId === undefined && clientSecret === undefined) return [];
        if (clientId === undefined) return [[names.clientId, `is required with ${names.clientSecret}`]];
        if (clientSecret === undefined) return [[names.clientSecret, `is required with ${names.clientId}`]];
        return endpoints.flatMap((name): [VariableName, string][] => {
          const problem = endpointProblem(values[name] as string, values.OIDC_ALLOW_HTTP_LOOPBACK);
          return problem === undefined ? [] : [[name, problem]];
        });
      },
    };
  }),
];

/** The enabled identity providers, each with its endpoints (a trailing slash dropped). */
function identityProviders(values: Values): Partial<Record<IdentityProviderId, ProviderConfig>> {
  const providers: Partial<Record<IdentityProviderId, ProviderConfig>> = {};
  const endpoint = (name: VariableName) => (values[name] as string).replace(/\/$/, '');
  for (const id of IDENTITY_PROVIDERS) {
    const names = PROVIDER_VARIABLES[id];
    const clientId = values[names.clientId];
    const clientSecret = values[names.clientSecret];
    if (clientId === undefined || clientSecret === undefined) continue;
    const endpoints = names.endpoints as Record<string, VariableName>;
    providers[id] =
      names.kind === 'oidc'
        ? { kind: 'oidc', clientId, clientSecret, issuer: endpoint(endpoints.issuer!) }
        : {
            kind: 'oauth2',
            clientId,
            clientSecret,
            authorizationUrl: endpoint(endpoints.authorizationUrl!),
            tokenUrl: endpoint(endpoints.tokenUrl!),
            apiUrl: endpoint(endpoints.apiUrl!),
          };
  }
  return providers;
}

/** The configuration as the service uses it, shaped from the variables' values. */
function shape(values: Values) {
  const retention: RetentionDays = {};
  for (const name of RETENTION_VARIABLES) if (values[name] !== undefined) retention[name] = values[name];
  return {
    deployment: values.PLATFORM_DEPLOYMENT satisfies Deployment,
    /** The public base address on Cloud; on self-hosted the organisation's host name decides it. */
    baseUrl: values.PLATFORM_BASE_URL,
    port: values.PORT,
    host: values.HOST,
    shutdownTimeoutSeconds: values.SHUTDOWN_TIMEOUT_SECONDS,
    webConcurrency: values.WEB_CONCURRENCY,
    /** The HTTP server's bounds on slow, idle and too many clients (src/lifecycle.ts). */
    server: {
      maxConnections: values.MAX_CONNECTIONS,
      keepAliveTimeoutSeconds: values.KEEP_ALIVE_TIMEOUT_SECONDS,
      headersTimeoutSeconds: values.HEADERS_TIMEOUT_SECONDS,
      requestTimeoutSeconds: values.REQUEST_TIMEOUT_SECONDS,
    },
    database: values.DATABASE_URL,
    /** A read replica of the primary for the reads that may lag (src/db/read-replica.ts); absent: every read on the primary. */
    databaseRead: values.DATABASE_READ_URL,
    redisUrl: values.REDIS_URL,
    /** How REDIS_URL is used: one server, a cluster's seed nodes, or sentinels (adapters/state/redis.ts). */
    redisMode: values.REDIS_MODE,
    redisSentinelName: values.REDIS_SENTINEL_NAME,
    logLevel: values.LOG_LEVEL,
    /** Express `trust proxy` value: false, true, a hop count, or a list of addresses/subnets. */
    trustProxy: values.TRUST_PROXY,
    jsonBodyLimitBytes: values.JSON_BODY_LIMIT,
    metricsToken: values.METRICS_TOKEN,
    corsAllowedOrigins: values.CORS_ALLOWED_ORIGINS ?? [],
    /** Bounds on every JSON body (and free-form JSON read back from storage); routes may declare their own. */
    json: {
      maxDepth: values.JSON_MAX_DEPTH,
      maxKeys: values.JSON_MAX_KEYS,
      maxStringLength: values.JSON_MAX_STRING_LENGTH,
    },
    /** In-process caches of verified credentials (src/auth/auth-cache.ts); 0 entries or 0 s: off. */
    authCache: {
      maxEntries: values.AUTH_CACHE_MAX_ENTRIES,
      maxAgeSeconds: values.AUTH_CACHE_MAX_AGE_SECONDS,
    },
    oidc: {
      clockSkewSeconds: values.OIDC_CLOCK_SKEW_SECONDS,
      jwksCooldownMs: values.OIDC_JWKS_COOLDOWN_MS,
      jwksCacheMaxAgeMs: values.OIDC_JWKS_MAX_AGE_MS,
      allowHttpLoopbackIssuers: values.OIDC_ALLOW_HTTP_LOOPBACK,
      httpTimeoutMs: values.OIDC_HTTP_TIMEOUT_MS,
    },
    bootstrapLocalhost: values.PLATFORM_BOOTSTRAP_LOCALHOST,
    migrateOnStart: values.MIGRATE_ON_START,
    rateLimitsEnabled: values.RATE_LIMITS_ENABLED,
    ingest: {
      maxBytes: values.INGEST_MAX_BYTES,
      maxItems: values.INGEST_MAX_ITEMS,
      maxJsonKeys: values.INGEST_MAX_KEYS,
      maxStringLength: values.INGEST_MAX_STRING_LENGTH,
      redactionBudgetMs: values.INGEST_REDACTION_BUDGET_MS,
      perDevicePerMinute: values.INGEST_RATE_LIMIT_PER_MINUTE,
    },
    /** The SVG check of pictures (src/modules/pictures/svg/check-pool.ts). */
    svgCheck: {
      threads: values.SVG_CHECK_THREADS ?? Math.max(1, availableParallelism() - 1),
      queue: values.SVG_CHECK_QUEUE,
      timeoutMs: values.SVG_CHECK_TIMEOUT_MS,
    },
    policy: {
      requireIfMatch: values.POLICY_REQUIRE_IF_MATCH,
    },
    devices: {
      accessTokenTtlSeconds: values.DEVICE_ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: values.DEVICE_REFRESH_TOKEN_TTL_SECONDS,
      refreshGraceSeconds: values.DEVICE_REFRESH_GRACE_SECONDS,
      deviceCodeTtlSeconds: values.DEVICE_CODE_TTL_SECONDS,
      pollIntervalSeconds: values.DEVICE_POLL_INTERVAL_SECONDS,
    },
    dpop: {
      windowSeconds: values.DPOP_PROOF_WINDOW_SECONDS,
      futureSkewSeconds: values.DPOP_FUTURE_SKEW_SECONDS,
      requireNonce: values.DPOP_REQUIRE_NONCE,
      /** Shared by every replica; random per process when unset (one replica only). */
      nonceSecret: values.DPOP_NONCE_SECRET,
      nonceLifetimeSeconds: values.DPOP_NONCE_LIFETIME_SECONDS,
    },
    cloudAgents: {
      credentialMaxTtlSeconds: values.RUN_CREDENTIAL_MAX_TTL_SECONDS,
      mcpMaxBytes: values.MCP_MAX_BYTES,
      mcpRequestsPerMinute: values.MCP_REQUESTS_PER_MINUTE,
    },
    relay: {
      callTimeoutMs: values.RELAY_CALL_TIMEOUT_MS,
      heartbeatMs: values.RELAY_HEARTBEAT_MS,
      assertionTtlSeconds: values.RELAY_ASSERTION_TTL_SECONDS,
    },
    signingKeys: {
      /** Seals the private signing keys kept in the database; unset: keys live in this process only. */
      secret: values.SIGNING_KEYS_SECRET,
      rotationSeconds: values.SIGNING_KEY_ROTATION_SECONDS,
    },
    /** Cloud sign-in (spec 4.3): src/modules/signin's settings, the identity providers and the code key beside them. */
    cloud: {
      redirectUris: {
        console: values.AUTH_CONSOLE_REDIRECT_URIS ?? [],
        mobile: values.AUTH_MOBILE_REDIRECT_URIS ?? [],
      },
      /** Enabled identity providers (client id and secret configured). */
      providers: identityProviders(values),
      providerOrder: values.AUTH_PROVIDER_ORDER,
      accessTokenTtlSeconds: values.AUTH_ACCESS_TOKEN_TTL_SECONDS,
      refreshTokenTtlSeconds: values.AUTH_REFRESH_TOKEN_TTL_SECONDS,
      refreshGraceSeconds: values.AUTH_REFRESH_GRACE_SECONDS,
      signInCodeTtlSeconds: values.AUTH_SIGN_IN_CODE_TTL_SECONDS,
      flowTtlSeconds: values.AUTH_FLOW_TTL_SECONDS,
      emailCodeTtlSeconds: values.AUTH_EMAIL_CODE_TTL_SECONDS,
      emailCodesPerHour: values.AUTH_EMAIL_CODES_PER_HOUR,
      emailCodesPerDay: values.AUTH_EMAIL_CODES_PER_DAY,
      emailCodesPerMinute: values.AUTH_EMAIL_CODES_PER_MINUTE,
      /** Leading zero bits of the built-in proof of work `POST /auth/v1/email/start` asks for; 0: off. */
      emailProofOfWorkBits: values.AUTH_EMAIL_PROOF_OF_WORK_BITS,
      emailCodeTries: values.AUTH_EMAIL_CODE_TRIES,
      linkTicketTtlSeconds: values.AUTH_LINK_TICKET_TTL_SECONDS,
      /** Key of the HMAC that emailed codes are stored under; random per process when unset. */
      codeSecret: values.AUTH_CODE_SECRET,
      rateLimitPerMinute: values.AUTH_RATE_LIMIT_PER_MINUTE,
      tokenRateLimitPerMinute: values.AUTH_TOKEN_RATE_LIMIT_PER_MINUTE,
    },
    /** Cloud teams (spec 4.5): src/modules/teams's settings. */
    teams: {
      plan: values.CLOUD_TEAM_PLAN,
      invitationTtlSeconds: values.CLOUD_INVITATION_TTL_SECONDS,
      invitationUrl: values.CLOUD_INVITATION_URL,
      invitationsPerHour: values.CLOUD_INVITATIONS_PER_HOUR,
    },
    mail: {
      /** `smtp://` or `smtps://`; unset: mails are written to `outboxDir` as `.eml` files. */
      smtpUrl: values.SMTP_URL,
      from: values.MAIL_FROM ?? `Platform <no-reply@${values.PLATFORM_BASE_URL ? new URL(values.PLATFORM_BASE_URL).hostname : 'localhost'}>`,
      outboxDir: values.MAIL_OUTBOX_DIR,
    },
    /** The device approval page's look (src/web/device-approval/look.ts). */
    page: {
      productName: values.PAGE_PRODUCT_NAME,
      logoUrl: values.PAGE_LOGO_URL,
      accent: values.PAGE_ACCENT,
    },
    /** The sweeper (src/sweeper): what is past its use goes, every few minutes, one replica at a time. */
    sweeper: {
      enabled: values.SWEEPER_ENABLED,
      intervalSeconds: values.SWEEPER_INTERVAL_SECONDS,
      /** Rows per batch (one statement; the rows it locks). */
      batchSize: values.SWEEPER_BATCH_SIZE,
      /** Wait between two batches, milliseconds. */
      batchPauseMs: values.SWEEPER_BATCH_PAUSE_MS,
    },
    /** Days each kind of history is kept (RETENTION_*_DAYS); a kind not set is kept forever. */
    retention,
  };
}

export type Config = ReturnType<typeof shape>;
export type ServerLimits = Config['server'];

const NAMES = Object.keys(VARIABLES) as VariableName[];

type Env = Record<string, string | undefined>;

/** A variable's text as the configuration reads it: trimmed; empty (or only white space) is unset. */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

export function loadConfig(env: Env = process.env): Config {
  const values: Partial<Record<VariableName, unknown>> = {};
  const problems = new Map<VariableName, string>();
  for (const name of NAMES) {
    const result = VARIABLES[name].field.safeParse(read(env, name));
    // One line per bad variable: its first problem.
    if (result.success) values[name] = result.data;
    else problems.set(name, result.error.issues[0]!.message);
  }
  // A rule over several variables speaks only when each of them has a valid value of its own.
  for (const rule of RULES) {
    if (rule.reads.some((name) => problems.has(name))) continue;
    for (const [name, problem] of rule.check(values as Values)) if (!problems.has(name)) problems.set(name, problem);
  }
  if (problems.size > 0) {
    const [first, ...more] = NAMES.filter((name) => problems.has(name)).map((variable) => ({ variable, problem: problems.get(variable)! }));
    throw new ConfigError(first!.variable, first!.problem, more);
  }
  return shape(values as Values);
}

/** One environment variable `loadConfig` reads, for the configuration table (docs/operations/configuration.md) and the Helm chart. */
export interface ConfigVariable {
  name: string;
  /** Holds a credential or a key: the Helm chart keeps it in a Secret, never in a ConfigMap. */
  secret: boolean;
  /** The value that applies when the variable is unset, as the configuration table writes it; none: undefined. */
  default: string | undefined;
  /** What it means (Markdown), for the configuration table. */
  description: string;
  /** The table: said of the default (after it in parentheses; without one, instead of "none"). */
  defaultNote: string | undefined;
  /** The table: the values it takes, where its type bounds them. */
  values: string | undefined;
  /** The chart's JSON Schema of its value (values.schema.json). */
  json: Record<string, unknown>;
}

/**
 * Every variable `loadConfig` reads, from the declarations (src/config/variables.ts), in their
 * order. test/deploy/config-variables.test.ts generates the configuration table (docs/operations/configuration.md) and the chart's
 * values.schema.json env sections from it, and checks the chart's values.yaml against it.
 */
export const CONFIG_VARIABLES: readonly ConfigVariable[] = NAMES.map((name) => {
  const variable = VARIABLES[name];
  return {
    name,
    secret: variable.secret,
    default: variable.default,
    description: variable.description,
    defaultNote: variable.defaultNote,
    values: variable.values,
    json: variable.json,
  };
});
