import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { WebSocket } from 'ws';
import { MembershipEntity, PersonEntity } from '../../src/modules/organisation/entities.js';
import { systemClock } from '../../src/util/clock.js';
import { newId } from '../../src/util/ids.js';
import { enrol, withSeedingPlatform } from './fixtures.js';
import { createMariadbDatabase } from './ingest.js';
import { freePort, redisProblem, startChild, type ChildServer } from './servers.js';

/**
 * The relay part of `npm run bench`: MCP `tools/call` round trips through the platform, from a
 * cloud agent's HTTP request to the workbench's control channel and back, next to the ceiling
 * measured in the same run.
 *
 * - ceiling: a bare `ws` echo server (ws-echo-server.ts); this process keeps `connections`
 *   frames the size of a relayed call in flight on one socket, as the platform does on a
 *   workbench's socket, and times each round trip.
 * - single process: one platform child (SQLite, no Redis: calls stay in the process); the
 *   workbench (bench-workbench.ts, a child of its own) holds its channel there; autocannon posts
 *   `tools/call` to the run's MCP endpoint with `connections` connections.
 * - two replicas: two platform children on one MariaDB database (made for the run, dropped after)
 *   and Redis (`--redis`); the workbench holds its channel at the first, the load goes to the
 *   second, so every call travels through Redis pub/sub and back. Skipped, and said so, when
 *   MariaDB or Redis cannot be reached.
 * Every answer must be exactly the workbench's response (autocannon `expectBody`), so a relay
 * that answers -32000 cannot pass for a fast one. The rate limit stays on (raised out of reach),
 * so its counter is part of what is measured.
 */

export interface RelayBenchOptions {
  warmupSeconds: number;
  durationSeconds: number;
  connections: number;
  mariadb: string;
  redis: string;
  workDir: string;
  here: (file: string) => string;
  cleanups: (() => Promise<void> | void)[];
  log: (line: string) => void;
}

export interface RoundTrips {
  roundTripsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
}

export interface RelayResult {
  name: string;
  measurement?: RoundTrips;
  problem?: string;
  skipped?: string;
  /** Child processes whose stderr helps when something failed. */
  servers?: ChildServer[];
}

const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });
const ANSWER = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } });

interface SeededRelay {
  accessToken: string;
  projectId: string;
}

/** One organisation served at 127.0.0.1, a person, a project and a workbench, written straight into the database. */
async function seed(env: Record<string, string>): Promise<SeededRelay> {
  return withSeedingPlatform(env, async (platform, dataSource) => {
    const organisation = await platform.services.organisations.create({ name: 'Relay bench', kind: 'enterprise', hosts: ['127.0.0.1'] });
    const person = { id: newId('usr'), name: 'Bench person', email: 'relay-bench@example.test', createdAt: systemClock.now() };
    await dataSource.manager.insert(PersonEntity, person);
    await dataSource.manager.insert(MembershipEntity, { organisationId: organisation.id, personId: person.id, role: 'member', createdAt: systemClock.now() });
    const project = await platform.services.projects.create(organisation.id, { name: 'Relay bench', owner: person.id });
    const device = await dataSource.transaction((manager) =>
      enrol(manager, platform, { organisationId: organisation.id, personId: person.id, name: 'Relay bench workbench', workspaceId: 'ws-relay-bench', dpopJkt: null }),
    );
    return { accessToken: device.accessToken, projectId: project.id };
  });
}

async function registerRun(origin: string, seeded: SeededRelay): Promise<{ url: string; token: string }> {
  const res = await fetch(`${origin}/cloud-agents/v1/runs`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${seeded.accessToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ provider: 'bench', projectId: seeded.projectId, workspaceId: 'ws-relay-bench', tools: ['echo'] }),
  });
  if (res.status !== 201) throw new Error(`registering the run answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { mcp: { url: string; token: string } }).mcp;
}

/** The workbench child: resolves once its channel is open. */
async function startWorkbench(options: RelayBenchOptions, relayUrl: string, accessToken: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [options.here('./bench-workbench.js')], {
    env: { PATH: process.env.PATH ?? '', RELAY_URL: relayUrl, ACCESS_TOKEN: accessToken },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  options.cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the bench workbench did not connect in time: ${stderr}`)), 10_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the bench workbench exited (${code}): ${stderr}`));
    });
  });
  return child;
}

function stopWorkbench(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 3_000).unref();
  });
}

/** autocannon posting tools/call; any answer but the workbench's exact response is a failure. */
async function mcpLoad(url: string, token: string, connections: number, seconds: number): Promise<{ measurement: RoundTrips; problem?: string }> {
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url,
        method: 'POST',
        connections,
        pipelining: 1,
        duration: seconds,
        timeout: 10,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: CALL,
        expectBody: ANSWER,
      },
      (error, done) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done)),
    );
  });
  const problems: string[] = [];
  if (result.requests.total === 0) problems.push('no answers at all');
  if (result.non2xx) problems.push(`${result.non2xx} non-2xx answers`);
  if (result.errors) problems.push(`${result.errors} connection errors`);
  if (result.timeouts) problems.push(`${result.timeouts} timeouts`);
  if (result.mismatches) problems.push(`${result.mismatches} answers that were not the workbench's response`);
  return {
    measurement: { roundTripsPerSecond: result.requests.total / Math.max(result.duration, 1e-9), p50: result.latency.p50, p99: result.latency.p99, total: result.requests.total },
    ...(problems.length ? { problem: problems.join(', ') } : {}),
  };
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `inFlight` frames the size of a relayed call kept going on one socket; each round trip timed. */
async function echoLoad(url: string, inFlight: number, seconds: number): Promise<RoundTrips> {
  const socket = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const assertion = randomBytes(400).toString('base64url');
  const waiting = new Map<string, () => void>();
  socket.on('message', (data) => {
    const { id } = JSON.parse(data.toString()) as { id: string };
    waiting.get(id)?.();
  });
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  let next = 0;
  const loop = async () => {
    while (Date.now() < end) {
      const id = String(next++);
      const started = process.hrtime.bigint();
      await new Promise<void>((resolve) => {
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'cloudMcp.call', params: { runId: 'run_bench', assertion, message: JSON.parse(CALL) as unknown } }));
      });
      waiting.delete(id);
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: inFlight }, loop));
  const elapsed = (Date.now() - started) / 1000;
  socket.close();
  latencies.sort((x, y) => x - y);
  return { roundTripsPerSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), total: latencies.length };
}

export async function runRelayBench(options: RelayBenchOptions, which: { ceiling: boolean; single: boolean; replicas: boolean }): Promise<RelayResult[]> {
  const results: RelayResult[] = [];
  const phase = async (measure: (seconds: number) => Promise<{ measurement: RoundTrips; problem?: string }>) => {
    if (options.warmupSeconds > 0) {
      const warmup = await measure(options.warmupSeconds);
      if (warmup.problem) return { measurement: warmup.measurement, problem: `warm-up: ${warmup.problem}` };
    }
    return measure(options.durationSeconds);
  };

  if (which.ceiling) {
    process.stdout.write('relay ceiling: ws echo ... ');
    const echo = await startChild({ name: 'ws echo', script: options.here('./ws-echo-server.js'), env: { NODE_ENV: 'production' }, port: await freePort(), ready: { path: '/' } });
    options.cleanups.push(() => echo.stop());
    try {
      const { measurement } = await phase(async (seconds) => ({ measurement: await echoLoad(echo.origin.replace(/^http/, 'ws'), options.connections, seconds) }));
      results.push({ name: 'ws echo (ceiling)', measurement, servers: [echo] });
      options.log(`${measurement.roundTripsPerSecond.toFixed(0)} round trips/s`);
    } catch (error) {
      results.push({ name: 'ws echo (ceiling)', problem: (error as Error).message, servers: [echo] });
      options.log('FAILED');
    } finally {
      await echo.stop();
    }
  }

  const base = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    LOG_LEVEL: 'silent',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    MCP_REQUESTS_PER_MINUTE: '10000000',
    RELAY_CALL_TIMEOUT_MS: '10000',
  };

  if (which.single) {
    process.stdout.write('relay single process: platform ... ');
    const env = { ...base, DATABASE_URL: `sqlite:${join(options.workDir, 'relay.sqlite')}` };
    const seeded = await seed(env);
    const platform = await startChild({ name: 'platform (relay)', script: options.here('./platform-server.js'), env, port: await freePort(), ready: { path: '/readyz' } });
    options.cleanups.push(() => platform.stop());
    try {
      const workbench = await startWorkbench(options, `${platform.origin.replace(/^http/, 'ws')}/relay/v1/connect`, seeded.accessToken);
      const mcp = await registerRun(platform.origin, seeded);
      const outcome = await phase((seconds) => mcpLoad(mcp.url, mcp.token, options.connections, seconds));
      results.push({ name: 'platform, one process', ...outcome, servers: [platform] });
      options.log(`${outcome.measurement.roundTripsPerSecond.toFixed(0)} round trips/s${outcome.problem ? ' FAILED' : ''}`);
      await stopWorkbench(workbench);
    } catch (error) {
      results.push({ name: 'platform, one process', problem: (error as Error).message, servers: [platform] });
      options.log('FAILED');
    } finally {
      await platform.stop();
    }
  }

  if (which.replicas) {
    process.stdout.write('relay two replicas: ');
    const name = 'platform, two replicas (Redis)';
    const redisDown = await redisProblem(options.redis);
    const made = redisDown ? {} : await createMariadbDatabase(options.mariadb);
    if (redisDown || !made.database) {
      const skipped = redisDown ? `Redis at ${options.redis} is not reachable (${redisDown})` : `MariaDB is not reachable (${made.unreachable})`;
      results.push({ name, skipped });
      options.log(`SKIPPED: ${skipped}`);
      process.stderr.write(`bench: ${name} SKIPPED: ${skipped}\n`);
      return results;
    }
    const database = made.database;
    options.cleanups.push(() => database.drop());
    const env = { ...base, DATABASE_URL: database.platformUrl, REDIS_URL: options.redis, SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url') };
    const seeded = await seed(env);
    const envNoMigrations = { ...env, MIGRATE_ON_START: 'false' };
    const [first, second] = await Promise.all([
      startChild({ name: 'platform replica A', script: options.here('./platform-server.js'), env: envNoMigrations, port: await freePort(), ready: { path: '/readyz' } }),
      startChild({ name: 'platform replica B', script: options.here('./platform-server.js'), env: envNoMigrations, port: await freePort(), ready: { path: '/readyz' } }),
    ]);
    options.cleanups.push(() => first.stop(), () => second.stop());
    process.stdout.write(`database ${database.name}, workbench at A, load at B ... `);
    try {
      const workbench = await startWorkbench(options, `${first.origin.replace(/^http/, 'ws')}/relay/v1/connect`, seeded.accessToken);
      const mcp = await registerRun(second.origin, seeded);
      const outcome = await phase((seconds) => mcpLoad(mcp.url, mcp.token, options.connections, seconds));
      results.push({ name, ...outcome, servers: [first, second] });
      options.log(`${outcome.measurement.roundTripsPerSecond.toFixed(0)} round trips/s${outcome.problem ? ' FAILED' : ''}`);
      await stopWorkbench(workbench);
    } catch (error) {
      results.push({ name, problem: (error as Error).message, servers: [first, second] });
      options.log('FAILED');
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      await database.drop();
    }
  }
  return results;
}

/** The table of the relay part: round trips/s, p50/p99 (ms) and the ratio to the echo ceiling. */
export function formatRelayTable(results: RelayResult[]): string {
  const ceiling = results.find((result) => result.name === 'ws echo (ceiling)' && !result.problem)?.measurement?.roundTripsPerSecond;
  const rows = [['relay: MCP tools/call round trips', 'round trips/s', 'p50 ms', 'p99 ms', 'vs ceiling', 'status']];
  for (const result of results) {
    const m = result.measurement;
    rows.push([
      result.name,
      m ? m.roundTripsPerSecond.toFixed(0) : '-',
      m ? m.p50.toFixed(2) : '-',
      m ? m.p99.toFixed(2) : '-',
      m && ceiling ? `${(m.roundTripsPerSecond / ceiling).toFixed(3)}x` : '-',
      result.skipped ? 'SKIPPED' : result.problem ? 'FAILED' : 'ok',
    ]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
