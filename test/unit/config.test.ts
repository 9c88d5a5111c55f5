import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '../../src/config.js';

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
  ])('refuses %j with one line naming the variable', (env, pattern) => {
    const message = refusal(env as Record<string, string>);
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

  it('never repeats a database password in its refusal', () => {
    expect(refusal({ DATABASE_URL: 'postgres://u:secretpw@h/db' })).not.toContain('secretpw');
  });
});
