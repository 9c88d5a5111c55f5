import cluster, { type Worker } from 'node:cluster';
import { lookup } from 'node:dns/promises';
import { createServer, IncomingMessage, type Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../adapters/state/redis.js';
import type { Logger } from 'pino';
import { MigrationExecutor, type DataSource } from 'typeorm';
import { connectRedis, logConnectionAttempts } from '../adapters/state/redis.js';
import { buildApp, type Platform } from './app.js';
import { bootstrapLocalhost } from './bootstrap.js';
import { ConfigError, loadConfig, type Config, type ServerLimits } from './config.js';
import { createDataSource } from './db/data-source.js';
import { ReplicaConnection } from './db/read-replica.js';
import { databaseAddress, reasonOf } from './db/errors.js';
import { databaseRefusal } from './db/server-check.js';
import { createLogger } from './logger.js';
import { systemClock } from './util/clock.js';

/**
 * The request and response classes of the server: Node's own, born with the app's prototypes
 * (`app.request`, `app.response`). Express gives every request and response those prototypes as
 * it takes them (`Object.setPrototypeOf`), and after such a change V8 makes each property added
 * to the object (the router's `baseUrl` and `params`, the edge's `context`) a slow store, about
 * 2 µs each on a small machine, several per request. An object born with the prototype is left
 * as it is (the change is to the same prototype), and its properties stay fast. Nothing else
 * differs: the same constructors run, and Express's getters and methods are the ones it would set.
 */
export function appClasses(app: Express): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } {
  // Node 20 writes both as plain constructor functions, which `call` runs on an object of the
  // app's prototype (V8 then keeps its fast shape). Should a later Node make them `class`
  // declarations, which cannot be called, Reflect.construct gives the same objects (the same
  // constructor, the same prototype), only without the speed.
  const callable = (constructor: unknown) => !/^class\b/.test(Function.prototype.toString.call(constructor));
  const requestCallable = callable(IncomingMessage);
  const responseCallable = callable(ServerResponse);
  function AppRequest(this: IncomingMessage, socket: Socket): IncomingMessage | void {
    if (!requestCallable) return Reflect.construct(IncomingMessage, [socket], AppRequest) as IncomingMessage;
    (IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void).call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: object): ServerResponse | void {
    if (!responseCallable) return Reflect.construct(ServerResponse, [req, options], AppResponse) as ServerResponse;
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: object) => void).call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return { IncomingMessage: AppRequest as unknown as typeof IncomingMessage, ServerResponse: AppResponse as unknown as typeof ServerResponse };
}

/**
 * The life of the service process, from configuration to exit (src/main.ts only calls `runMain`).
 *
 * Exit codes: 0 a stop asked for (SIGTERM, SIGINT) that finished in time; 1 a stop that
 * SHUTDOWN_TIMEOUT_SECONDS cut short, or an unexpected failure at start; 2 the service cannot
 * start as configured (a configuration error, a busy port, a HOST that does not resolve or is not
 * an address of this machine), said in one line, never a stack trace.
 *
 * A stop: `/readyz` answers 503 at once; the server takes no new connection (idle keep-alive
 * connections are closed, every answer still owed says `Connection: close`); control channels are
 * closed with 1001 (their workbenches reconnect to another replica); requests in flight finish,
 * for at most SHUTDOWN_TIMEOUT_SECONDS; then the database and Redis are closed.
 *
 * With WEB_CONCURRENCY above 1 this process is the primary of a node:cluster: it applies the
 * migrations and the first-start bootstrap once, then runs that many workers sharing the port; a
 * signal to it is passed to every worker, and it exits with the worst of their codes.
 */

export const EXIT_STOPPED = 0;
export const EXIT_FORCED = 1;
export const EXIT_CANNOT_START = 2;

/** A reason the service cannot start that one line says fully: exit 2, no stack trace. */
export class StartError extends Error {
  constructor(
    message: string,
    readonly fields: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'StartError';
  }
}

/**
 * After this many failed attempts at start, one `error` line says where the service is trying
 * and what to check (a wrong DATABASE_URL looks the same as a database still starting, and the
 * `warn` line of each attempt does not say which to suspect); the attempts go on.
 */
const DATABASE_HINT_AFTER_ATTEMPTS = 3;

/** Waits between attempts to reach the database at start: 0.5 s, doubling, at most 30 s. */
function startBackoffMs(attempt: number): number {
  return Math.min(500 * 2 ** Math.min(attempt - 1, 16), 30_000);
}

/** The one line that says why the server could not listen on HOST:PORT. */
export function listenFailure(error: unknown, host: string, port: number): StartError {
  const code = (error as { code?: unknown } | null)?.code;
  const fields = { host, port, ...(typeof code === 'string' ? { errorCode: code } : {}) };
  switch (code) {
    case 'EADDRINUSE':
      return new StartError(`cannot listen: port ${port} on ${host} is already in use (PORT)`, fields);
    case 'EADDRNOTAVAIL':
      return new StartError(`cannot listen: HOST ${host} is not an address of this machine`, fields);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return new StartError(`cannot listen: HOST ${host} does not resolve to an address`, fields);
    case 'EACCES':
    case 'EPERM':
      return new StartError(`cannot listen: port ${port} needs privileges this process does not have (PORT)`, fields);
    default:
      return new StartError(`cannot listen on ${host}:${port}: ${reasonOf(error).reason}`, fields);
  }
}

/** HOST must resolve before anything else is opened: a typo is said at once, not after the database. */
async function checkHost(host: string, port: number): Promise<void> {
  try {
    await lookup(host);
  } catch (error) {
    throw listenFailure(error, host, port);
  }
}

/**
 * The database, opened, checked and migrated (when MIGRATE_ON_START). While it cannot be reached
 * the service does not start: it writes one JSON line per attempt (no stack trace) and tries
 * again with a growing wait, rather than dying and leaving the orchestrator to restart it. A
 * MySQL or MariaDB server or database the service cannot work with (its version, the database's
 * default character set, the SQL mode: src/db/server-check.ts) is said in one line with what to
 * run, before any migration: a StartError (exit 2). A migration that fails on a reachable
 * database is a broken release, not an outage: that stops the process.
 */
async function openDatabase(config: Config, logger: Logger, stopped: () => boolean): Promise<{ dataSource: DataSource; pending: boolean } | undefined> {
  for (let attempt = 1; ; attempt += 1) {
    if (stopped()) return undefined;
    const dataSource = createDataSource(config.database);
    let refusal: string | undefined;
    try {
      await dataSource.initialize();
      refusal = await databaseRefusal(dataSource);
    } catch (error) {
      if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
      const retryInMs = startBackoffMs(attempt);
      logger.warn({ dependency: 'database', attempt, retryInMs, ...reasonOf(error) }, 'database not reachable; trying again');
      if (attempt === DATABASE_HINT_AFTER_ATTEMPTS) {
        logger.error({ dependency: 'database', attempts: attempt }, `cannot reach the database at ${databaseAddress(config.database)}: check DATABASE_URL (still trying)`);
      }
      await sleep(retryInMs);
      continue;
    }
    if (refusal) {
      await dataSource.destroy().catch(() => undefined);
      throw new StartError(refusal, { dependency: 'database' });
    }
    if (attempt > 1) logger.info({ dependency: 'database', attempts: attempt }, 'database reachable');
    if (config.migrateOnStart) {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      if (applied.length) logger.info({ migrations: applied.map((m) => m.name) }, 'migrations applied');
      return { dataSource, pending: false };
    }
    // Reads the migrations table only: with MIGRATE_ON_START=false nothing is written, not even it.
    const pending = (await new MigrationExecutor(dataSource).getPendingMigrations()).length > 0;
    if (pending) {
      logger.warn('pending migrations were not applied (MIGRATE_ON_START=false): /readyz answers 503, and every request that needs the database 503 `unavailable`, until `platform migrate` runs');
    }
    return { dataSource, pending };
  }
}

const NOT_READY_BODY = JSON.stringify({ error: 'not_ready', message: 'not ready: the service is shutting down', checks: { shutdown: 'shutting down' } });

/**
 * How often the server looks for requests past `headersTimeout` or `requestTimeout`: Node checks
 * every 30 s by default, so a client dribbling a header line every few seconds kept its socket
 * about 36 s against a 20 s `headersTimeout`. Checked every second, each holds within a second.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** The options of `createServer` that bound slow clients (set at creation: Node reads them then). */
export function serverOptions(limits: ServerLimits): { connectionsCheckingInterval: number; headersTimeout: number; requestTimeout: number; keepAliveTimeout: number } {
  return {
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    headersTimeout: limits.headersTimeoutSeconds * 1000,
    requestTimeout: limits.requestTimeoutSeconds * 1000,
    keepAliveTimeout: limits.keepAliveTimeoutSeconds * 1000,
  };
}

/**
 * The server-wide bounds: at most MAX_CONNECTIONS open connections (Node closes any further one
 * as it arrives and emits `drop`), idle keep-alive connections closed after
 * KEEP_ALIVE_TIMEOUT_SECONDS, head and whole request within their timeouts.
 */
export function applyServerLimits(server: Server, limits: ServerLimits): void {
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = limits.headersTimeoutSeconds * 1000;
  server.requestTimeout = limits.requestTimeoutSeconds * 1000;
  server.keepAliveTimeout = limits.keepAliveTimeoutSeconds * 1000;
}

/** One service process: the HTTP server on top of the platform, and its stop. */
export class ServiceProcess {
  private server: Server | undefined;
  private dataSource: DataSource | undefined;
  private readReplica: ReplicaConnection | undefined;
  private platform: Platform | undefined;
  private readonly redis: RedisClient | undefined;
  private draining = false;
  /** Answers not finished yet: told `Connection: close` when a stop begins. */
  private readonly inFlight = new Set<ServerResponse>();
  /** A response's `close` listener (one function for all of them: no closure per request). */
  private readonly settled = (() => {
    const inFlight = this.inFlight;
    return function settled(this: ServerResponse): void {
      inFlight.delete(this);
    };
  })();
  private stopping: Promise<number> | undefined;
  private droppedConnections = 0;
  private dropLoggedAt = 0;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.redis = config.redisUrl ? connectRedis({ url: config.redisUrl, mode: config.redisMode, sentinelName: config.redisSentinelName }) : undefined;
  }

  /** Whether a stop has begun (`/readyz` answers 503 from then on). */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Opens the dependencies and listens; a StartError when it cannot (the caller exits 2). */
  async start(): Promise<void> {
    const { config, logger, redis } = this;
    await checkHost(config.host, config.port);
    // Redis does not hold the start back: the service answers (readiness says 503, requests that
    // need Redis are refused with 503 `unavailable`) and every part recovers when Redis is back.
    if (redis) {
      logConnectionAttempts(redis, logger);
      redis.connect().catch(() => undefined);
    } else {
      logger.info('REDIS_URL not set: rate limits and replay caches are kept in this process (one replica only)');
    }
    if (redis && !config.signingKeys.secret) {
      logger.warn('REDIS_URL is set but SIGNING_KEYS_SECRET is not: relay assertions are signed with keys of this process only, which other replicas do not publish; set the same SIGNING_KEYS_SECRET on every replica');
    }

    const opened = await openDatabase(config, logger, () => this.draining);
    if (!opened) return;
    const { dataSource } = opened;
    this.dataSource = dataSource;
    if (this.draining) return;
    // A read replica is never waited for: the primary answers until it connects (src/db/read-replica.ts).
    if (config.databaseRead) {
      this.readReplica = new ReplicaConnection(config.databaseRead, logger);
      await this.readReplica.start();
    }
    const platform = buildApp({ config, dataSource, clock: systemClock, logger, redis, readReplica: this.readReplica });
    this.platform = platform;
    if (config.deployment === 'cloud' && cluster.isPrimary) {
      logger.info({ mail: platform.services.mailer.description, providers: platform.services.signIn.providerFlow.providers().map((p) => p.id) }, 'cloud sign-in ready');
      if (!config.cloud.codeSecret) logger.warn('AUTH_CODE_SECRET not set: emailed codes are keyed per process (one replica only; codes pending at a restart stop working)');
      if (!config.cloud.redirectUris.console.length && !config.cloud.redirectUris.mobile.length) {
        logger.warn('no redirect URI is registered (AUTH_CONSOLE_REDIRECT_URIS, AUTH_MOBILE_REDIRECT_URIS): only the device approval page can sign people in');
      }
    }
    // The first-start organisation needs the tables: on a schema still to be migrated it waits for
    // the next start.
    if (opened.pending) {
      if (config.deployment === 'self-hosted' && config.bootstrapLocalhost) logger.info('the first-start organisation at localhost is made at a start after `platform migrate`');
    } else {
      await bootstrapLocalhost(config, platform.services.organisations, (line) => process.stdout.write(`${line}\n`));
    }
    await platform.start();
    if (this.draining) return;
    if (config.sweeper.enabled) platform.sweeper.schedule();

    const server = createServer({ ...appClasses(platform.app), ...serverOptions(config.server) }, (req, res) => this.handle(req, res));
    applyServerLimits(server, config.server);
    server.on('drop', () => {
      // One line a minute at most: a flood of refused connections must not become a flood of lines.
      const now = Date.now();
      this.droppedConnections += 1;
      if (now - this.dropLoggedAt < 60_000) return;
      this.dropLoggedAt = now;
      logger.warn({ maxConnections: config.server.maxConnections, droppedSinceLastLine: this.droppedConnections }, 'connections refused: MAX_CONNECTIONS reached');
      this.droppedConnections = 0;
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (this.draining) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      platform.upgrade(req, socket, head);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      const failed = (error: unknown) => reject(listenFailure(error, config.host, config.port));
      server.once('error', failed);
      server.listen(config.port, config.host, () => {
        server.off('error', failed);
        resolve();
      });
    });
    // Later failures of the listening socket (out of file descriptors…) are logged, not thrown.
    server.on('error', (error) => logger.error({ ...reasonOf(error) }, 'http server error'));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    logger.info({ port, deployment: config.deployment, database: config.database.kind }, 'platform api listening');
  }

  /** Every request: during a stop, readiness is refused and every answer closes its connection. */
  private handle(req: IncomingMessage, res: ServerResponse): void {
    if (this.draining) {
      res.setHeader('Connection', 'close');
      const path = (req.url ?? '').split('?')[0];
      if (path === '/readyz') {
        res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(NOT_READY_BODY) });
        res.end(NOT_READY_BODY);
        return;
      }
    } else {
      this.inFlight.add(res);
      res.on('close', this.settled);
    }
    this.platform!.app(req, res);
  }

  /**
   * Stops (at most once; later calls get the same answer): the exit code, 0 when every request in
   * flight finished within SHUTDOWN_TIMEOUT_SECONDS, 1 when the time ran out.
   */
  stop(signal: string): Promise<number> {
    this.stopping ??= this.drain(signal);
    return this.stopping;
  }

  private async drain(signal: string): Promise<number> {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    const { logger, server } = this;
    const timeoutMs = this.config.shutdownTimeoutSeconds * 1000;
    logger.info({ signal, timeoutSeconds: this.config.shutdownTimeoutSeconds }, 'shutting down: readiness is off, requests in flight may finish');
    let forced = false;
    if (server?.listening) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Control channels are told to go (1001): their workbenches reconnect to another replica.
      const channels = this.platform?.stop().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      });
      forced = (await Promise.race([Promise.all([closed, channels]), timedOut])) === 'timeout';
      clearTimeout(timer);
      if (forced) {
        logger.warn({ timeoutSeconds: this.config.shutdownTimeoutSeconds }, 'requests still in flight when SHUTDOWN_TIMEOUT_SECONDS ran out: their connections are closed');
        server.closeAllConnections();
      }
    } else {
      await this.platform?.stop().catch(() => undefined);
    }
    // Closing the pool waits for its connections; a database that does not answer gets 5 s.
    const closed = await Promise.race([this.close().then(() => true), sleep(5_000).then(() => false)]);
    if (!closed) logger.warn('the database or Redis did not close within 5 s; leaving anyway');
    logger.info({ signal, forced }, 'stopped');
    return forced ? EXIT_FORCED : EXIT_STOPPED;
  }

  /** Closes the database and Redis (what start opened), for a stop or a failed start. */
  async close(): Promise<void> {
    await this.readReplica?.stop();
    this.readReplica = undefined;
    await this.dataSource?.destroy().catch(() => undefined);
    this.dataSource = undefined;
    if (this.redis) {
      await Promise.race([this.redis.quit().catch(() => undefined), sleep(1_000)]);
      this.redis.disconnect();
    }
  }
}

/** One line on stderr per bad variable, and exit 2: the configuration cannot work. */
function loadOrExit(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.lines('platform-api: configuration error: ')}\n`);
      process.exit(EXIT_CANNOT_START);
    }
    throw error;
  }
}

/** A single service process (WEB_CONCURRENCY=1, or a worker of the cluster). */
async function runService(config: Config, logger: Logger): Promise<void> {
  const service = new ServiceProcess(config, logger);
  const stop = (signal: string) => void service.stop(signal).then((code) => process.exit(code));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    await service.start();
  } catch (error) {
    if (!(error instanceof StartError)) throw error;
    logger.fatal(error.fields, error.message);
    await service.close();
    process.exit(EXIT_CANNOT_START);
  }
}

/**
 * The primary of WEB_CONCURRENCY workers: migrations and the first-start bootstrap once, then the
 * workers (each applies nothing more); one that dies unasked is replaced; a signal stops them all.
 */
async function runPrimary(config: Config, logger: Logger): Promise<void> {
  let stopping = false;
  const workers = new Set<Worker>();
  let worst = EXIT_STOPPED;
  const finish = () => {
    if (stopping && workers.size === 0) process.exit(worst);
  };
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, workers: workers.size }, 'shutting down the workers');
    for (const worker of workers) worker.process.kill(signal as NodeJS.Signals);
    finish();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  try {
    await checkHost(config.host, config.port);
  } catch (error) {
    if (!(error instanceof StartError)) throw error;
    logger.fatal(error.fields, error.message);
    process.exit(EXIT_CANNOT_START);
  }
  let opened: Awaited<ReturnType<typeof openDatabase>>;
  try {
    opened = await openDatabase(config, logger, () => stopping);
  } catch (error) {
    if (!(error instanceof StartError)) throw error;
    logger.fatal(error.fields, error.message);
    process.exit(EXIT_CANNOT_START);
  }
  if (!opened) return finish();
  const { dataSource } = opened;
  try {
    if (config.deployment === 'self-hosted' && config.bootstrapLocalhost && !opened.pending) {
      const { OrganisationService } = await import('./modules/organisation/service.js');
      await bootstrapLocalhost(config, new OrganisationService(dataSource, systemClock), (line) => process.stdout.write(`${line}\n`));
    }
  } finally {
    await dataSource.destroy().catch(() => undefined);
  }
  if (stopping) return finish();

  const fork = () => {
    const worker = cluster.fork({ MIGRATE_ON_START: 'false', PLATFORM_BOOTSTRAP_LOCALHOST: 'false' });
    workers.add(worker);
    worker.on('exit', (code, signal) => {
      workers.delete(worker);
      const exitCode = code ?? (signal ? EXIT_FORCED : EXIT_STOPPED);
      if (stopping) {
        worst = Math.max(worst, exitCode);
        return finish();
      }
      if (exitCode === EXIT_CANNOT_START) {
        // The port or the host is wrong for every worker alike: stop, do not fork in a loop.
        worst = EXIT_CANNOT_START;
        stopping = true;
        for (const other of workers) other.process.kill('SIGTERM');
        return finish();
      }
      logger.error({ worker: worker.id, exitCode, signal }, 'a worker stopped unexpectedly; starting another');
      fork();
    });
  };
  logger.info({ workers: config.webConcurrency }, 'starting workers (WEB_CONCURRENCY)');
  for (let i = 0; i < config.webConcurrency; i++) fork();
}

/** The process entry point: configuration, then a single service or a cluster of workers. */
export async function runMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const config = loadOrExit(env);
  const base = createLogger(config.logLevel);
  // A worker's lines say which worker wrote them.
  const logger = cluster.isWorker && cluster.worker ? base.child({ worker: cluster.worker.id }) : base;
  try {
    if (config.webConcurrency > 1 && cluster.isPrimary) await runPrimary(config, logger);
    else await runService(config, logger);
  } catch (error) {
    process.stderr.write(`platform-api: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EXIT_FORCED);
  }
}
