import { createServer, type Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { connectRedis, logConnectionAttempts } from '../adapters/state/redis.js';
import { buildApp, type Platform } from './app.js';
import { bootstrapLocalhost } from './bootstrap.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createDataSource } from './db/data-source.js';
import { createLogger } from './logger.js';
import { systemClock } from './util/clock.js';

/** Waits between attempts to reach the database at start: 0.5 s, doubling, at most 30 s. */
function startBackoffMs(attempt: number): number {
  return Math.min(500 * 2 ** Math.min(attempt - 1, 16), 30_000);
}

/** What a log line says about a failure: its message's first line and its code, never a stack. */
function reasonOf(error: unknown): { reason: string; errorCode?: string } {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  return {
    reason: (message.split('\n')[0] ?? '').slice(0, 300) || 'unknown',
    // Not `code`: that field name is redacted in every log line (it is the OAuth authorization code).
    ...(typeof code === 'string' ? { errorCode: code } : {}),
  };
}

/**
 * The database, opened and migrated. While it cannot be reached the service does not start: it
 * writes one JSON line per attempt (no stack trace) and tries again with a growing wait, rather
 * than dying and leaving the orchestrator to restart it. A migration that fails on a reachable
 * database is a broken release, not an outage: that stops the process.
 */
async function openDatabase(config: Config, logger: Logger): Promise<DataSource> {
  for (let attempt = 1; ; attempt += 1) {
    const dataSource = createDataSource(config.database);
    try {
      await dataSource.initialize();
    } catch (error) {
      const retryInMs = startBackoffMs(attempt);
      logger.warn({ dependency: 'database', attempt, retryInMs, ...reasonOf(error) }, 'database not reachable; trying again');
      await sleep(retryInMs);
      continue;
    }
    if (attempt > 1) logger.info({ dependency: 'database', attempts: attempt }, 'database reachable');
    if (config.migrateOnStart) {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      if (applied.length) logger.info({ migrations: applied.map((m) => m.name) }, 'migrations applied');
    } else if (await dataSource.showMigrations()) {
      logger.warn('pending migrations were not applied (MIGRATE_ON_START=false): /readyz answers 503 until `platform migrate` runs');
    }
    return dataSource;
  }
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`platform-api: configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);

  /** What is up so far, for a stop that may come while the database is still awaited. */
  const running: { server?: Server; dataSource?: DataSource; platform?: Platform } = {};
  let stopping = false;
  const redis = config.redisUrl ? connectRedis(config.redisUrl) : undefined;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const done = async () => {
      await running.dataSource?.destroy().catch(() => undefined);
      redis?.disconnect();
      process.exit(0);
    };
    // Still waiting for the database: nothing to drain.
    if (!running.server) return void done();
    // Control channels are told to go (1001): their workbenches reconnect to another replica.
    void running.platform?.stop().catch(() => undefined);
    running.server.close(() => void done());
    running.server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  // Redis does not hold the start back: the service answers (readiness says 503, requests that
  // need Redis are refused with 503) and every part recovers when Redis is back.
  if (redis) {
    logConnectionAttempts(redis, logger);
    redis.connect().catch(() => undefined);
  } else {
    logger.info('REDIS_URL not set: rate limits and replay caches are kept in this process (one replica only)');
  }

  if (redis && !config.signingKeys.secret) {
    logger.warn('REDIS_URL is set but SIGNING_KEYS_SECRET is not: relay assertions are signed with keys of this process only, which other replicas do not publish; set the same SIGNING_KEYS_SECRET on every replica');
  }

  const dataSource = await openDatabase(config, logger);
  running.dataSource = dataSource;
  const platform = buildApp({ config, dataSource, clock: systemClock, logger, redis });
  running.platform = platform;
  if (config.deployment === 'cloud') {
    logger.info({ mail: platform.services.mailer.description, providers: platform.services.signIn.providers().map((p) => p.id) }, 'cloud sign-in ready');
    if (!config.cloud.codeSecret) logger.warn('AUTH_CODE_SECRET not set: emailed codes are keyed per process (one replica only; codes pending at a restart stop working)');
    if (!config.cloud.redirectUris.console.length && !config.cloud.redirectUris.mobile.length) {
      logger.warn('no redirect URI is registered (AUTH_CONSOLE_REDIRECT_URIS, AUTH_MOBILE_REDIRECT_URIS): only the device approval page can sign people in');
    }
  }
  await bootstrapLocalhost(config, platform.services.organisations, (line) => process.stdout.write(`${line}\n`));
  await platform.start();

  const server = createServer(platform.app);
  server.on('upgrade', platform.upgrade);
  running.server = server;
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    logger.info({ port, deployment: config.deployment, database: config.database.kind }, 'platform api listening');
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`platform-api: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
