import type { DataSource } from 'typeorm';
import { notReady } from '../../http/errors.js';
import { defineRoute, type RouteDefinition } from '../../http/route.js';
import { named } from '../../http/schema.js';

export interface ReadinessProbe {
  name: string;
  check(): Promise<'ok' | 'not configured'>;
}

const healthSchema = named('Health', {
  type: 'object',
  description: 'Liveness: the process answers.',
  required: ['status'],
  properties: { status: { type: 'string', const: 'ok', description: 'Always `ok`.' } },
  additionalProperties: false,
} as const);

const readinessSchema = named('Readiness', {
  type: 'object',
  description: 'Readiness: every dependency answered.',
  required: ['status', 'checks'],
  properties: {
    status: { type: 'string', const: 'ready', description: 'Always `ready`.' },
    checks: {
      type: 'object',
      description: 'Each dependency and what it said: `ok`, or `not configured` (Redis without REDIS_URL: one replica only).',
      additionalProperties: { type: 'string', enum: ['ok', 'not configured'] },
    },
  },
  additionalProperties: false,
} as const);

const notReadySchema = named('NotReady', {
  type: 'object',
  description: 'Not ready: `error` is `not_ready`, `checks` says which dependency failed.',
  required: ['error', 'checks'],
  properties: {
    error: { type: 'string', const: 'not_ready', description: 'Error code.' },
    message: { type: 'string', description: 'Plain-words explanation.' },
    checks: { type: 'object', description: 'Each dependency and what it said.', additionalProperties: { type: 'string' } },
  },
  additionalProperties: false,
} as const);

export function databaseProbe(dataSource: DataSource): ReadinessProbe {
  return { name: 'database', check: async () => (await dataSource.query('SELECT 1'), 'ok') };
}

export function healthRoutes(probes: readonly ReadinessProbe[], timeoutMs = 2_000): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'getLiveness',
      summary: 'Liveness probe (no I/O)',
      tag: 'Health',
      extension: true,
      tenant: false,
      auth: 'public',
      schemas: {},
      responses: { 200: { description: 'The process is alive.', schema: healthSchema } },
      handler: () => ({ status: 200, body: { status: 'ok' }, headers: { 'Cache-Control': 'no-store' } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'getReadiness',
      summary: 'Readiness probe (database, and Redis when configured)',
      tag: 'Health',
      extension: true,
      tenant: false,
      auth: 'public',
      schemas: {},
      responses: {
        200: { description: 'Ready to serve.', schema: readinessSchema },
        503: { description: 'A dependency is not reachable.', schema: notReadySchema },
      },
      errors: { 503: ['not_ready'] },
      handler: async () => {
        const checks: Record<string, string> = {};
        let failed: string | undefined;
        for (const probe of probes) {
          try {
            checks[probe.name] = await Promise.race([
              probe.check(),
              new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref()),
            ]);
          } catch (error) {
            checks[probe.name] = (error as Error).message === 'timeout' ? 'timed out' : 'unreachable';
            failed ??= probe.name;
          }
        }
        if (failed) throw notReady(`${failed} is not reachable`, { checks });
        return { status: 200, body: { status: 'ready', checks }, headers: { 'Cache-Control': 'no-store' } };
      },
    }),
  ];
}
