import { createServer } from 'node:http';
import { connectRedis } from '../adapters/state/redis.js';
import { buildApp } from './app.js';
import { bootstrapLocalhost } from './bootstrap.js';
import { ConfigError, loadConfig } from './config.js';
import { createDataSource } from './db/data-source.js';
import { createLogger } from './logger.js';
import { systemClock } from './util/clock.js';

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
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  if (config.migrateOnStart) {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    if (applied.length) logger.info({ migrations: applied.map((m) => m.name) }, 'migrations applied');
  } else if (await dataSource.showMigrations()) {
    logger.warn('pending migrations were not applied (MIGRATE_ON_START=false): run `platform migrate`');
  }

  const redis = config.redisUrl ? connectRedis(config.redisUrl) : undefined;
  if (redis) {
    redis.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));
    await redis.connect().catch((error: unknown) => logger.warn({ err: error }, 'redis not reachable yet'));
  } else {
    logger.info('REDIS_URL not set: rate limits and replay caches are kept in this process (one replica only)');
  }

  const platform = buildApp({ config, dataSource, clock: systemClock, logger, redis });
  if (config.deployment === 'cloud') {
    logger.info({ mail: platform.services.mailer.description, providers: platform.services.signIn.providers().map((p) => p.id) }, 'cloud sign-in ready');
    if (!config.cloud.codeSecret) logger.warn('AUTH_CODE_SECRET not set: emailed codes are keyed per process (one replica only; codes pending at a restart stop working)');
    if (!config.cloud.redirectUris.console.length && !config.cloud.redirectUris.mobile.length) {
      logger.warn('no redirect URI is registered (AUTH_CONSOLE_REDIRECT_URIS, AUTH_MOBILE_REDIRECT_URIS): only the device approval page can sign people in');
    }
  }
  await bootstrapLocalhost(config, platform.services.organisations, (line) => process.stdout.write(`${line}\n`));

  const server = createServer(platform.app);
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    logger.info({ port, deployment: config.deployment, database: config.database.kind }, 'platform api listening');
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close(async () => {
      await dataSource.destroy().catch(() => undefined);
      redis?.disconnect();
      process.exit(0);
    });
    server.closeIdleConnections();
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`platform-api: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
