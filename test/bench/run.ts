/**
 * `npm run bench`: throughput and latency of the platform next to a bare Express handler.
 *
 * Layout (chosen for honest numbers on a small machine): each server under test runs in its own
 * child process; this process only generates load (autocannon) and serves the loopback OpenID
 * provider, which the platform asks once (discovery + JWKS) and then caches. Scenarios run one
 * after another, so at any moment one server process and one load generator share the CPUs.
 *
 * Options (flags, or the BENCH_* environment variables):
 *   --duration <s>      measured seconds per scenario        (BENCH_DURATION, default 10)
 *   --warmup <s>        unmeasured seconds before each       (BENCH_WARMUP, default 3)
 *   --connections <n>   concurrent connections                (BENCH_CONNECTIONS, default 50)
 *   --only <text>       only scenarios whose name contains text (the baseline always runs)
 *   --json <file>       also write the results as JSON
 *
 * Exits non-zero when any scenario saw a non-2xx answer or a connection error, so a broken path
 * never passes for a fast one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { systemClock } from '../../src/util/clock.js';
import { load, problemWith, stopLoad, type Measurement } from './measure.js';
import { startProvider, type BenchProvider } from './oidc-provider.js';
import { scenarios as allScenarios, type Scenario, type TargetName } from './scenarios.js';
import { freePort, killAllChildren, send, startChild, type ChildServer } from './servers.js';

const HOST = 'bench.local';
const AUDIENCE = 'platform-bench';
const API_SCOPE = 'platform.api';

interface Options {
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  only: string | undefined;
  json: string | undefined;
}

function readOptions(): Options {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      only: { type: 'string' },
      json: { type: 'string' },
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
    only: values.only,
    json: values.json,
  };
}

interface Outcome {
  scenario: Scenario;
  measurement?: Measurement;
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

async function prepareDatabase(env: Record<string, string>, issuer: string): Promise<void> {
  const config = loadConfig(env);
  const dataSource = createDataSource(config.database);
  await dataSource.initialize();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
    const { services } = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
    await services.organisations.create({
      name: 'Bench organisation',
      kind: 'enterprise',
      hosts: [HOST],
      oidc: { issuer, clientId: 'bench-client', apiScope: API_SCOPE, audience: AUDIENCE },
    });
  } finally {
    await dataSource.destroy();
  }
}

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

function formatTable(outcomes: Outcome[], baseline: number | undefined): string {
  const rows = [['scenario', 'req/s', 'p50 ms', 'p99 ms', 'vs bare', 'answers', 'result']];
  for (const { scenario, measurement, problem } of outcomes) {
    if (!measurement) {
      rows.push([scenario.name, '-', '-', '-', '-', '-', 'FAILED']);
      continue;
    }
    rows.push([
      scenario.name,
      measurement.requestsPerSecond.toFixed(0),
      measurement.p50.toFixed(0),
      measurement.p99.toFixed(0),
      baseline ? `${(measurement.requestsPerSecond / baseline).toFixed(3)}x` : '-',
      String(measurement.total),
      problem ? 'FAILED' : 'ok',
    ]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

async function main(): Promise<number> {
  const options = readOptions();
  const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
  const tokenLifetime = 3_600;

  const workDir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
  cleanups.push(() => rmSync(workDir, { recursive: true, force: true }));

  const provider: BenchProvider = await startProvider();
  cleanups.push(() => provider.close());

  const platformEnv = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    DATABASE_URL: `sqlite:${join(workDir, 'platform.sqlite')}`,
    LOG_LEVEL: 'silent',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
  };
  await prepareDatabase(platformEnv, provider.issuer);
  const personToken = await provider.mint({ sub: 'bench-person', audience: AUDIENCE, scope: `openid ${API_SCOPE}`, lifetimeSeconds: tokenLifetime });

  let list = allScenarios({ host: HOST, personToken });
  const baselineScenario = list.find((scenario) => scenario.target === 'bare');
  if (options.only) list = list.filter((scenario) => scenario === baselineScenario || scenario.name.includes(options.only!));

  const [bare, platform] = await Promise.all([
    startChild({ name: 'bare express', script: here('./bare-server.js'), env: { NODE_ENV: 'production' }, port: await freePort(), ready: { path: '/' } }),
    startChild({ name: 'platform', script: here('./platform-server.js'), env: platformEnv, port: await freePort(), ready: { path: '/healthz' } }),
  ]);
  const servers: Record<TargetName, ChildServer> = { bare, platform };
  cleanups.push(() => bare.stop(), () => platform.stop());

  const cpu = cpus();
  log(`platform bench: node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model.trim() ?? 'unknown'}), load average ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
  log(`load: autocannon in this process (pid ${process.pid}); servers in child processes (bare pid ${bare.pid}, platform pid ${platform.pid})`);
  log(`each scenario: ${options.warmupSeconds} s warm-up, then ${options.durationSeconds} s measured, ${options.connections} connections, no pipelining, loopback only`);
  log('');

  armWatchdog(list.length * (options.warmupSeconds + options.durationSeconds + 15) + 60);
  const outcomes: Outcome[] = [];
  for (const scenario of list) {
    const origin = servers[scenario.target].origin;
    process.stdout.write(`${scenario.name} ... `);
    if (scenario.prepare) await scenario.prepare(origin);
    const refused = await preflight(scenario, origin);
    if (refused) {
      log('FAILED');
      outcomes.push({ scenario, problem: refused });
      continue;
    }
    const problems: string[] = [];
    if (options.warmupSeconds > 0) {
      const warmup = await load(scenario, origin, { connections: options.connections, durationSeconds: options.warmupSeconds });
      const problem = problemWith(warmup);
      if (problem) problems.push(`warm-up: ${problem}`);
    }
    const measurement = await load(scenario, origin, { connections: options.connections, durationSeconds: options.durationSeconds });
    const problem = problemWith(measurement);
    if (problem) problems.push(problem);
    log(`${measurement.requestsPerSecond.toFixed(0)} req/s${problems.length ? ' FAILED' : ''}`);
    outcomes.push({ scenario, measurement, ...(problems.length ? { problem: problems.join('; ') } : {}) });
  }

  const baseline = outcomes.find((outcome) => outcome.scenario === baselineScenario && !outcome.problem)?.measurement?.requestsPerSecond;
  log('');
  log(formatTable(outcomes, baseline));
  log('');
  log(`vs bare = requests/s of the scenario / requests/s of "${baselineScenario?.name ?? 'none'}" in this run`);
  log(`OpenID provider served: discovery ${provider.hits.discovery}, JWKS ${provider.hits.jwks}, other ${provider.hits.other}`);

  if (options.json) {
    writeFileSync(
      options.json,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          node: process.version,
          cpus: cpu.length,
          options,
          results: outcomes.map(({ scenario, measurement, problem }) => ({
            name: scenario.name,
            target: scenario.target,
            method: scenario.method,
            path: scenario.path,
            ...measurement,
            ratioToBare: measurement && baseline ? measurement.requestsPerSecond / baseline : undefined,
            problem,
          })),
        },
        null,
        2,
      )}\n`,
    );
    log(`results written to ${options.json}`);
  }

  const failed = outcomes.filter((outcome) => outcome.problem);
  for (const { scenario, problem } of failed) process.stderr.write(`bench: FAILED ${scenario.name}: ${problem}\n`);
  for (const server of Object.values(servers)) {
    if (failed.length && server.stderr().trim()) process.stderr.write(`--- ${server.name} stderr ---\n${server.stderr()}\n`);
  }
  return failed.length ? 1 : 0;
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
