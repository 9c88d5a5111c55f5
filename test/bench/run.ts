/**
 * `npm run bench`: throughput and latency of the platform next to a bare Express handler.
 *
 * Layout (chosen for honest numbers on a small machine): each server under test runs in its own
 * child process; this process only generates load (autocannon) and serves the loopback OpenID
 * provider, which the platform asks once (discovery + JWKS) and then caches. Scenarios run one
 * after another, so at any moment one server process and one load generator share the CPUs.
 *
 * Three parts: HTTP scenarios (scenarios.ts: requests/s against the bare baseline, autocannon),
 * ingest throughput (ingest.ts: items stored per second by POST /ingest/v1 on SQLite and on
 * MariaDB, each beside a plain INSERT of the same rows, the ceiling), then the relay (relay.ts:
 * MCP tools/call round trips through the platform, one process and two replicas over Redis,
 * beside a direct WebSocket echo, the ceiling).
 *
 * Options (flags, or the BENCH_* environment variables):
 *   --duration <s>        measured seconds per scenario / ingest path  (BENCH_DURATION, default 10)
 *   --warmup <s>          unmeasured seconds before each               (BENCH_WARMUP, default 3)
 *   --connections <n>     concurrent connections, HTTP scenarios        (BENCH_CONNECTIONS, default 50)
 *   --ingest-clients <n>  concurrent uploaders (one device each)        (BENCH_INGEST_CLIENTS, default 4)
 *   --ingest-batch <n>    events per envelope / rows per INSERT         (BENCH_INGEST_BATCH, default 1000)
 *   --mariadb <url>       MariaDB server for the ingest part; a fresh database is made on it and
 *                         dropped afterwards  (BENCH_MARIADB_URL, default mariadb://root@127.0.0.1:3306)
 *   --redis <url>         Redis for the relay's two-replica part   (BENCH_REDIS_URL, default redis://127.0.0.1:6379)
 *   --only <text>         only the scenarios and ingest parts whose name contains text
 *                         ("policy", "ingest", "mariadb", ...; the bare baseline runs with any
 *                         HTTP scenario; "http" keeps every HTTP scenario and nothing else)
 *   --runs <n>            run the HTTP scenarios and each ingest path n times; medians reported  (BENCH_RUNS, default 1)
 *   --json <file>         also write the results as JSON
 *
 * The soak (`--only soak`, soak.ts): two replicas on MariaDB and Redis at a fixed rate
 * (BENCH_SOAK_RATE, 200/s) for BENCH_SOAK_SECONDS (or --duration when given; default 60 s):
 * achieved rate, errors (must be 0), p50/p99, resident memory and V8 heap of each replica, its
 * cache entries, and its live heap after a full collection (growth after warm-up at most 10%).
 *
 * Policy push (`--only push`, policy-push.ts): BENCH_PUSH_WORKBENCHES (1 000) workbenches holding
 * their control channels at two replicas on MariaDB and Redis; the time from a publish through one
 * replica to its `policy.changed` message on every socket, p50 and p99 (BENCH_PUSH_ROUNDS publishes).
 *
 * The sweep (`--only sweep`, sweep.ts): a million expired device tokens on a fresh MariaDB database
 * (BENCH_SWEEP_ROWS), deleted by `platform sweep` while GET /policy/v1 is loaded; p99 during the
 * sweep against p99 idle (target: at most 2×).
 * The audit write (`--only audit`, audit-write.ts): a policy publish with its audit row beside the
 * same publish with the trail turned off, interleaved in one run, on SQLite and MariaDB.
 *
 * Exits non-zero when any scenario saw a non-2xx answer or a connection error, or an ingest path
 * failed or left a row count different from what it sent, so a broken path never passes for a
 * fast one. An unreachable MariaDB skips the MariaDB part (said so on stdout and stderr) and is
 * not a failure: the bench is not CI.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { createDpopKey } from './dpop.js';
import { seedCloud, seedPlatform, type Seeded } from './fixtures.js';
import {
  CEILING_TABLE,
  countMysqlRows,
  countSqliteRows,
  createMariadbDatabase,
  createMysqlCeilingTable,
  createSqliteCeilingTable,
  measurePathRuns,
  mysqlCeilingWriters,
  platformWriters,
  sqliteCeilingWriters,
  type IngestPathResult,
} from './ingest.js';
import { load, problemWith, stopLoad, type Measurement } from './measure.js';
import { describeOps, idealRatio, measureCryptoCosts, unavoidableMicros, type CryptoCosts } from './limits.js';
import { formatRelayTable, runRelayBench, type RelayResult } from './relay.js';
import { formatPushTable, runPushBench } from './policy-push.js';
import { startProvider, type BenchProvider } from './oidc-provider.js';
import { BARE_CLASSES, BEARER_POLICY, DPOP_POLICY, PEER_JWT_BEARER, PEER_JWT_DPOP, PEER_OPAQUE, scenarios as allScenarios, type Fixtures, type Scenario, type TargetName } from './scenarios.js';
import { runSoak, runWorkerComparison } from './soak.js';
import { runProductionComparison } from './production.js';
import { runSweepBench } from './sweep.js';
import { formatAuditWriteTable, runAuditWriteBench } from './audit-write.js';
import { freePort, killAllChildren, send, startChild, type ChildServer } from './servers.js';
import { formatSvgTable, measureSvgPipeline, type SvgBenchResult } from './svg.js';
import { closeAgents, formatStallTable, measureStall, sendTo, type Stall } from './event-loop.js';
import { FIXED_ELSEWHERE, generatedLogCases, LOG_CASES, STALL_LIMIT_MS } from './hostile-payloads.js';
import { formatRedactionTable, measureRedaction, type RedactionBenchRow } from './redaction.js';

const HOST = 'bench.local';
const AUDIENCE = 'platform-bench';
const API_SCOPE = 'platform.api';

interface Options {
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  ingestClients: number;
  ingestBatch: number;
  mariadb: string;
  redis: string;
  only: string | undefined;
  json: string | undefined;
  runs: number;
}

function readOptions(): Options {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'ingest-clients': { type: 'string' },
      'ingest-batch': { type: 'string' },
      mariadb: { type: 'string' },
      redis: { type: 'string' },
      only: { type: 'string' },
      json: { type: 'string' },
      runs: { type: 'string' },
    },
  });
  const number = (name: string, flag: string | undefined, env: string | undefined, fallback: number, min: number, max: number) => {
    const raw = flag ?? env;
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || value > max) throw new Error(`--${name} must be a number from ${min} to ${max} (got "${raw}")`);
    return value;
  };
  return {
    durationSeconds: number('duration', values.duration, process.env.BENCH_DURATION, 10, 1, 300),
    warmupSeconds: number('warmup', values.warmup, process.env.BENCH_WARMUP, 3, 0, 60),
    connections: Math.round(number('connections', values.connections, process.env.BENCH_CONNECTIONS, 50, 1, 1_000)),
    ingestClients: Math.round(number('ingest-clients', values['ingest-clients'], process.env.BENCH_INGEST_CLIENTS, 4, 1, 64)),
    // INGEST_MAX_ITEMS (5000 by default) bounds an envelope.
    ingestBatch: Math.round(number('ingest-batch', values['ingest-batch'], process.env.BENCH_INGEST_BATCH, 1_000, 1, 5_000)),
    mariadb: values.mariadb ?? (process.env.BENCH_MARIADB_URL || 'mariadb://root@127.0.0.1:3306'),
    redis: values.redis ?? (process.env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379'),
    only: values.only,
    json: values.json,
    runs: Math.round(number('runs', values.runs, process.env.BENCH_RUNS, 1, 1, 9)),
  };
}

interface Outcome {
  scenario: Scenario;
  /** The median run (by requests/s). */
  measurement?: Measurement;
  /** Every run's measurement, in order. */
  runs: Measurement[];
  problem?: string;
}

const log = (line: string) => process.stdout.write(`${line}\n`);

// Everything this run started, so every way out (done, failure, Ctrl-C, watchdog) stops it.
const cleanups: (() => Promise<void> | void)[] = [];
async function cleanUp(): Promise<void> {
  stopLoad();
  for (const cleanup of cleanups.splice(0).reverse()) {
    try {
      await cleanup();
    } catch {
      // keep going: the rest still needs stopping
    }
  }
  killAllChildren();
}
process.on('exit', killAllChildren);

/** One request before the load: a clear message (status and body) beats a column of 401s. */
async function preflight(scenario: Scenario, origin: string): Promise<string | undefined> {
  const url = `${origin}${scenario.path}`;
  const shape = { method: scenario.method, url };
  try {
    const answer = await send(url, { method: scenario.method, headers: scenario.headers?.(shape), body: scenario.body?.(shape), timeoutMs: 10_000 });
    if (answer.status >= 200 && answer.status < 300) return undefined;
    return `the first request answered ${answer.status}: ${answer.body.slice(0, 400)}`;
  } catch (error) {
    return `the first request failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Per scenario: the median of the per-run ratios to the same run's bare baseline. */
function ratioOf(outcome: Outcome, bareRuns: Measurement[]): number | undefined {
  if (!outcome.runs.length || !bareRuns.length) return undefined;
  return median(outcome.runs.map((run, index) => run.requestsPerSecond / (bareRuns[index] ?? bareRuns[0]!).requestsPerSecond));
}

function formatTable(outcomes: Outcome[], bareRuns: Measurement[], costs: CryptoCosts | undefined): string {
  const rows = [['scenario', 'req/s', 'p50 ms', 'p99 ms', 'p99≤3×p50', 'vs bare', 'limit', 'target', 'target met', 'CPU µs/req', 'CPU vs bare', 'answers', 'result']];
  const bareRate = bareRuns.length ? median(bareRuns.map((run) => run.requestsPerSecond)) : undefined;
  const cpuOf = (runs: Measurement[]) => {
    const values = runs.map((run) => run.serverCpuMicros).filter((value): value is number => value !== undefined);
    return values.length ? median(values) : undefined;
  };
  const bareCpu = cpuOf(bareRuns);
  for (const outcome of outcomes) {
    const { scenario, measurement, problem } = outcome;
    if (!measurement) {
      rows.push([scenario.name, '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', 'FAILED']);
      continue;
    }
    const p50 = median(outcome.runs.map((run) => run.p50));
    const p99 = median(outcome.runs.map((run) => run.p99));
    const ratio = ratioOf(outcome, bareRuns);
    const limit = scenario.ops && costs && bareRate ? idealRatio(scenario.ops, costs, bareRate) : undefined;
    let met = '-';
    if (scenario.goal !== undefined && ratio !== undefined) {
      if (ratio >= scenario.goal) met = 'met';
      else if (limit !== undefined && limit < scenario.goal) met = ratio >= limit ? 'limit reached (target past it)' : ratio >= limit * 0.9 ? 'within 10% of limit (target past it)' : 'MISSED (target past limit)';
      else met = 'MISSED';
    }
    rows.push([
      scenario.name,
      median(outcome.runs.map((run) => run.requestsPerSecond)).toFixed(0),
      p50.toFixed(0),
      p99.toFixed(0),
      p50 > 0 ? (p99 <= 3 * p50 ? 'ok' : 'MISSED') : '-',
      ratio !== undefined ? `${ratio.toFixed(3)}x` : '-',
      limit !== undefined ? `${limit.toFixed(3)}x` : '-',
      scenario.goal !== undefined ? `${scenario.goal.toFixed(2)}x` : '-',
      met,
      cpuOf(outcome.runs)?.toFixed(0) ?? '-',
      bareCpu !== undefined && cpuOf(outcome.runs) ? `${(bareCpu / cpuOf(outcome.runs)!).toFixed(3)}x` : '-',
      String(outcome.runs.reduce((sum, run) => sum + run.total, 0)),
      problem ? 'FAILED' : 'ok',
    ]);
  }
  return table(rows);
}

/** An ingest part: one database, the platform path and its ceiling. */
interface IngestPart {
  name: string;
  database: 'sqlite' | 'mariadb';
  paths: IngestPathResult[];
  skipped?: string;
  /** Written next to the results: what exactly ran. */
  detail?: string;
}

function formatIngestTable(parts: IngestPart[]): string {
  const rows = [['ingest path', 'batches', 'items/s', 'p50 ms', 'p99 ms', 'vs ceiling', 'rows = sent', 'result']];
  for (const part of parts) {
    if (part.skipped) {
      rows.push([`${part.name}: SKIPPED`, '-', '-', '-', '-', '-', '-', 'skipped']);
      continue;
    }
    const ceiling = part.paths.find((path) => path.name.includes('ceiling') && !path.problem)?.measurement?.itemsPerSecond;
    for (const path of part.paths) {
      const m = path.measurement;
      const isCeiling = path.name.includes('ceiling');
      rows.push([
        path.name,
        m ? String(m.batches) : '-',
        m ? m.itemsPerSecond.toFixed(0) : '-',
        m ? m.p50.toFixed(0) : '-',
        m ? m.p99.toFixed(0) : '-',
        m && ceiling ? (isCeiling ? '1.000x' : `${(m.itemsPerSecond / ceiling).toFixed(3)}x`) : '-',
        path.rows === undefined ? '-' : `${path.rows} ${path.rows === path.sent ? '=' : '!='} ${path.sent}`,
        path.problem ? 'FAILED' : 'ok',
      ]);
    }
  }
  return table(rows);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

async function main(): Promise<number> {
  const options = readOptions();
  const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
  const tokenLifetime = 3_600;
  const matches = (name: string) => options.only === undefined || name.includes(options.only);

  const workDir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));

  const provider: BenchProvider = await startProvider();
  cleanups.push(() => provider.close());

  const sqliteFile = join(workDir, 'platform.sqlite');
  const platformEnv: Record<string, string> = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    DATABASE_URL: `sqlite:${sqliteFile}`,
    LOG_LEVEL: 'silent',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    // The ingest part has each device upload back to back, far more often than a workbench does.
    INGEST_RATE_LIMIT_PER_MINUTE: '100000',
  };
  const oidc = { issuer: provider.issuer, clientId: 'bench-client', apiScope: API_SCOPE, audience: AUDIENCE };
  const dpopKey = createDpopKey();

  // What runs: the HTTP scenarios that match (and then the baseline), the ingest parts that match.
  const ingestParts: IngestPart[] = [
    { name: 'ingest sqlite', database: 'sqlite' as const, paths: [] },
    { name: 'ingest mariadb', database: 'mariadb' as const, paths: [] },
  ].filter((part) => matches(part.name));
  const dpopEdKey = createDpopKey('Ed25519');
  const peerDpopKey = createDpopKey();
  const fixturesOf = (partial: Partial<Fixtures>): Fixtures => ({
    host: HOST,
    personToken: '',
    policyDevices: { bearerToken: '', dpopToken: '', dpopKey, proofWindowSeconds: 60, dpopEdToken: '', dpopEdKey },
    cloud: { accessToken: '', organisationId: '' },
    peers: { jwtBearer: '', jwtBearerOtherAudience: '', jwtDpop: '', jwtDpopKey: peerDpopKey, opaque: '', opaqueRevoked: '' },
    ...partial,
  });
  const placeholder = allScenarios(fixturesOf({}));
  const baselineName = placeholder.find((scenario) => scenario.target === 'bare')?.name;
  const httpMatches = (name: string) => options.only === 'http' || matches(name);
  const chosenNames = new Set(placeholder.filter((scenario) => scenario.name !== baselineName && httpMatches(scenario.name)).map((scenario) => scenario.name));
  if (chosenNames.size > 0 && baselineName) chosenNames.add(baselineName);
  const targetsChosen = new Set(placeholder.filter((scenario) => chosenNames.has(scenario.name)).map((scenario) => scenario.target));
  const relayParts = { ceiling: matches('relay ceiling'), single: matches('relay single'), replicas: matches('relay replicas') };
  const anyRelay = relayParts.single || relayParts.replicas;
  // The ceiling runs whenever a relay path does: its ratio is what to read.
  if (anyRelay) relayParts.ceiling = true;
  const svgPart = matches('svg pictures');
  // Event-loop lag under the hostile payloads of issue 23 (event-loop.ts): `--only event loop`.
  const loopPart = matches('event loop');
  // Ingest redaction in this process (redaction.ts): `--only redaction`.
  const redactionPart = matches('ingest redaction');
  // The soak (soak.ts): BENCH_SOAK_SECONDS, or --duration when given, else 60 s; BENCH_SOAK_RATE requests/s (200).
  const soakPart = matches('soak');
  // One worker beside two (WEB_CONCURRENCY, soak.ts): `--only workers`.
  const workersPart = matches('workers');
  // The production shape beside the embedded one (production.ts): `--only production`.
  const productionPart = options.only === 'production';
  // A million expired rows swept under policy reads (sweep.ts): `--only sweep`; BENCH_SWEEP_ROWS (1 000 000).
  const sweepPart = matches('sweep');
  const sweepRows = Number(process.env.BENCH_SWEEP_ROWS ?? 1_000_000);
  // Publish to policy.changed at 1 000 workbenches across two replicas (policy-push.ts): `--only push`.
  const pushPart = matches('push');
  // The audit row's cost on a policy publish (audit-write.ts): `--only "audit write"`.
  const auditPart = matches('audit write');
  const soakSeconds = Number(process.env.BENCH_SOAK_SECONDS ?? (process.argv.some((arg) => arg.startsWith('--duration')) || process.env.BENCH_DURATION ? options.durationSeconds : 60));
  if (chosenNames.size === 0 && ingestParts.length === 0 && !anyRelay && !relayParts.ceiling && !svgPart && !loopPart && !redactionPart && !soakPart && !workersPart && !sweepPart && !pushPart && !auditPart && !productionPart) throw new Error(`--only "${options.only}" matches no scenario, no ingest part, no relay part, not the SVG part, not the event loop, not the redaction part, not the sweep, not the policy push, not the audit write and not the production shape`);
  // The peers answer the platform's own policy document: the platform runs whenever they do.
  const sqliteNeeded = ['platform', 'peer-jwt', 'peer-opaque'].some((target) => targetsChosen.has(target as TargetName)) || ingestParts.some((part) => part.database === 'sqlite');

  let seeded: Seeded | undefined;
  if (sqliteNeeded) {
    seeded = await seedPlatform({ env: platformEnv, host: HOST, oidc, policyDpopJkt: dpopKey.thumbprint, policyDpopEdJkt: dpopEdKey.thumbprint, ingestDevices: options.ingestClients });
  }
  const cloudEnv: Record<string, string> = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'cloud',
    PLATFORM_BASE_URL: 'http://bench.cloud',
    DATABASE_URL: `sqlite:${join(workDir, 'cloud.sqlite')}`,
    LOG_LEVEL: 'silent',
  };
  const cloudSeed = targetsChosen.has('platform-cloud') ? await seedCloud(cloudEnv) : { accessToken: '', organisationId: '' };
  const personToken = await provider.mint({ sub: 'bench-person', audience: AUDIENCE, scope: `openid ${API_SCOPE}`, lifetimeSeconds: tokenLifetime });
  const otherAudience = await provider.mint({ sub: 'bench-person', audience: 'another-api', scope: `openid ${API_SCOPE}`, lifetimeSeconds: tokenLifetime });
  const peerDpopToken = await provider.mint({ sub: 'bench-device', audience: AUDIENCE, scope: API_SCOPE, lifetimeSeconds: tokenLifetime, extra: { cnf: { jkt: peerDpopKey.thumbprint } } });
  const opaque = { token: `opaque_${randomBytes(32).toString('base64url')}`, revoked: `opaque_${randomBytes(32).toString('base64url')}` };
  const list = allScenarios(
    fixturesOf({
      personToken,
      policyDevices: {
        bearerToken: seeded?.policy?.bearerToken ?? '',
        dpopToken: seeded?.policy?.dpopToken ?? '',
        dpopKey,
        proofWindowSeconds: loadConfig(platformEnv).dpop.windowSeconds,
        dpopEdToken: seeded?.policy?.dpopEdToken ?? '',
        dpopEdKey,
      },
      cloud: cloudSeed,
      peers: { jwtBearer: personToken, jwtBearerOtherAudience: otherAudience, jwtDpop: peerDpopToken, jwtDpopKey: peerDpopKey, opaque: opaque.token, opaqueRevoked: opaque.revoked },
    }),
  ).filter((scenario) => chosenNames.has(scenario.name));
  const baselineScenario = list.find((scenario) => scenario.name === baselineName);

  const servers: Partial<Record<TargetName | 'platform (mariadb)', ChildServer>> = {};
  const [bare, platform, cloudPlatform] = await Promise.all([
    list.length
      ? startChild({ name: 'bare express', script: here('./bare-server.js'), env: { NODE_ENV: 'production' }, port: await freePort(), ready: { path: '/' } })
      : undefined,
    sqliteNeeded
      ? startChild({ name: 'platform', script: here('./platform-server.js'), env: platformEnv, port: await freePort(), ready: { path: '/healthz' } })
      : undefined,
    targetsChosen.has('platform-cloud')
      ? startChild({ name: 'platform (cloud)', script: here('./platform-server.js'), env: cloudEnv, port: await freePort(), ready: { path: '/healthz', headers: { Host: 'bench.cloud' } } })
      : undefined,
  ]);
  if (bare) {
    servers.bare = bare;
    cleanups.push(() => bare.stop());
  }
  if (targetsChosen.has('bare-classes')) {
    const child = await startChild({ name: 'bare express (app classes)', script: here('./bare-server.js'), env: { NODE_ENV: 'production', BARE_APP_CLASSES: 'true' }, port: await freePort(), ready: { path: '/' } });
    servers['bare-classes'] = child;
    cleanups.push(() => child.stop());
  }
  if (platform) {
    servers.platform = platform;
    cleanups.push(() => platform.stop());
  }
  if (cloudPlatform) {
    servers['platform-cloud'] = cloudPlatform;
    cleanups.push(() => cloudPlatform.stop());
  }
  // The peers: started once the platform can tell them the policy document they answer.
  if (platform && (targetsChosen.has('peer-jwt') || targetsChosen.has('peer-opaque'))) {
    const answer = await send(`${platform.origin}/policy/v1`, { headers: { Host: HOST, Authorization: `Bearer ${seeded!.policy!.bearerToken}` } });
    if (answer.status !== 200) throw new Error(`the platform's policy answer for the peers was ${answer.status}: ${answer.body.slice(0, 200)}`);
    const policyFile = join(workDir, 'policy.json');
    writeFileSync(policyFile, answer.body);
    const peerEnv = { NODE_ENV: 'production', BENCH_POLICY_FILE: policyFile, BENCH_ISSUER: provider.issuer, BENCH_AUDIENCE: AUDIENCE };
    for (const [target, env, token] of [
      ['peer-jwt', { ...peerEnv, PEER: 'jwt' }, personToken],
      ['peer-opaque', { ...peerEnv, PEER: 'opaque', BENCH_OPAQUE_TOKENS: JSON.stringify([{ token: opaque.token, revoked: false }, { token: opaque.revoked, revoked: true }]) }, opaque.token],
    ] as const) {
      if (!targetsChosen.has(target)) continue;
      const child = await startChild({ name: target, script: here('./peer-server.js'), env, port: await freePort(), ready: { path: '/policy/v1', headers: { Host: HOST, Authorization: `Bearer ${token}` } } });
      servers[target] = child;
      cleanups.push(() => child.stop());
    }
    if (readFileSync(policyFile, 'utf8') !== answer.body) throw new Error('policy file changed');
  }

  const cpu = cpus();
  log(`platform bench: node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model.trim() ?? 'unknown'}), load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  const started = Object.values(servers).map((server) => `${server.name} pid ${server.pid}`);
  log(`load: generated in this process (pid ${process.pid}); servers in child processes (${started.length ? started.join(', ') : 'the MariaDB platform, started for its part'})`);
  if (list.length) log(`HTTP scenarios: ${options.runs} run(s), each ${options.warmupSeconds} s warm-up, then ${options.durationSeconds} s measured, ${options.connections} connections, no pipelining, loopback only`);
  const costs = list.length ? measureCryptoCosts() : undefined;
  if (costs) log(`unavoidable work, node:crypto in this process (median of 5 rounds): ES256 verify ${costs.es256.toFixed(1)} µs, Ed25519 verify ${costs.ed25519.toFixed(1)} µs, SHA-256 of a token ${costs.sha256.toFixed(2)} µs`);
  log('');

  const phase = options.warmupSeconds + options.durationSeconds;
  armWatchdog(options.runs * list.length * (phase + 15) + ingestParts.length * (2 * options.runs * phase + 60) + (anyRelay ? 3 * (phase + 60) : 0) + (svgPart ? 180 : 0) + (loopPart ? 240 : 0) + (redactionPart ? 180 : 0) + (soakPart ? soakSeconds + 240 : 0) + (workersPart ? 4 * phase + 120 : 0) + (productionPart ? options.runs * 6 * (phase + 5) + 180 : 0) + (sweepPart ? sweepRows / 2_000 + 3 * phase + 300 : 0) + (pushPart ? 600 : 0) + (auditPart ? 2 * phase + 120 : 0) + 60);
  const outcomes: Outcome[] = list.map((scenario) => ({ scenario, runs: [] }));
  const notes: string[] = [];
  let baselineRate: number | undefined;
  for (let run = 1; run <= options.runs; run++) {
    if (options.runs > 1) log(`run ${run} of ${options.runs}`);
    for (const outcome of outcomes) {
      const { scenario } = outcome;
      if (outcome.problem) continue;
      const origin = servers[scenario.target]!.origin;
      process.stdout.write(`${scenario.name} ... `);
      let refused: string | undefined;
      if (run === 1) {
        try {
          await scenario.prepare?.(origin);
        } catch (error) {
          refused = `prepare: ${error instanceof Error ? error.message : String(error)}`;
        }
      }
      refused ??= await preflight(scenario, origin);
      if (refused) {
        log('FAILED');
        outcome.problem = refused;
        continue;
      }
      const problems: string[] = [];
      let warmupRate: number | undefined;
      if (options.warmupSeconds > 0) {
        scenario.beforePhase?.({ name: 'warm-up', seconds: options.warmupSeconds, expectedRate: baselineRate });
        const warmup = await load(scenario, origin, { connections: options.connections, durationSeconds: options.warmupSeconds });
        const problem = problemWith(warmup);
        if (problem) problems.push(`warm-up: ${problem}`);
        else warmupRate = warmup.requestsPerSecond;
      }
      scenario.beforePhase?.({ name: 'measurement', seconds: options.durationSeconds, expectedRate: warmupRate ?? baselineRate });
      const measurement = await load(scenario, origin, { connections: options.connections, durationSeconds: options.durationSeconds, serverPid: servers[scenario.target]!.pid });
      const problem = problemWith(measurement);
      if (problem) problems.push(problem);
      log(`${measurement.requestsPerSecond.toFixed(0)} req/s, p50 ${measurement.p50} ms, p99 ${measurement.p99} ms${problems.length ? ' FAILED' : ''}`);
      const note = scenario.note?.();
      if (note) notes.push(`${scenario.name} (run ${run}): ${note}`);
      outcome.runs.push(measurement);
      if (problems.length) outcome.problem = problems.join('; ');
      if (scenario === baselineScenario && !problems.length) baselineRate = measurement.requestsPerSecond;
    }
  }
  for (const outcome of outcomes) {
    if (!outcome.runs.length) continue;
    const rates = outcome.runs.map((run) => run.requestsPerSecond);
    const middle = median(rates);
    outcome.measurement = outcome.runs.reduce((best, run) => (Math.abs(run.requestsPerSecond - middle) < Math.abs(best.requestsPerSecond - middle) ? run : best));
  }
  // The baseline is done with: nothing else should compete for the CPUs.
  await bare?.stop();

  // Ingest: the platform on each database, then the ceiling on the same database.
  const ingestOptions = { warmupSeconds: options.warmupSeconds, durationSeconds: options.durationSeconds, runs: options.runs };
  const ingestShape = `${options.ingestClients} concurrent writers (one device and stream each), ${options.ingestBatch} events per envelope / rows per INSERT, ${options.warmupSeconds} s warm-up + ${options.durationSeconds} s measured, ${options.runs} run(s) of each path (items/s: the median run's)`;
  for (const part of ingestParts) {
    if (part.database === 'sqlite') {
      process.stdout.write(`${part.name}: platform ... `);
      const seed = seeded!;
      const target = { origin: platform!.origin, host: HOST, projectId: seed.projectId, devices: seed.ingest, batch: options.ingestBatch };
      const client = platformWriters(target);
      part.paths.push(await measurePathRuns('sqlite: platform POST /ingest/v1', client.writers, ingestOptions, () => countSqliteRows(sqliteFile, 'ingest_events')));
      client.close();
      log(describeIngest(part.paths.at(-1)!));
      // The platform is idle from here on; stop it so the ceiling has the machine to itself, as the platform had.
      await platform?.stop();
      process.stdout.write(`${part.name}: ceiling ... `);
      createSqliteCeilingTable(sqliteFile);
      const ceiling = sqliteCeilingWriters(sqliteFile, { organisationId: seed.organisationId, projectId: seed.projectId, devices: seed.ingest, batch: options.ingestBatch });
      try {
        part.paths.push(await measurePathRuns('sqlite: ceiling, better-sqlite3 INSERT', ceiling.writers, ingestOptions, () => countSqliteRows(sqliteFile, CEILING_TABLE)));
      } finally {
        ceiling.close();
      }
      log(describeIngest(part.paths.at(-1)!));
      part.detail = `SQLite file in ${workDir} (WAL); ceiling: one prepared ${options.ingestBatch}-row INSERT per batch in autocommit, on one connection in this process (SQLite has one writer at a time)`;
      continue;
    }

    // MariaDB: a fresh database, seeded like the SQLite one, and its own platform child.
    process.stdout.write(`${part.name}: `);
    const made = await createMariadbDatabase(options.mariadb);
    if (!made.database) {
      part.skipped = `MariaDB at ${redactUrl(options.mariadb)} is not reachable (${made.unreachable}); the MariaDB part did not run`;
      log(`SKIPPED: ${part.skipped}`);
      process.stderr.write(`bench: ${part.skipped}\n`);
      continue;
    }
    const database = made.database;
    cleanups.push(() => database.drop());
    const mariadbEnv = { ...platformEnv, DATABASE_URL: database.platformUrl };
    const seed = await seedPlatform({ env: mariadbEnv, host: HOST, oidc, ingestDevices: options.ingestClients });
    await createMysqlCeilingTable(database.url);
    const child = await startChild({ name: 'platform (mariadb)', script: here('./platform-server.js'), env: mariadbEnv, port: await freePort(), ready: { path: '/healthz' } });
    servers['platform (mariadb)'] = child;
    cleanups.push(() => child.stop());
    log(`database ${database.name}, platform pid ${child.pid}`);
    process.stdout.write(`${part.name}: platform ... `);
    const client = platformWriters({ origin: child.origin, host: HOST, projectId: seed.projectId, devices: seed.ingest, batch: options.ingestBatch });
    part.paths.push(await measurePathRuns('mariadb: platform POST /ingest/v1', client.writers, ingestOptions, () => countMysqlRows(database.url, 'ingest_events')));
    client.close();
    log(describeIngest(part.paths.at(-1)!));
    // The platform is idle from here on; stop it so the ceiling has the machine to itself, as the platform had.
    await child.stop();
    process.stdout.write(`${part.name}: ceiling ... `);
    const ceiling = await mysqlCeilingWriters(database.url, { organisationId: seed.organisationId, projectId: seed.projectId, devices: seed.ingest, batch: options.ingestBatch });
    try {
      part.paths.push(await measurePathRuns('mariadb: ceiling, mysql2 INSERT', ceiling.writers, ingestOptions, () => countMysqlRows(database.url, CEILING_TABLE)));
    } finally {
      await ceiling.close();
    }
    log(describeIngest(part.paths.at(-1)!));
    part.detail = `database ${database.name} on ${redactUrl(options.mariadb)} (created for this run, dropped after it); ceiling: one ${options.ingestBatch}-row INSERT per batch in autocommit, one mysql2 connection per writer, into a copy of ingest_events (CREATE TABLE … LIKE, plus its foreign key)`;
  }

  // Relay: MCP round trips through the platform beside a direct WebSocket echo.
  const relayResults: RelayResult[] = anyRelay || relayParts.ceiling
    ? await runRelayBench(
        {
          warmupSeconds: options.warmupSeconds,
          durationSeconds: options.durationSeconds,
          connections: options.connections,
          mariadb: options.mariadb,
          redis: options.redis,
          workDir,
          here,
          cleanups,
          log,
        },
        relayParts,
      )
    : [];

  const push = pushPart ? await runPushBench({ script: here('./platform-server.js'), provider, oidc, mariadb: options.mariadb, redis: options.redis, log, cleanups }) : undefined;
  if (push) {
    log('');
    log(formatPushTable(push));
    if (push.skipped) log(`policy push: SKIPPED: ${push.skipped}`);
  }

  const bareOutcome = outcomes.find((outcome) => outcome.scenario === baselineScenario && !outcome.problem);
  const bareRuns = bareOutcome?.runs ?? [];
  const baseline = bareRuns.length ? median(bareRuns.map((run) => run.requestsPerSecond)) : undefined;
  const ratioByName = new Map(outcomes.map((outcome) => [outcome.scenario.name, outcome.problem ? undefined : ratioOf(outcome, bareRuns)]));
  if (outcomes.length) {
    log('');
    log(formatTable(outcomes, bareRuns, costs));
    log('');
    log(`req/s, p50, p99: medians of ${options.runs} run(s); vs bare = median over the runs of (requests/s of the scenario / requests/s of "${baselineScenario?.name ?? 'none'}" in the same run)`);
    log('p99≤3×p50: the latency target of issue 13 for every HTTP scenario');
    log("CPU µs/req: the server process's CPU time (user + system, /proc) over the measured phase per answered request, median of the runs; CPU vs bare: the bare handler's CPU µs/req over the scenario's, the ratio a server with a core of its own would reach (here the load generator shares the two cores)");
    log('limit = the ratio of an ideal server doing only the bare handler plus the unavoidable work, 1 / (1 + bare req/s × Σ cost µs / 1e6) (limits.ts):');
    for (const outcome of outcomes) {
      const { ops } = outcome.scenario;
      if (ops && costs) log(`  ${outcome.scenario.name}: ${describeOps(ops)} = ${unavoidableMicros(ops, costs).toFixed(1)} µs per request`);
    }
    log('  (a server that caches a verified token skips its signature on a hit: the person-token and Bearer limits bound one that verifies every request)');
    const bornRatio = ratioByName.get(BARE_CLASSES);
    if (bornRatio !== undefined) {
      log(`  the limit takes the bare handler as the floor, but the bare handler itself pays Express changing each request's and response's prototype, which the platform's server does not (src/lifecycle.ts appClasses): the same handler born with the app's prototypes ran at ${bornRatio.toFixed(2)}x bare; measured above 1.00x or above its limit, a scenario did less framework work than the bare handler, not less than its checks`);
    }
    const versus = (service: string, peer: string) => {
      const mine = ratioByName.get(service);
      const theirs = ratioByName.get(peer);
      if (mine === undefined || theirs === undefined) return;
      const value = mine / theirs;
      log(`  ${service} / ${peer}: ${value.toFixed(2)}x (goal ≥ 1.00: ${value >= 1 ? 'met' : 'MISSED'})`);
    };
    if ([PEER_OPAQUE, PEER_JWT_BEARER, PEER_JWT_DPOP].some((name) => ratioByName.get(name) !== undefined)) {
      log('service / peer (requests/s ratio, same runs; each peer first refused a missing, a tampered and a replayed or otherwise invalid credential):');
      versus(BEARER_POLICY, PEER_OPAQUE);
      versus(BEARER_POLICY, PEER_JWT_BEARER);
      versus(DPOP_POLICY, PEER_JWT_DPOP);
    }
    for (const note of notes) log(note);
    log(`OpenID provider served: discovery ${provider.hits.discovery}, JWKS ${provider.hits.jwks}, other ${provider.hits.other}`);
  }
  if (ingestParts.length) {
    log('');
    log(`ingest: ${ingestShape}`);
    log(formatIngestTable(ingestParts));
    log('');
    log('items/s = events stored per second in the measured phase (platform: acknowledged by POST /ingest/v1 with accepted.events = the batch); p50/p99 per batch');
    log('vs ceiling = platform items/s / ceiling rows/s on the same database; rows = sent: COUNT(*) of the table after the run against every item sent, warm-up included');
    for (const part of ingestParts) if (part.detail) log(`${part.name}: ${part.detail}`);
    for (const part of ingestParts) if (part.skipped) log(`${part.name}: SKIPPED: ${part.skipped}`);
  }

  if (relayResults.length) {
    log('');
    log(`relay: ${options.connections} requests in flight (MCP: autocannon connections; ceiling: frames on one socket), ${options.warmupSeconds} s warm-up + ${options.durationSeconds} s measured`);
    log(formatRelayTable(relayResults));
    log('');
    log('vs ceiling = round trips/s through the platform / round trips/s of a bare ws echo in this run; every MCP answer must be the workbench\'s exact response');
    for (const result of relayResults) if (result.skipped) log(`${result.name}: SKIPPED: ${result.skipped}`);
  }

  let svg: SvgBenchResult | undefined;
  if (svgPart) {
    log('');
    log('SVG pictures: the safety pipeline beside DOMPurify + jsdom and the bare parse, in this process, 7 interleaved runs after a warm-up (medians; CPU = user + system time of this process)');
    svg = await measureSvgPipeline();
    log(formatSvgTable(svg));
  }

  let stalls: Stall[] | undefined;
  let loopProblem: string | undefined;
  if (loopPart) {
    log('');
    log(`Event-loop lag under hostile payloads (issue 23): the platform in its own process, LOG_LEVEL info, each payload sent alone while GET /healthz is asked every 10 ms; no stall may reach ${STALL_LIMIT_MS} ms`);
    const loopEnv = { ...platformEnv, DATABASE_URL: `sqlite:${join(workDir, 'event-loop.sqlite')}`, LOG_LEVEL: 'info', RATE_LIMITS_ENABLED: 'false' };
    const seed = await seedPlatform({ env: loopEnv, host: HOST, oidc, ingestDevices: 1, projectOwner: true });
    const child = await startChild({ name: 'platform (event loop)', script: here('./platform-server.js'), env: loopEnv, port: await freePort(), ready: { path: '/healthz' } });
    try {
      const served = { port: Number(new URL(child.origin).port) };
      const target = { host: HOST, token: seed.ingest[0]!.accessToken, projectId: seed.projectId };
      for (let i = 0; i < 20; i++) await sendTo(served.port, HOST, { method: 'GET', path: `/nope?warm=${i}` });
      stalls = [];
      for (const hostile of [...LOG_CASES, ...FIXED_ELSEWHERE, ...generatedLogCases(2)]) stalls.push(await measureStall(served, target, hostile, 1));
      log(formatStallTable(stalls));
      const owned = new Set([...LOG_CASES, ...FIXED_ELSEWHERE].map((hostile) => hostile.name));
      const over = stalls.filter((stall) => owned.has(stall.name) && stall.serverMs >= Math.min(stall.budgetMs, STALL_LIMIT_MS));
      if (over.length) loopProblem = `over budget: ${over.map((stall) => `${stall.name} (${stall.serverMs.toFixed(0)} ms)`).join(', ')}`;
    } finally {
      closeAgents();
      await child.stop();
    }
  }

  let redaction: RedactionBenchRow[] | undefined;
  if (redactionPart) {
    log('');
    log('Ingest redaction: envelopes of the largest size redacted as POST /ingest/v1 does (10 ms slices), in this process, median of 3 runs after a warm-up');
    redaction = await measureRedaction();
    log(formatRedactionTable(redaction));
  }

  const soak = soakPart
    ? await runSoak({
        script: here('./platform-server.js'),
        provider,
        host: HOST,
        oidc,
        mariadb: options.mariadb,
        redis: options.redis,
        seconds: soakSeconds,
        rate: Number(process.env.BENCH_SOAK_RATE ?? 200),
        log,
      })
    : undefined;
  const production = productionPart
    ? await runProductionComparison({
        script: here('./platform-server.js'),
        host: HOST,
        oidc,
        mariadb: options.mariadb,
        redis: options.redis,
        workDir,
        rounds: Math.max(options.runs, 3),
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
        connections: options.connections,
        log,
      })
    : undefined;
  const workers = workersPart
    ? await runWorkerComparison({ script: here('./platform-server.js'), host: HOST, oidc, redis: options.redis, workDir, warmupSeconds: options.warmupSeconds, durationSeconds: options.durationSeconds, connections: options.connections, log })
    : undefined;

  const sweep = sweepPart
    ? await runSweepBench({
        script: here('./platform-server.js'),
        cli: here('../../src/cli/main.js'),
        host: HOST,
        oidc,
        mariadb: options.mariadb,
        rows: sweepRows,
        warmupSeconds: options.warmupSeconds,
        durationSeconds: options.durationSeconds,
        connections: Number(process.env.BENCH_SWEEP_CONNECTIONS ?? 10),
        log,
      })
    : undefined;

  const auditWrite = auditPart ? await runAuditWriteBench({ mariadb: options.mariadb, seconds: options.durationSeconds, log }) : undefined;
  if (auditWrite) for (const line of ['', 'Audit row on a policy publish (the same publish with the trail turned off, interleaved):', ...formatAuditWriteTable(auditWrite)]) log(line);

  if (options.json) {
    writeFileSync(
      options.json,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          node: process.version,
          cpus: cpu.length,
          options,
          costs,
          results: outcomes.map(({ scenario, measurement, runs, problem }) => ({
            name: scenario.name,
            target: scenario.target,
            method: scenario.method,
            path: scenario.path,
            ...measurement,
            runs,
            ratioToBare: ratioByName.get(scenario.name),
            limit: scenario.ops && costs && baseline ? idealRatio(scenario.ops, costs, baseline) : undefined,
            goal: scenario.goal,
            problem,
          })),
          notes,
          relay: relayResults.map(({ servers: _servers, ...result }) => result),
          svg,
          eventLoop: stalls,
          redaction,
          sweep,
          auditWrite,
          push: push && (({ servers: _servers, ...rest }) => rest)(push),
          ingest: ingestParts.map((part) => {
            const ceiling = part.paths.find((path) => path.name.includes('ceiling') && !path.problem)?.measurement?.itemsPerSecond;
            return {
              ...part,
              paths: part.paths.map((path) => ({
                ...path,
                ratioToCeiling: path.measurement && ceiling ? path.measurement.itemsPerSecond / ceiling : undefined,
              })),
              clients: options.ingestClients,
              batch: options.ingestBatch,
            };
          }),
        },
        null,
        2,
      )}\n`,
    );
    log(`results written to ${options.json}`);
  }

  const failed = outcomes.filter((outcome) => outcome.problem);
  for (const { scenario, problem } of failed) process.stderr.write(`bench: FAILED ${scenario.name}: ${problem}\n`);
  const failedIngest = ingestParts.flatMap((part) => part.paths.filter((path) => path.problem));
  for (const { name, problem } of failedIngest) process.stderr.write(`bench: FAILED ${name}: ${problem}\n`);
  const failedRelay = relayResults.filter((result) => result.problem);
  for (const { name, problem } of failedRelay) process.stderr.write(`bench: FAILED ${name}: ${problem}\n`);
  for (const result of failedRelay) for (const server of result.servers ?? []) if (server.stderr().trim()) process.stderr.write(`--- ${server.name} stderr ---\n${server.stderr()}\n`);
  if (svg?.problem) process.stderr.write(`bench: FAILED svg pictures: ${svg.problem}\n`);
  if (loopProblem) process.stderr.write(`bench: FAILED event loop: ${loopProblem}\n`);
  if (production && !production.ok) process.stderr.write(`bench: FAILED production: ${production.rows.map((row) => row.problem).filter(Boolean).join('; ')}\n`);
  if (workers && !workers.ok) process.stderr.write(`bench: FAILED workers: ${workers.runs.map((run) => run.problem).filter(Boolean).join('; ')}\n`);
  if (soak && !soak.ok) process.stderr.write(`bench: FAILED soak: ${soak.errors} errors, live heap growth ${soak.memory.map((m) => (m.liveGrowth === undefined ? 'unknown' : `${(m.liveGrowth * 100).toFixed(1)}%`)).join(', ')}\n`);
  if (sweep && !sweep.ok) process.stderr.write(`bench: ${'skipped' in sweep ? 'SKIPPED' : 'FAILED'} sweep: ${sweep.problem}\n`);
  for (const result of auditWrite ?? []) if (result.problem) process.stderr.write(`bench: FAILED audit write (${result.database}): ${result.problem}\n`);
  if (push?.problem) {
    process.stderr.write(`bench: FAILED policy push: ${push.problem}\n`);
    for (const server of push.servers ?? []) if (server.stderr().trim()) process.stderr.write(`--- ${server.name} stderr ---\n${server.stderr()}\n`);
  }
  if (push?.skipped) process.stderr.write(`bench: policy push SKIPPED: ${push.skipped}\n`);
  const anyFailed =
    (auditWrite ?? []).some((result) => result.problem !== undefined) ||
    push?.problem !== undefined ||
    failed.length > 0 || failedIngest.length > 0 || failedRelay.length > 0 || svg?.problem !== undefined || loopProblem !== undefined || (soak !== undefined && !soak.ok) || (workers !== undefined && !workers.ok) || (production !== undefined && !production.ok) || (sweep !== undefined && !sweep.ok && !('skipped' in sweep));
  for (const server of Object.values(servers)) {
    if (anyFailed && server.stderr().trim()) process.stderr.write(`--- ${server.name} stderr ---\n${server.stderr()}\n`);
  }
  return anyFailed ? 1 : 0;
}

function describeIngest(path: IngestPathResult): string {
  const m = path.measurement;
  const runs = path.runs && path.runs.length > 1 ? ` (runs: ${path.runs.map((value) => value.toFixed(0)).join(', ')})` : '';
  return `${m ? `${m.itemsPerSecond.toFixed(0)} items/s` : 'no measurement'}${runs}${path.problem ? ' FAILED' : ''}`;
}

/** A URL for the report, without its password. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return '(unparseable URL)';
  }
}

// Bounded in time whatever happens: start-up gets two minutes, then the watchdog is re-armed
// with the planned load of the chosen scenarios plus an allowance.
let watchdog: NodeJS.Timeout | undefined;
function armWatchdog(seconds: number): void {
  if (watchdog) clearTimeout(watchdog);
  watchdog = setTimeout(() => {
    process.stderr.write(`bench: FAILED: took longer than its ${Math.round(seconds)} s budget; stopping everything\n`);
    void cleanUp().finally(() => process.exit(1));
  }, seconds * 1_000);
}
armWatchdog(120);

let interrupted = false;
process.on('SIGINT', () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  process.stderr.write('bench: interrupted; stopping servers\n');
  void cleanUp().finally(() => process.exit(130));
});

let code: number;
try {
  code = await main();
} catch (error) {
  process.stderr.write(`bench: FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  code = 1;
} finally {
  await cleanUp();
  if (watchdog) clearTimeout(watchdog);
}
process.exit(code);
