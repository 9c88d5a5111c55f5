import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { buildAdminServices, type AdminServices } from '../admin-services.js';
import { publishPolicyChange } from '../../adapters/state/redis-relay-routing.js';
import { Redis } from 'ioredis';
import type { PublishedChange } from '../modules/policy/service.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createDataSource } from '../db/data-source.js';
import { createLogger } from '../logger.js';
import { systemClock, type Clock } from '../util/clock.js';

/** What the command line runs against. Tests hand in their own environment, output and database. */
export interface CliDependencies {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /**
   * Where the command line's JSON log lines (audit lines among them) go, away from what a person
   * reads. Without it they go to stderr; with `--verbose` they go to stderr as well.
   */
  log?(line: string): void;
  clock?: Clock;
  /** An open database. The command line then neither opens nor closes one (tests use this). */
  dataSource?: DataSource;
}

/** Exit codes of `platform` (docs/operations/administering.md "Administering from the command line"). */
export const EXIT_OK = 0;
/** Something unexpected failed (a bug, or an error no rule names): the stack is printed. */
export const EXIT_FAILED = 1;
/** The command line, an input file or the configuration is wrong: nothing was attempted. */
export const EXIT_USAGE = 2;
/** What the command names does not exist (organisation, person, project, device, code, revision). */
export const EXIT_NOT_FOUND = 3;
/** A rule said no (the same rules as the API): nothing was changed. */
export const EXIT_REFUSED = 4;
/** The database cannot be reached or used (down, missing, or its schema older than this build). */
export const EXIT_UNAVAILABLE = 5;

/** An expected refusal: printed as one line, no stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILED,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const notFoundError = (message: string): CliError => new CliError(message, EXIT_NOT_FOUND);
export const refusedError = (message: string): CliError => new CliError(message, EXIT_REFUSED);
export const usageError = (message: string): CliError => new CliError(message, EXIT_USAGE);

/** The exit code of an API refusal raised by a service the command line called. */
export function exitCodeOfStatus(status: number): number {
  if (status === 404) return EXIT_NOT_FOUND;
  if (status === 400 || status === 413 || status === 415) return EXIT_USAGE;
  if (status === 503) return EXIT_UNAVAILABLE;
  if (status >= 400 && status < 500) return EXIT_REFUSED;
  return EXIT_FAILED;
}

/**
 * The database a configuration names, for the one line the command line prints about it: the
 * SQLite file's absolute path, or host:port/database of MySQL/MariaDB. Never a user or password.
 */
export function describeDatabase(database: Config['database']): string {
  if (database.kind === 'sqlite') return `sqlite ${database.location === ':memory:' ? ':memory:' : resolve(database.location)}`;
  try {
    const url = new URL(database.location);
    return `${database.flavour} ${url.hostname}:${url.port || '3306'}${url.pathname}`;
  } catch {
    return database.flavour;
  }
}

/**
 * Reads an env file (`KEY=value` lines, as `node --env-file` and dotenv read them) under the
 * environment: a variable set in the environment wins over the file, as with node's own
 * `--env-file`, except when it is empty (or only white space). The configuration reads an empty
 * variable as unset, and `DATABASE_URL= platform --env-file prod.env …` (an exported empty
 * variable, a blank line of a container's environment) would otherwise run against the default
 * SQLite database instead of the file's: the file the user named wins over an empty variable.
 */
export function withEnvFile(env: Record<string, string | undefined>, path: string): Record<string, string | undefined> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw usageError(`cannot read the env file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const parsed = parseEnv(text) as Record<string, string>;
  const merged: Record<string, string | undefined> = { ...parsed };
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (value.trim() === '' && Object.hasOwn(parsed, key)) continue;
    merged[key] = value;
  }
  return merged;
}

/** Appends log lines to a file only its owner reads (audit lines name people and organisations). */
export function appendLogFile(path: string, text: string): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    appendFileSync(path, text, { mode: 0o600 });
  } catch (error) {
    throw usageError(`cannot write the log file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

export type { AdminServices } from '../admin-services.js';

/**
 * One run of the command line: configuration read on first use (so `--help` works with a broken
 * environment), the database opened on first use and closed at the end.
 */
export class CliContext {
  private loadedConfig: Config | undefined;
  private opened: DataSource | undefined;
  private envFile: string | undefined;
  private announced = false;

  constructor(private readonly deps: CliDependencies) {}

  /** `--env-file`: read under the environment before the configuration is first used. */
  useEnvFile(path: string | undefined): void {
    if (this.loadedConfig) throw new Error('the configuration was read before --env-file was applied');
    this.envFile = path;
  }

  get config(): Config {
    if (!this.loadedConfig) {
      const env = this.envFile === undefined ? this.deps.env : withEnvFile(this.deps.env, this.envFile);
      // A ConfigError goes to the command's report: one line per bad variable, exit 2 (EXIT_USAGE).
      this.loadedConfig = loadConfig(env);
    }
    return this.loadedConfig;
  }

  private createdLogger: Logger | undefined;
  private verbose = false;
  private logFile: string | undefined;

  /** `--verbose` and `--log-file`: read before the log is first written. */
  useLogOptions(options: { verbose?: boolean; logFile?: string }): void {
    this.verbose = options.verbose === true;
    this.logFile = options.logFile;
  }

  /**
   * The command line's log: JSON lines (redacted like the service's) at LOG_LEVEL, to
   * `--log-file` when given, otherwise to the log its caller chose (src/cli/main.ts), otherwise
   * to stderr; with `--verbose` on stderr too. Human output never carries them otherwise.
   */
  get logger(): Logger {
    this.createdLogger ??= createLogger(this.config.logLevel, { write: (line: string) => this.writeLog(line) });
    return this.createdLogger;
  }

  private writeLog(line: string): void {
    const sink = this.logFile === undefined ? this.deps.log : (text: string) => appendLogFile(this.logFile!, text);
    if (sink) sink(line);
    if (this.verbose || !sink) this.deps.stderr(line);
  }

  get clock(): Clock {
    return this.deps.clock ?? systemClock;
  }

  print(line = ''): void {
    this.deps.stdout(`${line}\n`);
  }

  printJson(value: unknown): void {
    this.deps.stdout(`${JSON.stringify(value, null, 2)}\n`);
  }

  warn(line: string): void {
    this.deps.stderr(`platform: warning: ${line}\n`);
  }

  /**
   * The database, open. Unless told otherwise it must exist and be fully migrated: an admin
   * command on a schema this build does not expect could write rows the running service cannot
   * read, and one pointed at a SQLite file that is not there would quietly start an empty one.
   * Says which database it is, once, on stderr.
   */
  async database(options: { requireMigrated?: boolean } = {}): Promise<DataSource> {
    const config = this.config;
    const requireMigrated = options.requireMigrated ?? true;
    if (!this.announced) {
      this.announced = true;
      this.deps.stderr(`database: ${describeDatabase(config.database)}\n`);
    }
    let dataSource = this.deps.dataSource ?? this.opened;
    if (!dataSource) {
      const { database } = config;
      if (requireMigrated && database.kind === 'sqlite' && database.location !== ':memory:' && !existsSync(database.location)) {
        throw new CliError(
          `no SQLite database at ${resolve(database.location)}: check DATABASE_URL (the service's), or create it with \`platform migrate\``,
          EXIT_UNAVAILABLE,
        );
      }
      let candidate: DataSource | undefined;
      try {
        candidate = createDataSource(database);
        await candidate.initialize();
      } catch (error) {
        // A pool a failed connection left behind would keep the process alive.
        await candidate?.driver.disconnect().catch(() => undefined);
        if (error instanceof ConfigError) throw new CliError(`cannot open the ${database.kind} database: ${error.message}`, EXIT_UNAVAILABLE);
        // The reason, never the URL: it may carry a password.
        throw new CliError(`cannot open the ${database.kind} database: ${error instanceof Error ? error.message : String(error)}`, EXIT_UNAVAILABLE);
      }
      this.opened = dataSource = candidate;
    }
    if (requireMigrated && (await dataSource.showMigrations())) {
      throw new CliError('the database schema is older than this build: run `platform migrate` first', EXIT_UNAVAILABLE);
    }
    return dataSource;
  }

  private built: AdminServices | undefined;

  async services(): Promise<AdminServices> {
    if (this.built) return this.built;
    const dataSource = await this.database();
    const { config, clock, logger } = this;
    // Wired as the service wires them (src/admin-services.ts): the command line keeps the API's rules.
    this.built = buildAdminServices({ config, dataSource, clock, logger });
    // With REDIS_URL, a publish or restore made here reaches the workbenches' control channels
    // as one made through the API does (docs/api/policy-push.md); close() waits for it.
    const redisUrl = config.redisUrl;
    if (redisUrl) this.built.policies.onPublished((change) => this.pushes.push(this.push(redisUrl, change)));
    return this.built;
  }

  private readonly pushes: Promise<void>[] = [];

  /** Publishes the change on Redis for the replicas to tell their sockets; a failure is a warning: polling brings it all the same. */
  private async push(url: string, change: PublishedChange): Promise<void> {
    // One attempt, no reconnecting: the command line does not wait for Redis to come back.
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2_000, enableOfflineQueue: false, retryStrategy: () => null });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      await publishPolicyChange(redis, change, 'command-line');
    } catch (error) {
      this.warn(`the connected workbenches were not told of revision ${change.number} (Redis: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}); they read it at their next poll`);
    } finally {
      redis.disconnect();
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.pushes.splice(0));
    const opened = this.opened;
    this.opened = undefined;
    if (opened?.isInitialized) await opened.destroy();
  }
}
