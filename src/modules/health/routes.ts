import type { DataSource } from 'typeorm';
import { notReady } from '../../errors.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named } from '../../http/schema.js';
import { ProbeFailure, type ReadinessProbe } from '../../readiness.js';

/**
 * Liveness and readiness. `/readyz` asks every dependency and every component that stands on
 * one, at once, each within a time limit, and answers 503 naming what is not usable:
 *
 * - `database`: answers a query;
 * - `migrations`: none pending (with MIGRATE_ON_START=false the service starts on an older
 *   schema and waits for `platform migrate`);
 * - `redis`: answers (when REDIS_URL is set);
 * - `rateLimits`: the counters' scripts are loaded in Redis (loaded again here when Redis forgot
 *   them), `in process` without Redis, `disabled` with RATE_LIMITS_ENABLED=false;
 * - `replayCache`: the DPoP replay cache can write in Redis, `in process` without Redis;
 * - `relay`: the control channel's routing is subscribed to this replica's Redis channel (calls
 *   for workbenches held by other replicas travel there), `in process` without Redis.
 *
 * Nothing is cached but "no migration pending" (a running service's code never gains one), so
 * readiness follows a dependency back as soon as it answers again.
 */

const READY_STATES = ['ok', 'not configured', 'in process', 'disabled'] as const;

const healthSchema = named('Health', {
  type: 'object',
  description: 'Liveness: the process answers.',
  required: ['status'],
  properties: { status: { type: 'string', const: 'ok', description: 'Always `ok`.' } },
  additionalProperties: false,
  examples: [{ status: 'ok' }],
} as const);

const readinessSchema = named('Readiness', {
  type: 'object',
  description: 'Readiness: every dependency answered and every component that needs one is usable.',
  required: ['status', 'checks'],
  properties: {
    status: { type: 'string', const: 'ready', description: 'Always `ready`.' },
    checks: {
      type: 'object',
      description:
        'Each part and what it said: `database`, `migrations`, `redis`, `rateLimits`, `replayCache`, `relay`. `ok`; `not configured` (Redis without REDIS_URL: one replica only); `in process` (a component kept in this process for want of Redis); `disabled` (rate limits with RATE_LIMITS_ENABLED=false).',
      additionalProperties: { type: 'string', enum: [...READY_STATES] },
    },
  },
  additionalProperties: false,
  examples: [{ status: 'ready', checks: { database: 'ok', migrations: 'ok', redis: 'ok', rateLimits: 'ok', replayCache: 'ok', relay: 'ok' } }],
} as const);

const notReadySchema = named('NotReady', {
  type: 'object',
  description: 'Not ready: `error` is `not_ready`, the message names what is not usable and `checks` says what each part said.',
  required: ['error', 'checks'],
  properties: {
    error: { type: 'string', const: 'not_ready', description: 'Error code.' },
    message: { type: 'string', description: 'Plain-words explanation naming the parts that are not usable.' },
    checks: {
      type: 'object',
      description:
        'Each part and what it said: a ready state as in `Readiness`, or `unreachable`, `timed out`, `pending` (migrations not applied), `scripts not loaded` or `not subscribed` (the relay).',
      additionalProperties: { type: 'string' },
    },
  },
  additionalProperties: false,
} as const);

export function databaseProbe(dataSource: DataSource): ReadinessProbe {
  return { name: 'database', check: async () => (await dataSource.query('SELECT 1'), 'ok') };
}

/** Pending migrations make the service not ready; once none is pending, none will be. */
export function migrationsProbe(schema: { isMigrated(options: { fresh: boolean }): Promise<boolean> }): ReadinessProbe {
  return {
    name: 'migrations',
    check: async () => {
      // Reads the migrations table only; never creates it, never runs anything.
      if (!(await schema.isMigrated({ fresh: true }))) throw new ProbeFailure('pending');
      return 'ok';
    },
  };
}

function within<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProbeFailure('timed out')), timeoutMs);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function listed(names: string[]): string {
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)!}`;
}

/**
 * `checked`: told what every readiness probe found (metrics: `platform_readiness_check`), so that
 * alerts see what the orchestrator sees.
 */
export function healthRoutes(probes: readonly ReadinessProbe[], options: { timeoutMs?: number; checked?: (usable: Record<string, boolean>) => void } = {}): RouteDefinition[] {
  const timeoutMs = options.timeoutMs ?? 2_000;
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getLiveness',
      permission: 'public',
      summary: 'Liveness probe (no I/O)',
      description: 'Answers while the process runs, without asking any dependency: for an orchestrator deciding whether to restart it (readiness is `GET /readyz`).',
      tag: 'Health',
      extension: true,
      tenant: false,
      auth: 'public',
      database: false,
      schemas: {},
      responses: { 200: { description: 'The process is alive.', schema: healthSchema } },
      handler: () => ({ status: 200, body: { status: 'ok' }, headers: { 'Cache-Control': 'no-store' } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      permission: 'public',
      summary: 'Readiness probe (database, migrations, and Redis with what stands on it)',
      description:
        'Ready when the database answers, no migration is pending, and (with REDIS_URL) Redis answers, the rate-limit scripts are loaded in it and the DPoP replay cache can write to it. Each check has 2 s.',
      tag: 'Health',
      extension: true,
      tenant: false,
      auth: 'public',
      database: false,
      schemas: {},
      responses: {
        200: { description: 'Ready to serve.', schema: readinessSchema },
        503: { description: 'A dependency or a component is not usable (`not_ready`); the message and `checks` name which.', schema: notReadySchema },
      },
      errors: { 503: ['not_ready'] },
      handler: async () => {
        const results = await Promise.allSettled(probes.map((probe) => within(probe.check(), timeoutMs)));
        const checks: Record<string, string> = {};
        const failed: string[] = [];
        probes.forEach((probe, index) => {
          const result = results[index]!;
          if (result.status === 'fulfilled') {
            checks[probe.name] = result.value;
            return;
          }
          checks[probe.name] = result.reason instanceof ProbeFailure ? result.reason.state : 'unreachable';
          failed.push(probe.name);
        });
        options.checked?.(Object.fromEntries(probes.map((probe) => [probe.name, !failed.includes(probe.name)])));
        if (failed.length > 0) throw notReady(`not ready: ${listed(failed)} ${failed.length === 1 ? 'is' : 'are'} not usable`, { checks });
        return { status: 200, body: { status: 'ready', checks }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
  ];
}
