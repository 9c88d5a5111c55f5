import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parseRedisUrl } from '../../adapters/state/redis.js';

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('has working defaults: self-hosted on an embedded SQLite file', () => {
    const config = loadConfig({});
    expect(config.deployment).toBe('self-hosted');
    expect(config.port).toBe(3000);
    expect(config.database).toEqual({ kind: 'sqlite', flavour: 'mysql', location: './data/platform.sqlite' });
    expect(config.redisUrl).toBeUndefined();
    expect(config.trustProxy).toBe(false);
    expect(config.jsonBodyLimitBytes).toBe(1024 * 1024);
    expect(config.logLevel).toBe('info');
  });

  it('reads MySQL and MariaDB URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'mysql://u:p@db:3306/platform' }).database).toMatchObject({ kind: 'mysql', flavour: 'mysql' });
    expect(loadConfig({ DATABASE_URL: 'mariadb://u:p@db:3306/platform' }).database).toMatchObject({
      kind: 'mysql',
      flavour: 'mariadb',
      location: 'mysql://u:p@db:3306/platform',
    });
  });

  it('bounds JSON bodies by default, ingest envelopes more loosely, and leaves If-Match optional', () => {
    const config = loadConfig({});
    expect(config.json).toEqual({ maxDepth: 32, maxKeys: 10_000, maxStringLength: 65_536 });
    expect(config.ingest).toMatchObject({ maxItems: 5000, maxJsonKeys: 250_000, maxStringLength: 1024 * 1024 });
    expect(config.policy).toEqual({ requireIfMatch: false });
    const set = loadConfig({ JSON_MAX_DEPTH: '64', JSON_MAX_KEYS: '500', JSON_MAX_STRING_LENGTH: '4096', INGEST_MAX_KEYS: '1000', INGEST_MAX_STRING_LENGTH: '2048', POLICY_REQUIRE_IF_MATCH: 'true' });
    expect(set.json).toEqual({ maxDepth: 64, maxKeys: 500, maxStringLength: 4096 });
    expect(set.ingest).toMatchObject({ maxJsonKeys: 1000, maxStringLength: 2048 });
    expect(set.policy.requireIfMatch).toBe(true);
  });

  it('reads TRUST_PROXY as Express understands it', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toEqual(['loopback', '10.0.0.0/8']);
  });

  it.each([
    [{ PLATFORM_DEPLOYMENT: 'hosted' }, /^PLATFORM_DEPLOYMENT: must be one of self-hosted, cloud/],
    [{ PLATFORM_DEPLOYMENT: 'cloud' }, /^PLATFORM_BASE_URL: is required/],
    [{ PLATFORM_BASE_URL: 'ftp://x' }, /^PLATFORM_BASE_URL: /],
    [{ PLATFORM_BASE_URL: 'https://x.test/path' }, /^PLATFORM_BASE_URL: must be a bare origin/],
    [{ PORT: '70000' }, /^PORT: must be between/],
    [{ PORT: 'eighty' }, /^PORT: must be a whole number/],
    [{ DATABASE_URL: 'postgres://u:secretpw@h/db' }, /^DATABASE_URL: /],
    [{ DATABASE_URL: 'mysql://u:p@h' }, /^DATABASE_URL: /],
    [{ REDIS_URL: 'http://x' }, /^REDIS_URL: /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: /],
    [{ TRUST_PROXY: 'everyone' }, /^TRUST_PROXY: /],
    [{ JSON_BODY_LIMIT: 'huge' }, /^JSON_BODY_LIMIT: /],
    [{ OIDC_ALLOW_HTTP_LOOPBACK: 'maybe' }, /^OIDC_ALLOW_HTTP_LOOPBACK: /],
    [{ RUN_CREDENTIAL_MAX_TTL_SECONDS: '14401' }, /^RUN_CREDENTIAL_MAX_TTL_SECONDS: must be between 60 and 14400/],
    [{ MCP_MAX_BYTES: 'lots' }, /^MCP_MAX_BYTES: /],
    [{ MCP_REQUESTS_PER_MINUTE: '0' }, /^MCP_REQUESTS_PER_MINUTE: /],
    [{ RELAY_CALL_TIMEOUT_MS: '10' }, /^RELAY_CALL_TIMEOUT_MS: /],
    [{ RELAY_HEARTBEAT_MS: 'often' }, /^RELAY_HEARTBEAT_MS: /],
    [{ RELAY_ASSERTION_TTL_SECONDS: '3600' }, /^RELAY_ASSERTION_TTL_SECONDS: /],
    [{ SIGNING_KEYS_SECRET: 'short' }, /^SIGNING_KEYS_SECRET: must be at least 32 random bytes/],
    [{ SIGNING_KEY_ROTATION_SECONDS: '600' }, /^SIGNING_KEY_ROTATION_SECONDS: /],
    [{ JSON_MAX_DEPTH: '4' }, /^JSON_MAX_DEPTH: must be between 8 and 256/],
    [{ JSON_MAX_DEPTH: '1000' }, /^JSON_MAX_DEPTH: must be between 8 and 256/],
    [{ JSON_MAX_KEYS: 'many' }, /^JSON_MAX_KEYS: must be a whole number/],
    [{ JSON_MAX_STRING_LENGTH: '10' }, /^JSON_MAX_STRING_LENGTH: must be between/],
    [{ INGEST_MAX_KEYS: '0' }, /^INGEST_MAX_KEYS: /],
    [{ INGEST_MAX_STRING_LENGTH: '-1' }, /^INGEST_MAX_STRING_LENGTH: /],
    [{ POLICY_REQUIRE_IF_MATCH: 'sometimes' }, /^POLICY_REQUIRE_IF_MATCH: /],
  ])('refuses %j with one line naming the variable', (env, pattern) => {
    const message = refusal(env);
    expect(message).toMatch(pattern);
    expect(message).not.toContain('\n');
  });

  it('has the limits of spec section 8 for cloud agent runs, and relay defaults', () => {
    const config = loadConfig({});
    expect(config.cloudAgents).toEqual({ credentialMaxTtlSeconds: 4 * 3600, mcpMaxBytes: 1024 * 1024, mcpRequestsPerMinute: 300 });
    expect(config.relay).toEqual({ callTimeoutMs: 30_000, heartbeatMs: 30_000, assertionTtlSeconds: 60 });
    expect(config.signingKeys).toEqual({ secret: undefined, rotationSeconds: 30 * 86_400 });
    expect(loadConfig({ SIGNING_KEYS_SECRET: Buffer.alloc(32, 7).toString('base64url') }).signingKeys.secret).toEqual(Buffer.alloc(32, 7));
  });

  it('stops within 30 s by default and runs one worker; more workers need Redis', () => {
    expect(loadConfig({})).toMatchObject({ shutdownTimeoutSeconds: 30, webConcurrency: 1 });
    expect(loadConfig({ SHUTDOWN_TIMEOUT_SECONDS: '5', WEB_CONCURRENCY: '4', REDIS_URL: 'redis://127.0.0.1:6379' })).toMatchObject({ shutdownTimeoutSeconds: 5, webConcurrency: 4 });
    expect(refusal({ WEB_CONCURRENCY: '2' })).toBe('WEB_CONCURRENCY: above 1 needs REDIS_URL: workers share rate limits, the DPoP replay cache and relay routing through Redis');
    expect(refusal({ WEB_CONCURRENCY: '0' })).toBe('WEB_CONCURRENCY: must be between 1 and 64 (got 0)');
    expect(refusal({ SHUTDOWN_TIMEOUT_SECONDS: '0' })).toBe('SHUTDOWN_TIMEOUT_SECONDS: must be between 1 and 3600 (got 0)');
  });

  it('names every bad variable, one line each, in the order of the declarations', () => {
    const message = refusal({ SWEEPER_BATCH_SIZE: '5', PORT: 'eighty', DATABASE_URL: 'postgres://u:secretpw@h/db', PLATFORM_DEPLOYMENT: 'cloud' });
    expect(message.split('\n')).toEqual([
      'PLATFORM_BASE_URL: is required when PLATFORM_DEPLOYMENT=cloud',
      'PORT: must be a whole number (got "eighty")',
      'DATABASE_URL: must start with sqlite:, mysql:// or mariadb:// (the value is not shown, it may hold a password)',
      'SWEEPER_BATCH_SIZE: must be between 10 and 10000 (got 5)',
    ]);
    expect(message).not.toContain('secretpw');
    // A rule over several variables waits until each of them is valid on its own.
    expect(refusal({ HEADERS_TIMEOUT_SECONDS: 'soon', REQUEST_TIMEOUT_SECONDS: '5' })).toBe('HEADERS_TIMEOUT_SECONDS: must be a whole number (got "soon")');
    expect(refusal({ WEB_CONCURRENCY: '2', REDIS_URL: 'http://x' })).toBe('REDIS_URL: must start with redis:// or rediss://');
  });

  it("refuses an approval page logo from another site and an accent white text is unreadable on", () => {
    expect(refusal({ PAGE_LOGO_URL: 'https://cdn.example/logo.png' })).toMatch(/^PAGE_LOGO_URL: must be a data:image\/… URL or a path served by this service/);
    expect(refusal({ PAGE_ACCENT: '#ffcc00' })).toMatch(/^PAGE_ACCENT: white text on #ffcc00 has a contrast of 1\.\d\d:1, below 4\.5:1/);
    expect(refusal({ PAGE_ACCENT: 'teal' })).toBe('PAGE_ACCENT: must be a CSS hex colour, #rgb or #rrggbb (e.g. #1f5fbf)');
  });

  it('never repeats a database password in its refusal', () => {
    expect(refusal({ DATABASE_URL: 'postgres://u:secretpw@h/db' })).not.toContain('secretpw');
  });

  it('names every database scheme it accepts, and each of them is accepted', () => {
    for (const scheme of ['sqlite:', 'mysql://', 'mariadb://']) expect(refusal({ DATABASE_URL: 'postgres://h/db' })).toContain(scheme);
    expect(loadConfig({ DATABASE_URL: 'sqlite::memory:' }).database).toMatchObject({ kind: 'sqlite', location: ':memory:' });
    expect(loadConfig({ DATABASE_URL: 'mysql://u:p@h:3306/db' }).database).toMatchObject({ kind: 'mysql', flavour: 'mysql' });
    expect(loadConfig({ DATABASE_URL: 'mariadb://u:p@h:3306/db' }).database).toMatchObject({ kind: 'mysql', flavour: 'mariadb' });
    expect(refusal({ DATABASE_URL: 'mariadb://u:secretpw@h:3306' })).toBe(
      'DATABASE_URL: must be mysql://user:password@host:port/database or mariadb://user:password@host:port/database',
    );
  });
});

describe('Cloud sign-in configuration', () => {
  const cloud = { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.example' };

  it('has the spec\'s lifetimes and limits by default, email only, and an outbox under ./data', () => {
    const config = loadConfig(cloud);
    expect(config.cloud).toMatchObject({
      redirectUris: { console: [], mobile: [] },
      providers: {},
      providerOrder: ['google', 'microsoft', 'github', 'facebook', 'email'],
      accessTokenTtlSeconds: 900,
      refreshTokenTtlSeconds: 2_592_000,
      refreshGraceSeconds: 10,
      signInCodeTtlSeconds: 60,
      emailCodeTtlSeconds: 600,
      emailCodesPerHour: 5,
      emailCodeTries: 5,
      linkTicketTtlSeconds: 300,
    });
    expect(config.mail).toEqual({ smtpUrl: undefined, from: 'Platform <no-reply@api.platform.example>', outboxDir: './data/outbox' });
  });

  it('takes https redirect URIs, http ones on loopback only, and private-use schemes for the mobile app only', () => {
    const config = loadConfig({
      ...cloud,
      AUTH_CONSOLE_REDIRECT_URIS: 'https://console.example/cb, http://127.0.0.1:5173/cb,http://[::1]:8080/cb,http://localhost/cb',
      AUTH_MOBILE_REDIRECT_URIS: 'com.example.app:/oauth,https://app.example/cb',
    });
    expect(config.cloud.redirectUris.console).toEqual(['https://console.example/cb', 'http://127.0.0.1:5173/cb', 'http://[::1]:8080/cb', 'http://localhost/cb']);
    expect(config.cloud.redirectUris.mobile).toEqual(['com.example.app:/oauth', 'https://app.example/cb']);
    expect(refusal({ ...cloud, AUTH_CONSOLE_REDIRECT_URIS: 'http://console.example/cb' })).toMatch(/^AUTH_CONSOLE_REDIRECT_URIS: .*loopback/);
    expect(refusal({ ...cloud, AUTH_CONSOLE_REDIRECT_URIS: 'com.example.app:/oauth' })).toMatch(/^AUTH_CONSOLE_REDIRECT_URIS: /);
    expect(refusal({ ...cloud, AUTH_CONSOLE_REDIRECT_URIS: 'https://console.example/cb#x' })).toMatch(/fragment/);
    expect(refusal({ ...cloud, AUTH_MOBILE_REDIRECT_URIS: 'myapp:/cb' })).toMatch(/^AUTH_MOBILE_REDIRECT_URIS: .*reverse-domain/);
    expect(refusal({ ...cloud, AUTH_MOBILE_REDIRECT_URIS: 'javascript:alert(1)' })).toMatch(/^AUTH_MOBILE_REDIRECT_URIS: /);
    expect(refusal({ ...cloud, AUTH_MOBILE_REDIRECT_URIS: 'not a uri' })).toMatch(/not an absolute URI/);
  });

  it('enables a provider by its client id and secret, with default endpoints that config can move', () => {
    const config = loadConfig({
      ...cloud,
      GOOGLE_CLIENT_ID: 'g',
      GOOGLE_CLIENT_SECRET: 'gs',
      GITHUB_CLIENT_ID: 'h',
      GITHUB_CLIENT_SECRET: 'hs',
      GITHUB_API_URL: 'https://github.example/api/v3/',
    });
    expect(config.cloud.providers).toEqual({
      google: { kind: 'oidc', clientId: 'g', clientSecret: 'gs', issuer: 'https://accounts.google.com' },
      github: {
        kind: 'oauth2',
        clientId: 'h',
        clientSecret: 'hs',
        authorizationUrl: 'https://github.com/login/oauth/authorize',
        tokenUrl: 'https://github.com/login/oauth/access_token',
        apiUrl: 'https://github.example/api/v3',
      },
    });
    expect(refusal({ ...cloud, FACEBOOK_CLIENT_ID: 'f' })).toBe('FACEBOOK_CLIENT_SECRET: is required with FACEBOOK_CLIENT_ID');
    expect(refusal({ ...cloud, MICROSOFT_CLIENT_SECRET: 'm' })).toBe('MICROSOFT_CLIENT_ID: is required with MICROSOFT_CLIENT_SECRET');
    expect(refusal({ ...cloud, GOOGLE_CLIENT_ID: 'g', GOOGLE_CLIENT_SECRET: 's', GOOGLE_ISSUER: 'http://127.0.0.1:9000' })).toMatch(/^GOOGLE_ISSUER: must be an https URL/);
    expect(loadConfig({ ...cloud, OIDC_ALLOW_HTTP_LOOPBACK: 'true', GOOGLE_CLIENT_ID: 'g', GOOGLE_CLIENT_SECRET: 's', GOOGLE_ISSUER: 'http://127.0.0.1:9000' }).cloud.providers.google).toMatchObject({
      issuer: 'http://127.0.0.1:9000',
    });
  });

  it('orders providers as configured, the rest after them', () => {
    expect(loadConfig({ ...cloud, AUTH_PROVIDER_ORDER: 'email, github' }).cloud.providerOrder).toEqual(['email', 'github', 'google', 'microsoft', 'facebook']);
    expect(refusal({ ...cloud, AUTH_PROVIDER_ORDER: 'yahoo' })).toMatch(/^AUTH_PROVIDER_ORDER: /);
  });

  it('checks SMTP_URL, MAIL_FROM and AUTH_CODE_SECRET without repeating their values', () => {
    expect(loadConfig({ ...cloud, SMTP_URL: 'smtps://user:pw@mail.example:465' }).mail.smtpUrl).toBe('smtps://user:pw@mail.example:465');
    const smtp = refusal({ ...cloud, SMTP_URL: 'http://user:secretpw@mail.example' });
    expect(smtp).toMatch(/^SMTP_URL: /);
    expect(smtp).not.toContain('secretpw');
    expect(refusal({ ...cloud, MAIL_FROM: 'nobody' })).toMatch(/^MAIL_FROM: /);
    expect(refusal({ ...cloud, AUTH_CODE_SECRET: 'short' })).toMatch(/^AUTH_CODE_SECRET: must be at least 32 random bytes/);
    expect(loadConfig({ ...cloud, AUTH_CODE_SECRET: Buffer.alloc(32, 7).toString('base64url') }).cloud.codeSecret).toHaveLength(32);
  });

  it('bounds the lifetimes', () => {
    expect(refusal({ ...cloud, AUTH_ACCESS_TOKEN_TTL_SECONDS: '10' })).toMatch(/^AUTH_ACCESS_TOKEN_TTL_SECONDS: must be between/);
    expect(refusal({ ...cloud, AUTH_REFRESH_GRACE_SECONDS: '600' })).toMatch(/^AUTH_REFRESH_GRACE_SECONDS: /);
  });
});

describe('Cloud teams configuration', () => {
  const cloud = { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.example' };

  it('gives new teams the plan teams, invitations seven days and 100 an hour, and links to the public preview by default', () => {
    expect(loadConfig(cloud).teams).toEqual({ plan: 'teams', invitationTtlSeconds: 604_800, invitationUrl: undefined, invitationsPerHour: 100 });
    expect(loadConfig({ ...cloud, CLOUD_TEAM_PLAN: 'free', CLOUD_INVITATION_TTL_SECONDS: '3600', CLOUD_INVITATIONS_PER_HOUR: '5' }).teams).toMatchObject({
      plan: 'free',
      invitationTtlSeconds: 3600,
      invitationsPerHour: 5,
    });
    expect(refusal({ ...cloud, CLOUD_TEAM_PLAN: 'gold' })).toMatch(/^CLOUD_TEAM_PLAN: must be one of free, teams, enterprise/);
    expect(refusal({ ...cloud, CLOUD_INVITATION_TTL_SECONDS: '60' })).toMatch(/^CLOUD_INVITATION_TTL_SECONDS: must be between 3600 and 7776000/);
  });

  it.each([
    ['https://console.example.com/join#{token}', true],
    ['https://console.example.com/invitations/{token}?from=mail', true],
    ['http://127.0.0.1:5173/join/{token}', true],
    ['http://console.example.com/join/{token}', false],
    ['https://console.example.com/join', false],
    ['https://console.example.com/{token}/{token}', false],
    ['javascript:alert(1)//{token}', false],
    ['https://user:pw@console.example.com/{token}', false],
    ['not a url {token}', false],
  ])('takes CLOUD_INVITATION_URL %s: %s', (value, accepted) => {
    if (accepted) expect(loadConfig({ ...cloud, CLOUD_INVITATION_URL: value }).teams.invitationUrl).toBe(value);
    else expect(refusal({ ...cloud, CLOUD_INVITATION_URL: value })).toMatch(/^CLOUD_INVITATION_URL: /);
  });
});

describe('sweeper and retention configuration', () => {
  it('sweeps every five minutes in batches of 1000 by default, keeps ingested and run history forever and the audit trail 400 days', () => {
    const config = loadConfig({});
    expect(config.sweeper).toEqual({ enabled: true, intervalSeconds: 300, batchSize: 1000, batchPauseMs: 20 });
    expect(config.retention).toEqual({ AUDIT_RETENTION_DAYS: 400 });
  });

  it('reads a retention per kind of history, in days, and leaves the others forever', () => {
    const config = loadConfig({ RETENTION_INGEST_EVENTS_DAYS: '90', RETENTION_RUN_EVENTS_DAYS: '30', RETENTION_INGEST_USAGE_DAYS: ' ' });
    expect(config.retention).toEqual({ RETENTION_INGEST_EVENTS_DAYS: 90, RETENTION_RUN_EVENTS_DAYS: 30, AUDIT_RETENTION_DAYS: 400 });
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '30' }).retention).toEqual({ AUDIT_RETENTION_DAYS: 30 });
  });

  it.each([
    ['RETENTION_INGEST_AUDIT_DAYS', '0', /^RETENTION_INGEST_AUDIT_DAYS: must be between 1 and 36500/],
    ['AUDIT_RETENTION_DAYS', '0', /^AUDIT_RETENTION_DAYS: must be between 1 and 36500/],
    ['RETENTION_INGEST_TASKS_DAYS', '30d', /^RETENTION_INGEST_TASKS_DAYS: must be a whole number/],
    ['SWEEPER_INTERVAL_SECONDS', '5', /^SWEEPER_INTERVAL_SECONDS: must be between 10 and 86400/],
    ['SWEEPER_BATCH_SIZE', '100000', /^SWEEPER_BATCH_SIZE: must be between 10 and 10000/],
    ['SWEEPER_ENABLED', 'maybe', /^SWEEPER_ENABLED: must be true or false/],
  ])('refuses %s=%s', (name, value, message) => {
    expect(refusal({ [name]: value })).toMatch(message);
  });
});

describe('REDIS_MODE and REDIS_URL', () => {
  it('takes a cluster of seed nodes and a Sentinel-managed primary', () => {
    const cluster = loadConfig({ REDIS_URL: 'redis://:secret@10.0.0.1:7000,10.0.0.2:7001', REDIS_MODE: 'cluster' });
    expect(cluster.redisMode).toBe('cluster');
    const sentinel = loadConfig({ REDIS_URL: 'redis://10.0.0.1:26379,10.0.0.2', REDIS_MODE: 'sentinel', REDIS_SENTINEL_NAME: 'mymaster' });
    expect([sentinel.redisMode, sentinel.redisSentinelName]).toEqual(['sentinel', 'mymaster']);
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redisMode).toBe('standalone');
  });

  it('refuses sentinel without a name, several addresses on one server, and an unknown mode', () => {
    expect(refusal({ REDIS_URL: 'redis://10.0.0.1:26379', REDIS_MODE: 'sentinel' })).toBe('REDIS_SENTINEL_NAME: is required when REDIS_MODE=sentinel');
    expect(refusal({ REDIS_URL: 'redis://10.0.0.1:6379,10.0.0.2:6379' })).toBe('REDIS_MODE: REDIS_URL names several addresses: set REDIS_MODE=cluster or sentinel');
    expect(refusal({ REDIS_URL: 'redis://10.0.0.1:6379', REDIS_MODE: 'ring' })).toMatch(/^REDIS_MODE: must be one of standalone, cluster, sentinel/);
  });
});

describe('DATABASE_READ_URL', () => {
  it('takes a MySQL or MariaDB replica of a MySQL or MariaDB primary', () => {
    const config = loadConfig({ DATABASE_URL: 'mariadb://app:secret@primary.db:3306/platform', DATABASE_READ_URL: 'mariadb://reader:other@replica.db:3306/platform' });
    expect(config.databaseRead).toEqual({ kind: 'mysql', flavour: 'mariadb', location: 'mysql://reader:other@replica.db:3306/platform' });
    expect(loadConfig({ DATABASE_URL: 'mysql://app@primary.db/platform' }).databaseRead).toBeUndefined();
  });

  it('refuses a replica of the embedded SQLite, a SQLite replica, and a malformed URL without showing it', () => {
    expect(refusal({ DATABASE_READ_URL: 'mariadb://reader:other@replica.db:3306/platform' })).toBe(
      'DATABASE_READ_URL: needs DATABASE_URL to be MySQL or MariaDB (the replica of that primary)',
    );
    expect(refusal({ DATABASE_URL: 'mysql://app@primary.db/platform', DATABASE_READ_URL: 'sqlite:./replica.sqlite' })).toBe(
      'DATABASE_READ_URL: must be mysql://… or mariadb://… (a read replica of a MySQL or MariaDB primary)',
    );
    const malformed = refusal({ DATABASE_URL: 'mysql://app@primary.db/platform', DATABASE_READ_URL: 'postgres://reader:hunter2@replica.db/platform' });
    expect(malformed).toMatch(/^DATABASE_READ_URL: must start with/);
    expect(malformed).not.toContain('hunter2');
  });
});

describe('parseRedisUrl', () => {
  it('takes several addresses, IPv6, credentials and a database; never shows a password when refusing', () => {
    expect(parseRedisUrl('rediss://user:p%40ss@[::1]:7000,cache.internal/2')).toEqual({
      tls: true,
      username: 'user',
      password: 'p@ss',
      hosts: [
        { host: '::1', port: 7000 },
        { host: 'cache.internal', port: 6379 },
      ],
      db: 2,
    });
    expect(() => parseRedisUrl('redis://:hunter2@host:99999')).toThrow('"host:99999" is not a host:port');
    expect(() => parseRedisUrl('redis://:hunter2@host:1/x')).toThrow(/^must be/);
    expect(() => parseRedisUrl('redis://:hunter2@host:1/x')).not.toThrow(/hunter2/);
  });
});
