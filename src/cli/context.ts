import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createDataSource } from '../db/data-source.js';
import { createLogger } from '../logger.js';
import { OrganisationService } from '../modules/organisation/service.js';
import { ProjectService } from '../modules/projects/service.js';
import { systemClock, type Clock } from '../util/clock.js';

/** What the command line runs against. Tests hand in their own environment, output and database. */
export interface CliDependencies {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  clock?: Clock;
  /** An open database. The command line then neither opens nor closes one (tests use this). */
  dataSource?: DataSource;
}

export const EXIT_OK = 0;
/** The command was understood but refused or failed: unknown id, host taken, database down. */
export const EXIT_FAILED = 1;
/** The command line or the configuration is wrong: nothing was attempted. */
export const EXIT_USAGE = 2;

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

export interface AdminServices {
  config: Config;
  /** JSON lines on stderr, at LOG_LEVEL: the audit line of every change the command makes. */
  logger: Logger;
  organisations: OrganisationService;
  projects: ProjectService;
}

/**
 * One run of the command line: configuration read on first use (so `--help` works with a broken
 * environment), the database opened on first use and closed at the end.
 */
export class CliContext {
  private loadedConfig: Config | undefined;
  private opened: DataSource | undefined;

  constructor(private readonly deps: CliDependencies) {}

  get config(): Config {
    if (!this.loadedConfig) {
      try {
        this.loadedConfig = loadConfig(this.deps.env);
      } catch (error) {
        if (error instanceof ConfigError) throw new CliError(`configuration error: ${error.message}`, EXIT_USAGE);
        throw error;
      }
    }
    return this.loadedConfig;
  }

  private createdLogger: Logger | undefined;

  /** The command line's log: JSON lines (redacted like the service's) on stderr, at LOG_LEVEL. */
  get logger(): Logger {
    this.createdLogger ??= createLogger(this.config.logLevel, { write: (line: string) => this.deps.stderr(line) });
    return this.createdLogger;
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
   * The database, open. Unless told otherwise it must be fully migrated: an admin command on a
   * schema this build does not expect could write rows the running service cannot read.
   */
  async database(options: { requireMigrated?: boolean } = {}): Promise<DataSource> {
    const config = this.config;
    let dataSource = this.deps.dataSource ?? this.opened;
    if (!dataSource) {
      const candidate = createDataSource(config.database);
      try {
        await candidate.initialize();
      } catch (error) {
        // The reason, never the URL: it may carry a password.
        throw new CliError(`cannot open the ${config.database.kind} database: ${error instanceof Error ? error.message : String(error)}`);
      }
      this.opened = dataSource = candidate;
    }
    if ((options.requireMigrated ?? true) && (await dataSource.showMigrations())) {
      throw new CliError('the database schema is older than this build: run `platform migrate` first');
    }
    return dataSource;
  }

  async services(): Promise<AdminServices> {
    const dataSource = await this.database();
    return {
      config: this.config,
      logger: this.logger,
      organisations: new OrganisationService(dataSource, this.clock),
      projects: new ProjectService(dataSource, this.clock),
    };
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (opened?.isInitialized) await opened.destroy();
  }
}
