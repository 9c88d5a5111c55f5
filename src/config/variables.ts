import { DEPLOYMENTS } from '../deployment.js';
import { ORGANISATION_PLANS } from '../modules/organisation/entities.js';
import { SIGN_IN_PROVIDERS } from '../modules/signin/settings.js';
import {
  corsAllowedOrigins,
  database,
  readDatabase,
  httpOrigin,
  invitationUrl,
  mailFrom,
  metricsToken,
  pageAccent,
  pageLogoUrl,
  providerOrder,
  redirectUris,
  redisUrl,
  secretKey,
  smtpUrl,
  trustProxy,
} from './parsers.js';
import { choice, flag, integer, parsed, size, text, type JsonSchema, type Variable } from './variable.js';

/**
 * Every environment variable the service reads, each declared once: its type and bounds, its
 * default, whether it is a secret, and what it means (src/config/variable.ts says how). The
 * typed configuration is derived from this (src/config.ts), and so are the
 * configuration table of docs/operations/configuration.md and the Helm chart's values.schema.json env sections (generated:
 * test/deploy/config-variables.test.ts fails when either drifts; UPDATE_DOCS=1 and
 * UPDATE_CHART=1 rewrite them). The order here is the order of that table.
 *
 * Lists of words come from the code that owns them (the deployments, the organisation plans,
 * sign-in's providers and clients): the configuration depends on those modules to validate
 * values, never a module on the configuration. Modules receive their settings from src/app.ts.
 */

/** REDIS_MODE: how REDIS_URL's addresses are used (adapters/state/redis.ts). */
export const REDIS_MODES = ['standalone', 'cluster', 'sentinel'] as const;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A key of at least 32 bytes, base64url, as the chart accepts it (empty: unset). */
const SECRET_KEY_JSON: JsonSchema = { type: 'string', pattern: '^(|[A-Za-z0-9+/_-]{43,}={0,2})$' };
const SECRET_KEY_VALUES = '≥ 32 random bytes, base64url';
/** An identity provider's endpoint, checked when the provider is enabled (src/config.ts). */
const PROVIDER_URL_VALUES = 'an https URL (http on loopback with `OIDC_ALLOW_HTTP_LOOPBACK`)';

export const VARIABLES = {
  PLATFORM_DEPLOYMENT: choice(DEPLOYMENTS, {
    default: 'self-hosted',
    description: 'Which deployment this is: Cloud (the caller names the organisation) or self-hosted (the host name does).',
  }),
  PLATFORM_BASE_URL: parsed(httpOrigin, {
    defaultNote: 'none (required on Cloud)',
    values: 'an http(s) origin',
    json: { type: 'string', pattern: '^(|https?://[^/?#]+/?)$' },
    description:
      "The public origin, e.g. `https://api.platform.example`: every absolute URL the service builds or checks (discovery `apiBaseUrl`, `verification_uri`, DPoP `htu`, the approval page's redirect URI) starts with it. Self-hosted without it: the request's validated host name (see [One trusted origin](../security/trusted-origin.md#one-trusted-origin)); self-hosted with it: its host also selects the organisation.",
  }),
  PORT: integer({ default: 3000, min: 0, max: 65535, description: 'Listening port.' }),
  HOST: text({ default: '0.0.0.0', description: 'Listening address.' }),
  SHUTDOWN_TIMEOUT_SECONDS: integer({
    default: 30,
    min: 1,
    max: 3600,
    description:
      "After SIGTERM or SIGINT, how long requests in flight may take to finish before their connections are closed (exit 1 then, 0 otherwise). Keep the chart's `terminationGracePeriodSeconds` above `preStopSleepSeconds` plus this. See [Stopping](stopping.md#stopping).",
  }),
  MAX_CONNECTIONS: integer({
    default: 10_000,
    min: 1,
    max: 1_000_000,
    description:
      "Open connections one process holds (every workbench's control channel is one); past it a new connection is closed as it arrives, with one warning line a minute at most. The per-address limits belong at the ingress: see [Slow and idle clients](deployments.md#slow-and-idle-clients).",
  }),
  KEEP_ALIVE_TIMEOUT_SECONDS: integer({
    default: 65,
    min: 1,
    max: 3600,
    description:
      "How long an idle keep-alive connection is kept. Keep it above the idle timeout of the proxy in front (the chart's ingress-nginx keeps upstream connections 60 s), so that the proxy, not the service, closes an idle connection (else the proxy may send a request on a connection the service is closing: a 502).",
  }),
  HEADERS_TIMEOUT_SECONDS: integer({
    default: 20,
    min: 1,
    max: 300,
    description:
      "From a request's first byte to the end of its head; a slower client is answered 408 and closed, within a second of it (the server checks every second).",
  }),
  REQUEST_TIMEOUT_SECONDS: integer({
    default: 30,
    min: 1,
    max: 3600,
    description: "From a request's first byte to the end of its body, likewise; at least `HEADERS_TIMEOUT_SECONDS`.",
  }),
  WEB_CONCURRENCY: integer({
    default: 1,
    min: 1,
    max: 64,
    description:
      'Worker processes sharing the port (node:cluster), for one machine with several cores. Above 1 needs `REDIS_URL` (the service refuses to start otherwise, exit 2). See [Stopping](stopping.md#stopping).',
  }),
  DATABASE_URL: parsed(database, {
    default: 'sqlite:./data/platform.sqlite',
    secret: true,
    values: '`sqlite:…`, `mysql://…`, `mariadb://…`',
    // The chart keeps SQLite's URL itself (`database.kind: sqlite`): its secret is MySQL's or MariaDB's.
    json: { type: 'string', pattern: '^(|(mysql|mariadb)://.+/.+)$' },
    description:
      '`sqlite:<file>` (embedded, WAL), `sqlite::memory:`, `mysql://user:password@host:3306/db` (MySQL 8.0+) or `mariadb://…` (MariaDB 10.11+): see [Supported databases](deployments.md#supported-databases). Unreachable at start: the service waits for it (see [Health, readiness and start-up](outages.md#health-readiness-and-start-up)).',
  }),
  DATABASE_READ_URL: parsed(readDatabase, {
    secret: true,
    values: '`mysql://…`, `mariadb://…`',
    json: { type: 'string', pattern: '^(|(mysql|mariadb)://.+/.+)$' },
    description:
      "A read replica of `DATABASE_URL`'s MySQL or MariaDB database (optional). It answers the hot reads that may lag a little: device and Cloud session access tokens by their hash while it has applied every revocation, and published policy revisions the primary has numbered; everything that decides or changes (revocation, single-use codes, refresh reuse) stays on the primary, and the primary answers whenever the replica lags, misses or fails. See [Read replicas](request-costs.md#read-replicas).",
  }),
  REDIS_URL: parsed(redisUrl, {
    secret: true,
    values: '`redis://…`, `rediss://…`',
    json: { type: 'string', pattern: '^(|rediss?://.+)$' },
    description:
      '`redis[s]://[user:password@]host:port[/db]`; with `REDIS_MODE` `cluster` or `sentinel`, several comma-separated `host:port` (cluster seed nodes, or the sentinels). Shared state for several replicas (rate limits, DPoP replay cache, relay presence and routing). Without it that state lives in the process: one replica only, and `/readyz` says `redis: not configured`, `rateLimits: in process`, `replayCache: in process`, `relay: in process`.',
  }),
  REDIS_MODE: choice(REDIS_MODES, {
    default: 'standalone',
    description:
      '`standalone`: one Redis server. `cluster`: a Redis Cluster, `REDIS_URL` naming one or more seed nodes (failovers followed). `sentinel`: the primary the sentinels named in `REDIS_URL` know as `REDIS_SENTINEL_NAME` (failovers followed). See docs/operations/request-costs.md.',
  }),
  REDIS_SENTINEL_NAME: text({ description: 'With `REDIS_MODE=sentinel`: the name the sentinels know the primary by (required then).' }),
  LOG_LEVEL: choice(LOG_LEVELS, { default: 'info', description: 'The least severe level logged; `silent`: nothing.' }),
  TRUST_PROXY: parsed(trustProxy, {
    default: 'false',
    values: '`false`, `true`, a hop count, addresses/subnets',
    json: { type: ['string', 'integer', 'boolean'] },
    description:
      'Whether `X-Forwarded-Host`/`-Proto`/`-For` are believed: `false`, `true`, a hop count, or a comma list of addresses/subnets (`loopback`, `10.0.0.0/8`). Only a trusted proxy may choose the tenant host name; it must send one value per header (a comma list is refused).',
  }),
  JSON_BODY_LIMIT: size({ default: '1mb', description: 'Largest JSON body accepted (`512kb`, `2mb`, bytes); larger: 413.' }),
  METRICS_TOKEN: parsed(metricsToken, {
    secret: true,
    values: '16–512 visible ASCII characters',
    json: { type: 'string', pattern: '^(|[!-~]{16,512})$' },
    description:
      'Bearer token `GET /metrics` asks for (16 to 512 visible ASCII characters, e.g. `openssl rand -base64 32`), compared in constant time; a scrape without it, or with another, is 401. Unset: `/metrics` is open to whoever reaches the port (see [Reading metrics](metrics.md#reading-metrics)).',
  }),
  CORS_ALLOWED_ORIGINS: parsed(corsAllowedOrigins, {
    values: 'comma list of origins',
    json: { type: 'string', pattern: '^$|^https?://[^,/\\s]+(, *https?://[^,/\\s]+)*$' },
    description:
      'Comma list of exact browser origins (`https://console.example.com`; http only on a loopback address) whose pages may call the API: their requests get CORS headers and their preflights are answered. Unset: no CORS header at all (see [CORS for consoles](../api/errors.md#cors-for-consoles)).',
  }),
  JSON_MAX_DEPTH: integer({
    default: 32,
    min: 8,
    max: 256,
    description: 'Deepest nesting of objects and arrays in a JSON body; deeper: 400 `json_too_complex` (see [JSON limits](../api/errors.md#json-limits)).',
  }),
  JSON_MAX_KEYS: integer({
    default: 10_000,
    min: 100,
    max: 1_000_000,
    description:
      'Most object keys and array items in one JSON body, counted together; more: 400 `json_too_complex`. Ingest has its own (`INGEST_MAX_KEYS`).',
  }),
  JSON_MAX_STRING_LENGTH: integer({
    default: 65_536,
    min: 1_024,
    max: 64 * 1024 * 1024,
    description:
      'Longest string (or object key) in a JSON body, in UTF-16 code units; longer: 400 `json_too_complex`. Ingest has its own (`INGEST_MAX_STRING_LENGTH`).',
  }),
  OIDC_CLOCK_SKEW_SECONDS: integer({ default: 30, min: 0, max: 300, description: 'Skew tolerated on `exp`/`nbf` of person tokens.' }),
  OIDC_JWKS_COOLDOWN_MS: integer({
    default: 30_000,
    min: 0,
    max: 3_600_000,
    description: 'Least time between two key-set refetches caused by an unknown `kid`.',
  }),
  OIDC_JWKS_MAX_AGE_MS: integer({
    default: 600_000,
    min: 1_000,
    max: 86_400_000,
    description: 'How long a fetched key set is used before it is refetched.',
  }),
  OIDC_HTTP_TIMEOUT_MS: integer({ default: 5_000, min: 100, max: 60_000, description: 'Timeout of requests to identity providers.' }),
  OIDC_ALLOW_HTTP_LOOPBACK: flag({ default: false, description: 'Accept `http://` issuers on loopback addresses (development and tests only).' }),
  PLATFORM_BOOTSTRAP_LOCALHOST: flag({ default: true, description: 'Self-hosted: create a `localhost` organisation when the database is empty.' }),
  MIGRATE_ON_START: flag({
    default: true,
    description:
      'Run pending migrations at start. The Helm chart runs them once per release in a hook Job and sets this to `false`; while migrations are pending, `/readyz` answers 503 (`migrations: pending`).',
  }),
  RATE_LIMITS_ENABLED: flag({ default: true, description: 'Rate limits on enrolment and approval operations (switch off only for load tests).' }),
  DEVICE_ACCESS_TOKEN_TTL_SECONDS: integer({ default: 3600, min: 60, max: 86_400, description: 'Lifetime of a device access token.' }),
  DEVICE_REFRESH_TOKEN_TTL_SECONDS: integer({
    default: 30 * 86_400,
    min: 3600,
    max: 365 * 86_400,
    defaultNote: '30 days',
    description: 'Lifetime of a device refresh token; each refresh issues a new one.',
  }),
  DEVICE_REFRESH_GRACE_SECONDS: integer({
    default: 10,
    min: 0,
    max: 120,
    description:
      'A concurrent refresh of the same refresh token by the same device (and key) within this window gets the same new pair (0 switches the grace off).',
  }),
  DEVICE_CODE_TTL_SECONDS: integer({ default: 600, min: 60, max: 3600, description: 'Lifetime of a device code (`expires_in`).' }),
  DEVICE_POLL_INTERVAL_SECONDS: integer({
    default: 5,
    min: 1,
    max: 60,
    description: 'Poll interval (`interval`); grows by 5 s on every `slow_down`.',
  }),
  AUTH_CACHE_MAX_ENTRIES: integer({
    default: 10_000,
    min: 0,
    max: 1_000_000,
    description:
      'Verified device tokens, person tokens and Cloud sessions, and the newest policy publish numbers of each organisation and project, each kept in a bounded in-process cache (tokens by their SHA-256) of at most this many entries; `0` turns the caches off. Any revocation or policy publish drops them at once on this replica, within a second on the others (Redis, or the revocation counter in the database).',
  }),
  AUTH_CACHE_MAX_AGE_SECONDS: integer({
    default: 5,
    min: 0,
    max: 30,
    description:
      "How long a verified token (or a policy's newest publish number) is trusted without reading the database again (never past the token's own expiry); `0` turns the caches off.",
  }),
  DPOP_PROOF_WINDOW_SECONDS: integer({ default: 60, min: 5, max: 600, description: 'Oldest acceptable proof `iat`.' }),
  DPOP_FUTURE_SKEW_SECONDS: integer({ default: 5, min: 0, max: 60, description: 'How far in the future a proof `iat` may be.' }),
  DPOP_REQUIRE_NONCE: flag({ default: false, description: 'Require server nonces (`DPoP-Nonce`, `use_dpop_nonce`) for clients with bad clocks.' }),
  DPOP_NONCE_SECRET: parsed(secretKey, {
    secret: true,
    defaultNote: 'random per process',
    values: SECRET_KEY_VALUES,
    json: SECRET_KEY_JSON,
    description: 'Key of the stateless nonces, ≥ 32 bytes base64url; set the same value on every replica.',
  }),
  DPOP_NONCE_LIFETIME_SECONDS: integer({ default: 300, min: 30, max: 3600, description: 'A nonce is accepted during its step and the next one.' }),
  INGEST_MAX_BYTES: size({
    default: '4mb',
    description: 'Largest ingest envelope (its own limit; the body is read only after the device is authenticated).',
  }),
  INGEST_MAX_ITEMS: integer({ default: 5000, min: 1, max: 100_000, description: 'Most items in one envelope (all four lists together); more: 413.' }),
  INGEST_MAX_KEYS: integer({
    default: 250_000,
    min: 100,
    max: 10_000_000,
    description: 'Most object keys and array items in one envelope (50 per item at 5,000 items); more: 400 `json_too_complex`.',
  }),
  INGEST_MAX_STRING_LENGTH: integer({
    default: 1024 * 1024,
    min: 1_024,
    max: 64 * 1024 * 1024,
    description: "Longest string in an envelope (an agent's answer, a command's output); longer: 400 `json_too_complex`.",
  }),
  INGEST_REDACTION_BUDGET_MS: integer({
    default: 2000,
    min: 1,
    max: 60_000,
    description:
      'Milliseconds of CPU time redaction may spend on one envelope, done in slices of 10 ms that give the event loop back; more: 413 `payload_too_large` (see [Ingest](../api/ingest.md#ingest)).',
  }),
  INGEST_RATE_LIMIT_PER_MINUTE: integer({
    default: 120,
    min: 1,
    max: 100_000,
    description: 'Ingest uploads a minute per device (all its workspaces together); more: 429 `too_many_requests` with `Retry-After`.',
  }),
  SVG_CHECK_THREADS: integer({
    min: 0,
    max: 64,
    defaultNote: 'the CPUs less one, at least 1',
    description:
      'Threads that check pictures\' SVG, off the event loop (one check at a time each, started when first needed); per worker process (`WEB_CONCURRENCY`). 0: check on the event loop, for tools and tests (a 2 MB picture then stalls the service about a second). See [Pictures](../api/pictures.md#project-pictures).',
  }),
  SVG_CHECK_QUEUE: integer({
    default: 16,
    min: 0,
    max: 10_000,
    description: 'Picture saves whose SVG may wait for a check thread; one more while all are busy: 503 `unavailable` with `Retry-After: 1`.',
  }),
  SVG_CHECK_TIMEOUT_MS: integer({
    default: 10_000,
    min: 1,
    max: 120_000,
    description: 'Longest one SVG check may run on its thread (the wait for a thread not counted); longer: the thread is ended and replaced, and the save is 400 `svg_too_complex`.',
  }),
  POLICY_REQUIRE_IF_MATCH: flag({
    default: false,
    description: 'Publishing and restoring a policy need `If-Match` with the current ETag; without it: 428 `precondition_required`.',
  }),
  RUN_CREDENTIAL_MAX_TTL_SECONDS: integer({
    default: 4 * 3600,
    min: 60,
    max: 4 * 3600,
    defaultNote: '4 hours',
    description: "Longest a cloud agent run's credential lives (a run may ask for less with `expiresAt`).",
  }),
  MCP_MAX_BYTES: size({
    default: '1mb',
    description: "Largest request to a run's MCP endpoint; the declared size is checked before anything is read (413).",
  }),
  MCP_REQUESTS_PER_MINUTE: integer({
    default: 300,
    min: 1,
    max: 10_000_000,
    description: "Requests a minute to one run's MCP endpoint, counted across replicas with `REDIS_URL` (429).",
  }),
  RELAY_CALL_TIMEOUT_MS: integer({
    default: 30_000,
    min: 100,
    max: 600_000,
    description: "How long an MCP request waits for the workbench's answer before JSON-RPC error -32000.",
  }),
  RELAY_HEARTBEAT_MS: integer({
    default: 30_000,
    min: 50,
    max: 600_000,
    description:
      "Ping interval on the control channel; a socket that missed the previous pong is dropped, and the socket's access token is checked again.",
  }),
  RELAY_ASSERTION_TTL_SECONDS: integer({
    default: 60,
    min: 10,
    max: 600,
    description: 'Lifetime of the signed assertion sent with every relayed call.',
  }),
  SIGNING_KEYS_SECRET: parsed(secretKey, {
    secret: true,
    values: SECRET_KEY_VALUES,
    json: SECRET_KEY_JSON,
    description:
      "≥ 32 random bytes, base64url (`openssl rand -base64 32`). Seals the relay's signing keys in the database so every replica signs with and publishes the same keys; set the same value on every replica. Unset: the keys live in the process (one replica; a restart makes a new key), and a start with `REDIS_URL` logs a warning.",
  }),
  SIGNING_KEY_ROTATION_SECONDS: integer({
    default: 30 * 86_400,
    min: 3_600,
    max: 365 * 86_400,
    defaultNote: '30 days',
    description: 'How long a signing key signs before the next one takes over (at least an hour).',
  }),
  AUTH_CONSOLE_REDIRECT_URIS: parsed(redirectUris('console'), {
    values: 'comma list of URIs',
    json: { type: 'string' },
    description:
      "Cloud: comma list of the console's redirect URIs, matched exactly: `https://…`, or `http://` on a loopback address (`127.0.0.1`, `[::1]`, `localhost`). No fragment.",
  }),
  AUTH_MOBILE_REDIRECT_URIS: parsed(redirectUris('mobile'), {
    values: 'comma list of URIs',
    json: { type: 'string' },
    description:
      "Cloud: the mobile app's redirect URIs: as above, or a private-use scheme named as a reverse domain (`com.example.app:/callback`, RFC 8252 7.1).",
  }),
  GOOGLE_CLIENT_ID: text({
    description:
      'Cloud: enable sign-in with Google (OpenID Connect), with `GOOGLE_CLIENT_SECRET`. Both or neither; the same for each provider below.',
  }),
  GOOGLE_CLIENT_SECRET: text({ secret: true, description: 'Cloud: the client secret of sign-in with Google.' }),
  GOOGLE_ISSUER: text({
    default: 'https://accounts.google.com',
    values: PROVIDER_URL_VALUES,
    description: "Google's issuer (metadata by discovery).",
  }),
  MICROSOFT_CLIENT_ID: text({ description: 'Cloud: enable sign-in with Microsoft (OpenID Connect).' }),
  MICROSOFT_CLIENT_SECRET: text({ secret: true, description: 'Cloud: the client secret of sign-in with Microsoft.' }),
  MICROSOFT_ISSUER: text({
    default: 'https://login.microsoftonline.com/common/v2.0',
    values: PROVIDER_URL_VALUES,
    description: "Microsoft's issuer: `common` (work, school and personal accounts), `organizations`, `consumers` or a tenant.",
  }),
  GITHUB_CLIENT_ID: text({ description: 'Cloud: enable sign-in with GitHub (OAuth 2 app).' }),
  GITHUB_CLIENT_SECRET: text({ secret: true, description: 'Cloud: the client secret of the GitHub app.' }),
  GITHUB_AUTHORIZATION_URL: text({
    default: 'https://github.com/login/oauth/authorize',
    values: PROVIDER_URL_VALUES,
    description: "GitHub's authorization endpoint (GitHub Enterprise: your server's).",
  }),
  GITHUB_TOKEN_URL: text({
    default: 'https://github.com/login/oauth/access_token',
    values: PROVIDER_URL_VALUES,
    description: "GitHub's token endpoint.",
  }),
  GITHUB_API_URL: text({ default: 'https://api.github.com', values: PROVIDER_URL_VALUES, description: "GitHub's API." }),
  FACEBOOK_CLIENT_ID: text({ description: 'Cloud: enable sign-in with Facebook (the app id).' }),
  FACEBOOK_CLIENT_SECRET: text({ secret: true, description: "Cloud: the Facebook app's secret." }),
  FACEBOOK_AUTHORIZATION_URL: text({
    default: 'https://www.facebook.com/v23.0/dialog/oauth',
    values: PROVIDER_URL_VALUES,
    description: "Facebook's authorization endpoint. Every provider URL must be https (http on loopback only with `OIDC_ALLOW_HTTP_LOOPBACK=true`).",
  }),
  FACEBOOK_TOKEN_URL: text({
    default: 'https://graph.facebook.com/v23.0/oauth/access_token',
    values: PROVIDER_URL_VALUES,
    description: "Facebook's token endpoint.",
  }),
  FACEBOOK_API_URL: text({ default: 'https://graph.facebook.com/v23.0', values: PROVIDER_URL_VALUES, description: "Facebook's API." }),
  AUTH_PROVIDER_ORDER: parsed(providerOrder, {
    default: SIGN_IN_PROVIDERS.join(','),
    values: `comma list of ${SIGN_IN_PROVIDERS.map((id) => `\`${id}\``).join(', ')}`,
    json: { type: 'string' },
    description: 'Display order of `GET /auth/v1/providers`; providers left out follow in the default order; only enabled ones (and `email`) are listed.',
  }),
  AUTH_ACCESS_TOKEN_TTL_SECONDS: integer({
    default: 900,
    min: 60,
    max: 86_400,
    defaultNote: '15 minutes',
    description: 'Lifetime of a Cloud access token.',
  }),
  AUTH_REFRESH_TOKEN_TTL_SECONDS: integer({
    default: 30 * 86_400,
    min: 3600,
    max: 365 * 86_400,
    defaultNote: '30 days',
    description: 'Lifetime of a Cloud refresh token; each refresh issues a new one.',
  }),
  AUTH_REFRESH_GRACE_SECONDS: integer({
    default: 10,
    min: 0,
    max: 120,
    description: 'A concurrent refresh of the same refresh token within this window gets the same new pair (0 switches the grace off).',
  }),
  AUTH_SIGN_IN_CODE_TTL_SECONDS: integer({
    default: 60,
    min: 10,
    max: 600,
    description: 'Lifetime of the one-time code returned to `redirect_uri` (and by `/auth/v1/email/verify`).',
  }),
  AUTH_FLOW_TTL_SECONDS: integer({
    default: 600,
    min: 60,
    max: 3600,
    description: 'How long a sign-in at a provider may take, from `/auth/v1/start` to the callback.',
  }),
  AUTH_EMAIL_CODE_TTL_SECONDS: integer({ default: 600, min: 60, max: 3600, defaultNote: '10 minutes', description: 'Lifetime of an emailed code.' }),
  AUTH_EMAIL_CODES_PER_HOUR: integer({ default: 5, min: 1, max: 100, description: 'Codes mailed to one address per rolling hour.' }),
  AUTH_EMAIL_CODES_PER_DAY: integer({
    default: 20,
    min: 1,
    max: 2400,
    description: 'Codes mailed to one address per rolling 24 hours. See [Mail caps](../api/sign-in.md#mail-caps).',
  }),
  AUTH_EMAIL_CODES_PER_MINUTE: integer({
    default: 60,
    min: 1,
    max: 1_000_000,
    description: 'Codes the whole service mails per rolling minute, to anyone (every replica together). See [Mail caps](../api/sign-in.md#mail-caps).',
  }),
  AUTH_EMAIL_PROOF_OF_WORK_BITS: integer({
    default: 0,
    min: 0,
    max: 32,
    defaultNote: 'off',
    description:
      'Leading zero bits of the proof of work `POST /auth/v1/email/start` asks for (the built-in check); 0 turns it off. See [Mail caps](../api/sign-in.md#mail-caps).',
  }),
  AUTH_EMAIL_CODE_TRIES: integer({ default: 5, min: 1, max: 10, description: 'Tries per emailed code.' }),
  AUTH_LINK_TICKET_TTL_SECONDS: integer({ default: 300, min: 60, max: 3600, defaultNote: '5 minutes', description: 'Lifetime of a link ticket.' }),
  AUTH_CODE_SECRET: parsed(secretKey, {
    secret: true,
    defaultNote: 'random per process',
    values: SECRET_KEY_VALUES,
    json: SECRET_KEY_JSON,
    description:
      'Key of the HMAC emailed codes are stored under, ≥ 32 bytes base64url; set the same value on every replica (unset: one replica only, and codes pending at a restart stop working).',
  }),
  AUTH_RATE_LIMIT_PER_MINUTE: integer({
    default: 30,
    min: 1,
    max: 100_000,
    description:
      'Sign-in requests per network address per minute, per operation (`/auth/v1/start`, the callback, `/auth/v1/email/start`, `/auth/v1/email/verify`; also team invitations made, and invitation previews).',
  }),
  AUTH_TOKEN_RATE_LIMIT_PER_MINUTE: integer({
    default: 120,
    min: 1,
    max: 100_000,
    description: 'Code exchanges and refreshes at `/auth/v1/token` per network address per minute.',
  }),
  CLOUD_TEAM_PLAN: choice(ORGANISATION_PLANS, {
    default: 'teams',
    description: "Cloud: the plan of a new team; a team's edition is `teams` whatever its plan.",
  }),
  CLOUD_INVITATION_TTL_SECONDS: integer({
    default: 7 * 86_400,
    min: 3600,
    max: 90 * 86_400,
    defaultNote: '7 days',
    description: 'Cloud: how long a team invitation works; single use either way.',
  }),
  CLOUD_INVITATION_URL: parsed(invitationUrl, {
    values: 'an https URL with `{token}`',
    json: { type: 'string' },
    description:
      "Cloud: the console's page for an invitation, with `{token}` once (`https://console.example.com/join#{token}`; https, or http on loopback). Unset: the link is the public preview, `<PLATFORM_BASE_URL>/cloud/v1/invitations/<token>`. See [Teams](../api/teams.md#teams-cloud).",
  }),
  CLOUD_INVITATIONS_PER_HOUR: integer({
    default: 100,
    min: 1,
    max: 100_000,
    description: 'Cloud: invitations one person may send per rolling hour (each mails an address they chose); beyond, 429 `too_many_requests`.',
  }),
  SMTP_URL: parsed(smtpUrl, {
    secret: true,
    values: '`smtp://…`, `smtps://…`',
    json: { type: 'string', pattern: '^(|smtps?://[^/].*)$' },
    description:
      '`smtp://user:password@host:587` or `smtps://…:465`: mails go out by SMTP (nodemailer). Unset: they are written to `MAIL_OUTBOX_DIR`.',
  }),
  MAIL_FROM: parsed(mailFrom, {
    defaultNote: '`Platform <no-reply@<host of PLATFORM_BASE_URL>>`',
    values: 'a mail address',
    json: { type: 'string' },
    description: "Sender of the service's mails.",
  }),
  MAIL_OUTBOX_DIR: text({
    default: './data/outbox',
    description: 'Without `SMTP_URL`: each mail is an RFC 5322 `.eml` file here (readable by the owner only), named by time.',
  }),
  PAGE_PRODUCT_NAME: text({
    default: 'Platform',
    description:
      "The product name the device approval page (`/device`) shows in its header and every title, so that people recognise where they approve devices. See [The approval page](../api/devices.md#the-approval-page).",
  }),
  PAGE_LOGO_URL: parsed(pageLogoUrl, {
    values: 'a `data:image/…` URL, or a path of this service (`/…`)',
    json: { type: 'string', pattern: '^(|data:image/.*|/[^/\\\\].*|/)$' },
    description:
      "A logo for the approval page's header, beside the product name: an image `data:` URL (png, jpeg, gif, webp, avif, svg+xml) or a path served by this service. Never another site's address: the page loads nothing from third parties (refused at start).",
  }),
  PAGE_ACCENT: parsed(pageAccent, {
    default: '#1f5fbf',
    values: 'a CSS hex colour, `#rgb` or `#rrggbb`',
    json: { type: 'string', pattern: '^(|#[0-9A-Fa-f]{3}|#[0-9A-Fa-f]{6})$' },
    description:
      "The approval page's accent: its header rule and primary buttons (white text on it). Refused at start unless white text on it has a contrast of at least 4.5:1 (WCAG AA).",
  }),
  SWEEPER_ENABLED: flag({
    default: true,
    description:
      'Delete what is past its use (expired codes, tokens, sessions, tickets, invitations) and history older than its retention, every `SWEEPER_INTERVAL_SECONDS`, in one replica at a time. See [Retention and the sweeper](retention.md#retention-and-the-sweeper).',
  }),
  SWEEPER_INTERVAL_SECONDS: integer({
    default: 300,
    min: 10,
    max: 86_400,
    description: 'How often the sweeper runs; whichever replica takes its turn, the deployment sweeps once per interval.',
  }),
  SWEEPER_BATCH_SIZE: integer({
    default: 1000,
    min: 10,
    max: 10_000,
    description: 'Rows deleted per statement: each batch locks only the rows it deletes, for as long as the statement takes.',
  }),
  SWEEPER_BATCH_PAUSE_MS: integer({
    default: 20,
    min: 0,
    max: 10_000,
    description: 'Pause between two batches, leaving the database to live traffic.',
  }),
  RETENTION_INGEST_EVENTS_DAYS: integer({
    min: 1,
    max: 36_500,
    defaultNote: 'none (kept forever)',
    description: 'Days an ingested event is kept after it was received; then the sweeper deletes it.',
  }),
  RETENTION_INGEST_USAGE_DAYS: integer({
    min: 1,
    max: 36_500,
    defaultNote: 'none (kept forever)',
    description: 'The same for ingested usage records.',
  }),
  RETENTION_INGEST_AUDIT_DAYS: integer({
    min: 1,
    max: 36_500,
    defaultNote: 'none (kept forever)',
    description: 'The same for ingested audit records.',
  }),
  RETENTION_INGEST_TASKS_DAYS: integer({
    min: 1,
    max: 36_500,
    defaultNote: 'none (kept forever)',
    description: 'The same for ingested tasks, counted from their last update received.',
  }),
  RETENTION_RUN_EVENTS_DAYS: integer({
    min: 1,
    max: 36_500,
    defaultNote: 'none (kept forever)',
    description: 'The same for cloud agent run events; a run that ended (or expired) longer ago goes too, once its events are gone.',
  }),
  AUDIT_RETENTION_DAYS: integer({
    default: 400,
    min: 1,
    max: 36_500,
    description: 'Days a row of the audit trail (administrative changes, `GET /platform/v1/audit-log`) is kept; then the sweeper deletes it. Export it to a SIEM before then to keep it longer (docs/api/audit-trail.md).',
  }),
} satisfies Record<string, Variable>;
