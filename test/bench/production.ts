import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createDpopKey } from './dpop.js';
import { seedPlatform } from './fixtures.js';
import { createMariadbDatabase } from './ingest.js';
import { cpuMicros, load, problemWith, type Measurement } from './measure.js';
import { BEARER_POLICY, DPOP_POLICY, scenarios as allScenarios, type Scenario } from './scenarios.js';
import { freePort, startChild, type ChildServer } from './servers.js';

/**
 * The production shape beside the embedded one (`npm run bench -- --only production`, issue 30):
 * two replicas of the real service on a fresh MariaDB database and Redis, and one process on
 * SQLite, in the same run, interleaved round by round (embedded, then production, per scenario),
 * on discovery, Bearer and DPoP policy reads. CPU per request counts every process of the shape:
 * the service processes, and for the production shape mariadbd and redis-server too (both are
 * shared with anything else the machine runs: a loaded machine inflates the production side).
 * Prints per scenario the medians over the rounds and the ratios: CPU embedded ÷ production
 * (at least 0.9 is the goal) and p99 production ÷ embedded (at most 1.2).
 */

export interface ProductionOptions {
  script: string;
  host: string;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  mariadb: string;
  redis: string;
  workDir: string;
  rounds: number;
  warmupSeconds: number;
  durationSeconds: number;
  connections: number;
  log: (line: string) => void;
}

interface Shape {
  name: 'embedded' | 'production';
  servers: ChildServer[];
  /** Every process whose CPU counts, each with the part of the shape it is (service, mariadbd, redis-server). */
  pids: { pid: number; part: string }[];
  scenarios: Scenario[];
}

export interface ProductionRow {
  scenario: string;
  /**
   * `parts`: per request, the median CPU of each part of the shape (`service`, `mariadbd`,
   * `redis-server`, µs) and its context switches (`<part> switches`).
   */
  embedded: { rps: number; cpuMicros: number; p99: number; parts: Record<string, number> };
  production: { rps: number; cpuMicros: number; p99: number; parts: Record<string, number> };
  cpuRatio: number;
  p99Ratio: number;
  problem?: string;
}

// BENCH_PRODUCTION_SCENARIOS: a comma-separated list of words; only the scenarios whose name holds one of them run (all three by default).
const chosen = (process.env.BENCH_PRODUCTION_SCENARIOS ?? '').split(',').map((word) => word.trim().toLowerCase()).filter(Boolean);
// BENCH_PRODUCTION_REPLICAS: how many replicas the production shape runs, 1 to 4 (2 by default, as the issue measured; the others are for experiments).
const replicaCount = Number(process.env.BENCH_PRODUCTION_REPLICAS ?? '2');
if (!Number.isInteger(replicaCount) || replicaCount < 1 || replicaCount > 4) throw new Error(`BENCH_PRODUCTION_REPLICAS must be a whole number from 1 to 4, not "${process.env.BENCH_PRODUCTION_REPLICAS ?? ''}"`);
const REPLICA_NAMES = ['A', 'B', 'C', 'D'].slice(0, replicaCount);
const NAMES = ['discovery: GET /.well-known/platform.json', BEARER_POLICY, DPOP_POLICY].filter((name) => chosen.length === 0 || chosen.some((word) => name.toLowerCase().includes(word)));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Context switches (voluntary and not) of every thread of a process so far. */
function contextSwitches(pid: number): number {
  try {
    let sum = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8');
      for (const match of status.matchAll(/ctxt_switches:\s+(\d+)/g)) sum += Number(match[1]);
    }
    return sum;
  } catch {
    return 0;
  }
}

function mariadbPid(): number | undefined {
  try {
    return Number(execFileSync('pidof', ['-s', 'mariadbd'], { encoding: 'utf8' }).trim()) || undefined;
  } catch {
    return undefined;
  }
}

async function redisPid(url: string): Promise<number | undefined> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    return Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]) || undefined;
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

function scenariosFor(host: string, tokens: { bearerToken: string; dpopToken: string }, dpopKey: ReturnType<typeof createDpopKey>): Scenario[] {
  const all = allScenarios({
    host,
    personToken: '',
    policyDevices: { bearerToken: tokens.bearerToken, dpopToken: tokens.dpopToken, dpopKey, proofWindowSeconds: 60, dpopEdToken: '', dpopEdKey: createDpopKey('Ed25519') },
    cloud: { accessToken: '', organisationId: '' },
    peers: { jwtBearer: '', jwtBearerOtherAudience: '', jwtDpop: '', jwtDpopKey: createDpopKey(), opaque: '', opaqueRevoked: '' },
  });
  return NAMES.map((name) => all.find((scenario) => scenario.name === name && scenario.target === 'platform')!);
}

/** One measured stretch of `scenario` on every server of the shape at once, connections split between them. */
async function measure(shape: Shape, index: number, options: ProductionOptions, seconds: number): Promise<Measurement & { cpu: number; parts: Record<string, number> }> {
  const scenario = shape.scenarios[index]!;
  const per = Math.max(1, Math.floor(options.connections / shape.servers.length));
  const before = shape.pids.map(({ pid }) => cpuMicros(pid) ?? 0);
  const switchesBefore = shape.pids.map(({ pid }) => contextSwitches(pid));
  const parts = await Promise.all(shape.servers.map((server) => load(scenario, server.origin, { connections: per, durationSeconds: seconds })));
  const after = shape.pids.map(({ pid }) => cpuMicros(pid) ?? 0);
  const switchesAfter = shape.pids.map(({ pid }) => contextSwitches(pid));
  const total = parts.reduce((sum, part) => sum + part.total, 0);
  const cpu = after.reduce((sum, value, i) => sum + value - before[i]!, 0);
  const byPart: Record<string, number> = {};
  shape.pids.forEach(({ part }, i) => {
    byPart[part] = (byPart[part] ?? 0) + (total > 0 ? (after[i]! - before[i]!) / total : 0);
    byPart[`${part} switches`] = (byPart[`${part} switches`] ?? 0) + (total > 0 ? (switchesAfter[i]! - switchesBefore[i]!) / total : 0);
  });
  const statusCodes: Record<string, number> = {};
  for (const part of parts) for (const [code, count] of Object.entries(part.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  return {
    requestsPerSecond: parts.reduce((sum, part) => sum + part.requestsPerSecond, 0),
    p50: Math.max(...parts.map((part) => part.p50)),
    p99: Math.max(...parts.map((part) => part.p99)),
    total,
    durationSeconds: seconds,
    non2xx: parts.reduce((sum, part) => sum + part.non2xx, 0),
    errors: parts.reduce((sum, part) => sum + part.errors, 0),
    timeouts: parts.reduce((sum, part) => sum + part.timeouts, 0),
    statusCodes,
    cpu: total > 0 ? cpu / total : 0,
    parts: byPart,
  };
}

export async function runProductionComparison(options: ProductionOptions): Promise<{ ok: boolean; rows: ProductionRow[] }> {
  const dpopKey = createDpopKey();
  const base: Record<string, string> = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    LOG_LEVEL: 'silent',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    RATE_LIMITS_ENABLED: 'false',
    ...(process.env.BENCH_UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.BENCH_UV_THREADPOOL_SIZE } : {}),
  };
  const embeddedEnv = { ...base, DATABASE_URL: `sqlite:${options.workDir}/production-embedded.sqlite` };
  const embeddedSeed = await seedPlatform({ env: embeddedEnv, host: options.host, oidc: options.oidc, ingestDevices: 0, policyDpopJkt: dpopKey.thumbprint });
  const made = await createMariadbDatabase(options.mariadb);
  if (!made.database) throw new Error(`MariaDB unreachable: ${made.unreachable ?? ''}`);
  const database = made.database;
  const shapes: Shape[] = [];
  try {
    const productionEnv = { ...base, DATABASE_URL: database.platformUrl, REDIS_URL: options.redis, SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url') };
    const productionSeed = await seedPlatform({ env: productionEnv, host: options.host, oidc: options.oidc, ingestDevices: 0, policyDpopJkt: dpopKey.thumbprint });
    const embedded = await startChild({ name: 'embedded (SQLite)', script: options.script, env: embeddedEnv, port: await freePort(), ready: { path: '/readyz' }, timeoutMs: 60_000 });
    shapes.push({ name: 'embedded', servers: [embedded], pids: [{ pid: embedded.pid, part: 'service' }], scenarios: scenariosFor(options.host, embeddedSeed.policy!, dpopKey) });
    const replicas = await Promise.all(
      REPLICA_NAMES.map(async (name) =>
        startChild({ name: `production replica ${name}`, script: options.script, env: { ...productionEnv, MIGRATE_ON_START: 'false' }, port: await freePort(), ready: { path: '/readyz' }, timeoutMs: 60_000 }),
      ),
    );
    const extra = [
      { pid: mariadbPid(), part: 'mariadbd' },
      { pid: await redisPid(options.redis), part: 'redis-server' },
    ].filter((entry): entry is { pid: number; part: string } => entry.pid !== undefined);
    if (extra.length < 2) options.log('production: mariadbd or redis-server not found locally; their CPU is not counted');
    shapes.push({ name: 'production', servers: replicas, pids: [...replicas.map((replica) => ({ pid: replica.pid, part: 'service' })), ...extra], scenarios: scenariosFor(options.host, productionSeed.policy!, dpopKey) });

    const results = new Map<string, { rps: number[]; cpu: number[]; p99: number[]; parts: Record<string, number[]>; problem?: string }>();
    for (let round = 1; round <= options.rounds; round++) {
      options.log(`production: round ${round} of ${options.rounds}`);
      for (let index = 0; index < NAMES.length; index++) {
        for (const shape of shapes) {
          if (round === 1) await measure(shape, index, options, Math.max(1, options.warmupSeconds));
          const measurement = await measure(shape, index, options, options.durationSeconds);
          const key = `${shape.name}\n${NAMES[index]}`;
          const entry = results.get(key) ?? { rps: [], cpu: [], p99: [], parts: {} };
          for (const [part, micros] of Object.entries(measurement.parts)) (entry.parts[part] ??= []).push(micros);
          entry.rps.push(measurement.requestsPerSecond);
          entry.cpu.push(measurement.cpu);
          entry.p99.push(measurement.p99);
          const problem = problemWith(measurement);
          if (problem) entry.problem = problem;
          results.set(key, entry);
        }
      }
    }
    const rows: ProductionRow[] = NAMES.map((name) => {
      const of = (shape: string) => {
        const entry = results.get(`${shape}\n${name}`)!;
        const parts = Object.fromEntries(Object.entries(entry.parts).map(([part, values]) => [part, median(values)]));
        return { rps: median(entry.rps), cpuMicros: median(entry.cpu), p99: median(entry.p99), parts, problem: entry.problem };
      };
      const e = of('embedded');
      const p = of('production');
      const problem = e.problem ?? p.problem;
      return {
        scenario: name,
        embedded: { rps: e.rps, cpuMicros: e.cpuMicros, p99: e.p99, parts: e.parts },
        production: { rps: p.rps, cpuMicros: p.cpuMicros, p99: p.p99, parts: p.parts },
        cpuRatio: p.cpuMicros > 0 ? e.cpuMicros / p.cpuMicros : 0,
        p99Ratio: e.p99 > 0 ? p.p99 / e.p99 : 0,
        ...(problem ? { problem } : {}),
      };
    });
    options.log(`production shape (${REPLICA_NAMES.length} replica${REPLICA_NAMES.length === 1 ? '' : 's'}, MariaDB, Redis) beside embedded (1 process, SQLite): ${options.rounds} interleaved rounds, medians, ${options.connections} connections, ${options.durationSeconds} s each; CPU over every process of the shape`);
    for (const row of rows) {
      options.log(
        `  ${row.scenario}: embedded ${row.embedded.rps.toFixed(0)} req/s, ${row.embedded.cpuMicros.toFixed(0)} µs CPU/req (${Object.entries(row.embedded.parts).map(([part, value]) => `${part} ${value.toFixed(part.endsWith('switches') ? 1 : 0)}`).join(', ')}), p99 ${row.embedded.p99} ms | production ${row.production.rps.toFixed(0)} req/s, ${row.production.cpuMicros.toFixed(0)} µs CPU/req (${Object.entries(row.production.parts).map(([part, value]) => `${part} ${value.toFixed(part.endsWith('switches') ? 1 : 0)}`).join(', ')}), p99 ${row.production.p99} ms | CPU ratio ${row.cpuRatio.toFixed(2)} (goal ≥ 0.9), p99 ratio ${row.p99Ratio.toFixed(2)} (goal ≤ 1.2)${row.problem ? ` FAILED (${row.problem})` : ''}`,
      );
    }
    return { ok: rows.every((row) => !row.problem), rows };
  } finally {
    for (const shape of shapes) for (const server of shape.servers) await server.stop();
    await database.drop();
  }
}
