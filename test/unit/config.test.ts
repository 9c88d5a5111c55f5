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
    [{ JSON_MAX_DEPTH: '4' }, /^JSON_MAX_DEPTH: must be between 8 and 256/],
    [{ JSON_MAX_DEPTH: '1000' }, /^JSON_MAX_DEPTH: must be between 8 and 256/],
    [{ JSON_MAX_KEYS: 'many' }, /^JSON_MAX_KEYS: must be a whole number/],
    [{ JSON_MAX_STRING_LENGTH: '10' }, /^JSON_MAX_STRING_LENGTH: must be between/],
    [{ INGEST_MAX_KEYS: '0' }, /^INGEST_MAX_KEYS: /],
    [{ INGEST_MAX_STRING_LENGTH: '-1' }, /^INGEST_MAX_STRING_LENGTH: /],
    [{ POLICY_REQUIRE_IF_MATCH: 'sometimes' }, /^POLICY_REQUIRE_IF_MATCH: /],
  ])('refuses %j with one line naming the variable', (env, pattern) => {
    const message = refusal(env as Record<string, string>);
    expect(message).toMatch(pattern);
    expect(message).not.toContain('\n');
  });

  it('never repeats a database password in its refusal', () => {
    expect(refusal({ DATABASE_URL: 'postgres://u:secretpw@h/db' })).not.toContain('secretpw');
  });
});
