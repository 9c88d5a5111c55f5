import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RedisClient } from '../adapters/state/redis.js';
import type { DataSource } from 'typeorm';
import type { ReadCounts } from './db/read-replica.js';
import type { TokenKind } from './auth/principal.js';
import type { Credential } from './auth/resolver.js';
import { ApiError, methodNotAllowed, unauthorized } from './errors.js';
import { MAIL_KINDS, type MailKind } from './mail/mailer.js';
import { safeEqual } from './util/secrets.js';

/**
 * Prometheus metrics (`GET /metrics`, text exposition format 0.0.4). Every label has a small,
 * fixed set of values: a request is labelled by the template of the route that answered it
 * (`/projects/v1/{id}`), never by its path, and every request no route matched shares the one
 * label `unmatched`; token verifications by token kind and outcome (`ok` or the refusal's error
 * code, a fixed list); nothing carries a host name, an organisation, a person or a token.
 *
 * `/metrics` stands beside the API like the probes but outside its OpenAPI document (it answers
 * Prometheus text, not JSON): no tenancy, no rate limit, answered at any host name (Prometheus
 * scrapes pod addresses). With METRICS_TOKEN set it asks for `Authorization: Bearer <token>`,
 * compared in constant time; without, it is open to whoever reaches the port.
 */

/** The process metrics (`process_*`, `nodejs_*`) are the process's, not an app's: collected once. */
let processMetrics: Registry | undefined;
function defaultMetrics(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The token kinds as metric labels: a DPoP-bound device token is `device_dpop`. */
export type TokenKindLabel = 'person' | 'device' | 'device_dpop' | 'cloud_session' | 'run_credential' | 'none' | 'unrecognised';

export function tokenKindLabel(kind: TokenKind, credential: Credential): TokenKindLabel {
  if (kind === 'device') return credential.scheme === 'dpop' ? 'device_dpop' : 'device';
  return kind.replace('-', '_') as TokenKindLabel;
}

/** The outcome of a verification: `ok`, the refusal's error code, or `error` (a failure, not a refusal). */
export function outcomeOf(error: unknown): string {
  return error instanceof ApiError ? error.code : 'error';
}

interface MysqlPoolInternals {
  config?: { connectionLimit?: number };
  _allConnections?: { length: number };
  _freeConnections?: { length: number };
  _connectionQueue?: { length: number };
}

export interface MetricsSources {
  dataSource: DataSource;
  redis?: RedisClient | undefined;
  relayConnections: () => number;
  /** Entries held now by each bounded in-process cache, by name (their bounds are in config). */
  cacheSizes?: () => Record<string, number>;
  /** The sweeper's kinds (`platform_sweeper_rows_deleted_total{kind}` starts at 0 for each). */
  sweepKinds?: readonly string[];
  /** With DATABASE_READ_URL: the reads answered by the replica and by the primary (src/db/read-replica.ts). */
  readCounts?: () => ReadCounts;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly durations: Histogram<'method' | 'route' | 'status'>;
  private readonly verifications: Counter<'kind' | 'outcome'>;
  private readonly ingestItems: Counter<'kind' | 'outcome'>;
  private readonly mails: Counter<'kind'>;
  private readonly sweptRows: Counter<'kind'>;
  private readonly sweeps: Counter<'outcome'>;
  private readonly sweepDuration: Gauge;
  private readonly sweptAt: Gauge;
  private readonly readiness: Gauge<'check'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'platform_http_requests_total',
      help: 'HTTP requests answered, by method, route template (unmatched: no route) and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'platform_http_request_duration_seconds',
      help: 'Time from the request to the end of its answer, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.verifications = new Counter({
      name: 'platform_token_verifications_total',
      help: 'Access tokens verified, by kind (person, device, device_dpop, cloud_session, run_credential; none: no usable Authorization; unrecognised: a kind the route does not take) and outcome (ok, or the refusal code).',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.ingestItems = new Counter({
      name: 'platform_ingest_items_total',
      help: 'Ingest items received in accepted envelopes, by kind (events, usage, audit, tasks) and outcome (stored; duplicate: already held, or a task not newer).',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.mails = new Counter({
      name: 'platform_mails_sent_total',
      help: 'Mails delivered to the mail server (or the outbox), by kind (sign_in_code, invitation). Emailed codes are capped per address and per minute (AUTH_EMAIL_CODES_PER_DAY, AUTH_EMAIL_CODES_PER_MINUTE).',
      labelNames: ['kind'],
      registers,
    });
    // Every kind from the start at 0: an alert on its rate sees the first mail.
    for (const kind of MAIL_KINDS) this.mails.inc({ kind }, 0);
    this.sweptRows = new Counter({
      name: 'platform_sweeper_rows_deleted_total',
      help: 'Rows the sweeper of this replica deleted, by kind (docs/operations/retention.md, "Retention and the sweeper"); run_credentials counts credential hashes cleared.',
      labelNames: ['kind'],
      registers,
    });
    // Every kind is a series from the start (0), so a dashboard shows it before it first deletes.
    for (const kind of sources.sweepKinds ?? []) this.sweptRows.inc({ kind }, 0);
    this.sweeps = new Counter({
      name: 'platform_sweeper_runs_total',
      help: "The sweeper's turns on this replica, by outcome: swept; skipped (another replica held the lock, or swept less than an interval ago); failed (the database refused or was away: see the log).",
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['swept', 'skipped', 'failed']) this.sweeps.inc({ outcome }, 0);
    this.sweepDuration = new Gauge({
      name: 'platform_sweeper_last_run_duration_seconds',
      help: 'How long the last turn of the sweeper on this replica took (a sweep, or a skip).',
      registers,
    });
    this.sweptAt = new Gauge({
      name: 'platform_sweeper_last_run_timestamp_seconds',
      help: 'When the last sweep of any replica finished (Unix seconds), as this replica last read it from the database; 0 until it has read it.',
      registers,
    });
    this.readiness = new Gauge({
      name: 'platform_readiness_check',
      help: 'What the last readiness probe (`/readyz`) of this replica found, by check (database, migrations, redis, rateLimits, replayCache, relay): 1 usable, 0 not.',
      labelNames: ['check'],
      registers,
    });
    new Gauge({
      name: 'platform_relay_connections',
      help: 'Control channels (workbench WebSockets) held by this replica.',
      registers,
      collect() {
        this.set(sources.relayConnections());
      },
    });
    const cacheSizes = sources.cacheSizes;
    if (cacheSizes) {
      new Gauge({
        name: 'platform_cache_entries',
        help: 'Entries held by each bounded in-process cache of this replica (deviceTokens, personTokens, cloudSessions: AUTH_CACHE_MAX_ENTRIES each; policyLatestNumbers likewise; policyAnswers, policyLayers: 10 000 each).',
        labelNames: ['cache'],
        registers,
        collect() {
          for (const [cache, entries] of Object.entries(cacheSizes())) this.set({ cache }, entries);
        },
      });
    }
    const readCounts = sources.readCounts;
    if (readCounts) {
      new Counter({
        name: 'platform_database_reads_total',
        help: 'With DATABASE_READ_URL: the reads that may go to the replica, by the `server` that answered (replica, primary) and their `kind` (credential: an access token by its hash; settled: published policy revisions).',
        labelNames: ['server', 'kind'],
        registers,
        collect() {
          this.reset();
          for (const [server, kinds] of Object.entries(readCounts())) for (const [kind, count] of Object.entries(kinds)) this.inc({ server, kind }, count as number);
        },
      });
    }
    const driver = sources.dataSource.options.type;
    new Gauge({
      name: 'platform_database_info',
      help: 'Always 1; `driver` names the database driver (better-sqlite3: one connection in process, no pool; mysql, mariadb: a mysql2 pool).',
      labelNames: ['driver'],
      registers,
      collect() {
        this.set({ driver }, 1);
      },
    });
    if (driver === 'mysql' || driver === 'mariadb') {
      const pool = (): MysqlPoolInternals | undefined => (sources.dataSource.driver as unknown as { pool?: MysqlPoolInternals }).pool;
      new Gauge({
        name: 'platform_database_pool_connections',
        help: 'The mysql2 pool: `limit` (its size), `open`, `in_use` and `idle` connections.',
        labelNames: ['state'],
        registers,
        collect() {
          const current = pool();
          const open = current?._allConnections?.length ?? 0;
          const idle = current?._freeConnections?.length ?? 0;
          this.set({ state: 'limit' }, current?.config?.connectionLimit ?? 0);
          this.set({ state: 'open' }, open);
          this.set({ state: 'idle' }, idle);
          this.set({ state: 'in_use' }, Math.max(0, open - idle));
        },
      });
      new Gauge({
        name: 'platform_database_pool_waiting',
        help: 'Queries waiting for a connection of the mysql2 pool.',
        registers,
        collect() {
          this.set(pool()?._connectionQueue?.length ?? 0);
        },
      });
    }
    const redis = sources.redis;
    if (redis) {
      new Gauge({
        name: 'platform_redis_up',
        help: 'Whether this replica\'s Redis client is connected and ready (1) or not (0). Absent without REDIS_URL.',
        registers,
        collect() {
          this.set(redis.status === 'ready' ? 1 : 0);
        },
      });
    }
  }

  /** Counts an answered request, labelled by the route template that answered it (the edge calls
   * it once the answer is written: src/http/edge.ts `requestEdge`). */
  requestFinished(req: Request, res: Response, seconds: number): void {
    const labels = { method: KNOWN_METHODS.has(req.method) ? req.method : 'other', route: routeTemplate(req), status: String(res.statusCode) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }

  /** What the sweeper tells (src/sweeper/sweeper.ts `SweeperObserver`). */
  readonly sweeper = {
    deleted: (kind: string, rows: number): void => void this.sweptRows.inc({ kind }, rows),
    ran: (outcome: 'swept' | 'skipped' | 'failed', seconds: number): void => {
      this.sweeps.inc({ outcome });
      this.sweepDuration.set(seconds);
    },
    lastRun: (at: Date): void => void this.sweptAt.set(at.getTime() / 1000),
  };

  /** What a readiness probe found, check by check. */
  readinessChecked(checks: Record<string, boolean>): void {
    for (const [check, usable] of Object.entries(checks)) this.readiness.set({ check }, usable ? 1 : 0);
  }

  tokenVerified(kind: TokenKindLabel, outcome: string): void {
    this.verifications.inc({ kind, outcome });
  }

  ingested(received: Record<'events' | 'usage' | 'audit' | 'tasks', number>, stored: Record<'events' | 'usage' | 'audit' | 'tasks', number>): void {
    for (const kind of ['events', 'usage', 'audit', 'tasks'] as const) {
      if (stored[kind] > 0) this.ingestItems.inc({ kind, outcome: 'stored' }, stored[kind]);
      const duplicates = received[kind] - stored[kind];
      if (duplicates > 0) this.ingestItems.inc({ kind, outcome: 'duplicate' }, duplicates);
    }
  }

  mailSent(kind: MailKind): void {
    this.mails.inc({ kind });
  }

  /** `GET /metrics` (and HEAD); any other method is 405. Mounted before tenancy and rate limits. */
  endpoint(token: string | undefined): RequestHandler {
    const merged = Registry.merge([defaultMetrics(), this.registry]);
    return async (req: Request, res: Response, next: NextFunction) => {
      try {
        if (req.method !== 'GET' && req.method !== 'HEAD') {
          throw methodNotAllowed(['GET', 'HEAD']);
        }
        if (token !== undefined) {
          const presented = /^Bearer +(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
          if (presented === undefined || !safeEqual(presented, token)) throw unauthorized('the metrics token is required', 'Bearer realm="metrics"');
        }
        const text = await merged.metrics();
        res.status(200).set({ 'Content-Type': merged.contentType, 'Cache-Control': 'no-store' }).send(text);
      } catch (error) {
        next(error);
      }
    };
  }
}

/**
 * The template of the route that answered (`/projects/v1/{id}`, as the OpenAPI document writes
 * it), `/metrics` for the scrape itself, or `unmatched`: never the path as sent.
 */
function routeTemplate(req: Request): string {
  const route = (req as { route?: { path?: unknown } }).route;
  if (!route || typeof route.path !== 'string') return 'unmatched';
  // Express's Route object lives as long as the app: its template is written once.
  const known = templates.get(route);
  if (known !== undefined && known.baseUrl === req.baseUrl) return known.template;
  const template = `${req.baseUrl}${route.path}`.replace(/:(\w+)/g, '{$1}');
  templates.set(route, { baseUrl: req.baseUrl, template });
  return template;
}
const templates = new WeakMap<object, { baseUrl: string; template: string }>();
