import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import { MembershipEntity, PersonEntity } from '../../src/modules/organisation/entities.js';
import { systemClock } from '../../src/util/clock.js';
import { newId } from '../../src/util/ids.js';
import { enrol, withSeedingPlatform } from './fixtures.js';
import { createMariadbDatabase } from './ingest.js';
import type { BenchProvider } from './oidc-provider.js';
import { freePort, redisProblem, startChild, type ChildServer } from './servers.js';

/**
 * `--only push`: the time from a policy publish to its `policy.changed` message on every
 * connected workbench (docs/api/policy-push.md), across two replicas.
 *
 * Two platform children (src/main.ts) on one MariaDB database made for the run and Redis
 * (`--redis`); BENCH_PUSH_WORKBENCHES (1 000) workbenches, each of a person of its own (as a
 * fleet is), hold their control channels in this process, half at replica A and half at B.
 * An admin publishes the organisation's policy through A BENCH_PUSH_ROUNDS times (20); for each
 * publish and each workbench the time from the moment the PUT left to the moment the message
 * arrived is one sample (A's sockets are told in process, B's through Redis). A workbench that
 * has not heard of a publish within 10 s, or hears of one twice, fails the part.
 */

export interface PushBenchOptions {
  script: string;
  provider: BenchProvider;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  mariadb: string;
  redis: string;
  log: (line: string) => void;
  cleanups: (() => Promise<void> | void)[];
}

export interface PushLatencies {
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

export interface PushBenchResult {
  workbenches: number;
  rounds: number;
  all?: PushLatencies;
  /** Sockets at A, where the publish committed. */
  local?: PushLatencies;
  /** Sockets at B, reached through Redis. */
  remote?: PushLatencies;
  /** The publish request itself (PUT to its answer), p50 and p99. */
  publish?: PushLatencies;
  problem?: string;
  skipped?: string;
  servers?: ChildServer[];
}

const HOST = '127.0.0.1';
const ROLE_CLAIM = 'platform_role';
const WAIT_MS = 10_000;

function latencies(values: number[]): PushLatencies {
  const sorted = [...values].sort((x, y) => x - y);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
  return { samples: sorted.length, p50: at(50), p99: at(99), max: sorted.at(-1) ?? 0 };
}

interface BenchWorkbench {
  socket: WebSocket;
  atA: boolean;
  /** When each publish number's message arrived (performance.now()), and how often. */
  arrived: Map<number, number>;
  duplicates: number;
}

function connectWorkbench(origin: string, accessToken: string, atA: boolean, wake: () => void): Promise<BenchWorkbench> {
  const socket = new WebSocket(`${origin.replace(/^http/, 'ws')}/relay/v1/connect`, { headers: { Authorization: `Bearer ${accessToken}` }, perMessageDeflate: false });
  const workbench: BenchWorkbench = { socket, atA, arrived: new Map(), duplicates: 0 };
  return new Promise((resolve, reject) => {
    socket.on('message', (data) => {
      const at = performance.now();
      const frame = JSON.parse(data.toString()) as { method?: string; params?: { number?: number } };
      if (frame.method === 'hello') {
        resolve(workbench);
        return;
      }
      if (frame.method !== 'policy.changed' || typeof frame.params?.number !== 'number') return;
      if (workbench.arrived.has(frame.params.number)) workbench.duplicates += 1;
      else workbench.arrived.set(frame.params.number, at);
      wake();
    });
    socket.once('unexpected-response', (_req, res) => reject(new Error(`the control channel was refused: ${res.statusCode}`)));
    socket.once('error', reject);
  });
}

export async function runPushBench(options: PushBenchOptions): Promise<PushBenchResult> {
  const count = Number(process.env.BENCH_PUSH_WORKBENCHES ?? 1_000);
  const rounds = Number(process.env.BENCH_PUSH_ROUNDS ?? 20);
  const result: PushBenchResult = { workbenches: count, rounds };
  process.stdout.write(`policy push: ${count} workbenches across two replicas, ${rounds} publishes ... `);
  const redisDown = await redisProblem(options.redis);
  const made = redisDown ? {} : await createMariadbDatabase(options.mariadb);
  if (redisDown || !made.database) {
    result.skipped = redisDown ? `Redis at ${options.redis} is not reachable (${redisDown})` : `MariaDB is not reachable (${made.unreachable})`;
    options.log(`SKIPPED: ${result.skipped}`);
    return result;
  }
  const database = made.database;
  options.cleanups.push(() => database.drop());
  const env = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    LOG_LEVEL: 'silent',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    DATABASE_URL: database.platformUrl,
    REDIS_URL: options.redis,
    SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
  };
  const tokens = await withSeedingPlatform(env, async (platform, dataSource) => {
    const organisation = await platform.services.organisations.create({ name: 'Push bench', kind: 'enterprise', hosts: [HOST], oidc: { ...options.oidc, roleClaim: ROLE_CLAIM } });
    const now = systemClock.now();
    const people = Array.from({ length: count }, (_, index) => ({ id: newId('usr'), name: `Push bench ${index}`, email: `push-${index}@example.test`, createdAt: now }));
    for (let i = 0; i < people.length; i += 200) {
      const slice = people.slice(i, i + 200);
      await dataSource.manager.insert(PersonEntity, slice);
      await dataSource.manager.insert(MembershipEntity, slice.map((person) => ({ organisationId: organisation.id, personId: person.id, role: 'member' as const, createdAt: now })));
    }
    return dataSource.transaction(async (manager) => {
      const access: string[] = [];
      for (const [index, person] of people.entries()) {
        const device = await enrol(manager, platform, { organisationId: organisation.id, personId: person.id, name: `Push bench workbench ${index}`, workspaceId: `ws-push-${index}`, dpopJkt: null });
        access.push(device.accessToken);
      }
      return access;
    });
  });
  const childEnv = { ...env, MIGRATE_ON_START: 'false' };
  const [a, b] = await Promise.all([
    startChild({ name: 'platform replica A (push)', script: options.script, env: childEnv, port: await freePort(), ready: { path: '/readyz' } }),
    startChild({ name: 'platform replica B (push)', script: options.script, env: childEnv, port: await freePort(), ready: { path: '/readyz' } }),
  ]);
  result.servers = [a, b];
  options.cleanups.push(() => a.stop(), () => b.stop());
  const workbenches: BenchWorkbench[] = [];
  let wake: () => void = () => undefined;
  try {
    // Connected fifty at a time, as a fleet coming back after a restart would not all at once.
    for (let i = 0; i < tokens.length; i += 50) {
      workbenches.push(...(await Promise.all(tokens.slice(i, i + 50).map((token, offset) => connectWorkbench((i + offset) % 2 === 0 ? a.origin : b.origin, token, (i + offset) % 2 === 0, () => wake())))));
    }
    const admin = await options.provider.mint({ sub: 'push-admin', audience: options.oidc.audience, scope: `openid ${options.oidc.apiScope}`, lifetimeSeconds: 3_600, extra: { [ROLE_CLAIM]: 'admin' } });
    const headers = { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' };
    // The admin's first request signs them in (the provider's keys, the person made): not measured.
    const first = await fetch(`${a.origin}/policy/v1`, { headers });
    if (first.status !== 200) throw new Error(`the admin's first request answered ${first.status}: ${(await first.text()).slice(0, 200)}`);
    const all: number[] = [];
    const local: number[] = [];
    const remote: number[] = [];
    const publishes: number[] = [];
    for (let round = 1; round <= rounds; round++) {
      const body = JSON.stringify(mergeOverride(DEFAULT_POLICY, { remote: { idleTimeoutMinutes: 10 + round } }));
      const sent = performance.now();
      const res = await fetch(`${a.origin}/policy/v1/organisation`, { method: 'PUT', headers, body });
      publishes.push(performance.now() - sent);
      if (res.status !== 200) throw new Error(`publish ${round} answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
      const { number } = (await res.json()) as { number: number };
      const everyone = () => workbenches.every((workbench) => workbench.arrived.has(number));
      const deadline = sent + WAIT_MS;
      while (!everyone()) {
        const left = deadline - performance.now();
        if (left <= 0) {
          const missing = workbenches.filter((workbench) => !workbench.arrived.has(number)).length;
          throw new Error(`publish ${round}: ${missing} of ${count} workbenches had no message after ${WAIT_MS / 1000} s`);
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      for (const workbench of workbenches) {
        const took = workbench.arrived.get(number)! - sent;
        all.push(took);
        (workbench.atA ? local : remote).push(took);
      }
      // A moment between publishes, as people do not publish back to back.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const duplicates = workbenches.reduce((sum, workbench) => sum + workbench.duplicates, 0);
    if (duplicates) result.problem = `${duplicates} messages arrived twice`;
    Object.assign(result, { all: latencies(all), local: latencies(local), remote: latencies(remote), publish: latencies(publishes) });
    options.log(`p50 ${result.all!.p50.toFixed(1)} ms, p99 ${result.all!.p99.toFixed(1)} ms${result.problem ? ` FAILED: ${result.problem}` : ''}`);
  } catch (error) {
    result.problem = (error as Error).message;
    options.log(`FAILED: ${result.problem}`);
  } finally {
    for (const workbench of workbenches) workbench.socket.terminate();
    await Promise.all([a.stop(), b.stop()]);
    await database.drop();
  }
  return result;
}

/** The table of the push part: ms from the publish leaving to the message arriving. */
export function formatPushTable(result: PushBenchResult): string {
  const rows = [['policy push: publish → policy.changed', 'samples', 'p50 ms', 'p99 ms', 'max ms']];
  const row = (name: string, value: PushLatencies | undefined) => rows.push([name, String(value?.samples ?? '-'), value ? value.p50.toFixed(1) : '-', value ? value.p99.toFixed(1) : '-', value ? value.max.toFixed(1) : '-']);
  row(`all ${result.workbenches} workbenches`, result.all);
  row('  at A (where the publish committed)', result.local);
  row('  at B (through Redis)', result.remote);
  row('the publish request itself', result.publish);
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((r) => r[column]!.length)));
  const line = (r: string[]) => r.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
