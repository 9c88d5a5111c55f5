import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createDpopKey } from './dpop.js';
import { seedPlatform, type IngestDevice } from './fixtures.js';
import { createMariadbDatabase } from './ingest.js';
import { load, problemWith, type Measurement } from './measure.js';
import type { BenchProvider } from './oidc-provider.js';
import { scenarios as allScenarios } from './scenarios.js';
import { freePort, startChild, type ChildServer } from './servers.js';

/**
 * The soak (`npm run bench -- --only soak`): two replicas of the real service (platform-server.js,
 * src/main.ts) sharing a fresh MariaDB database and Redis, driven at a fixed rate (open loop: a
 * request is sent when its time comes, whether or not the earlier ones were answered) with a mix
 * of policy reads (Bearer and DPoP device tokens), organisation reads (person token) and ingest
 * envelopes, spread over both replicas. Prints the achieved rate, the errors (any answer other than
 * 2xx, or none; must be 0), p50 and p99, and per replica: the resident memory (VmRSS) at the
 * start, after warm-up, half-way and at the end, its V8 heap (used/total, from its /metrics) at
 * the same points, the entries of its bounded caches (`platform_cache_entries`), and its live heap
 * after a full collection right after warm-up and at the end (asked over the child's IPC channel,
 * platform-server.ts). The live heap must not grow by more than 10% after warm-up: that is what a
 * leak makes grow. Resident memory also counts garbage V8 has not collected yet (it defers major
 * collections while the heap is far below its limit), so its growth is printed beside it.
 */

export interface SoakOptions {
  /** The compiled platform-server.js. */
  script: string;
  provider: BenchProvider;
  host: string;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  mariadb: string;
  redis: string;
  seconds: number;
  /** Requests a second, over both replicas. */
  rate: number;
  log: (line: string) => void;
}

export interface SoakResult {
  ok: boolean;
  sent: number;
  errors: number;
  achievedRate: number;
  p50Ms: number;
  p99Ms: number;
  memory: {
    name: string;
    pid: number;
    startKb: number;
    warmKb: number;
    midKb: number;
    endKb: number;
    samples: number[];
    /** Resident memory, median of the last stretch against the stretch right after warm-up. */
    growth: number;
    heap: string[];
    caches: string[];
    /** Live heap after a full collection, bytes: right after warm-up and at the end. */
    liveWarm: number | undefined;
    liveEnd: number | undefined;
    /** The live heap's growth after warm-up (the leak bound); undefined when it could not be read. */
    liveGrowth: number | undefined;
  }[];
}

type Kind = 'policy (Bearer)' | 'policy (DPoP)' | 'organisation (person)' | 'ingest';
/** The mix, out of 10 requests. */
const MIX: Kind[] = ['policy (Bearer)', 'policy (Bearer)', 'policy (Bearer)', 'policy (DPoP)', 'policy (DPoP)', 'organisation (person)', 'organisation (person)', 'organisation (person)', 'ingest', 'ingest'];
const MAX_GROWTH = 0.1;

/** Resident memory of a process, kB (Linux /proc). */
export function residentKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]);
}

/**
 * The V8 heap of a replica as its own `/metrics` reports it (prom-client's process metrics,
 * `nodejs_heap_size_used_bytes` and `…_total_bytes`), MB: what separates a leak (used grows) from
 * V8 sizing its heap up under load (total grows, used does not).
 */
async function heapOf(origin: string): Promise<{ usedMb: number; totalMb: number; caches: string } | undefined> {
  try {
    const text = await (await fetch(`${origin}/metrics`)).text();
    const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / 1024 / 1024;
    const caches = [...text.matchAll(/^platform_cache_entries\{cache="(\w+)"\} (\S+)$/gm)].map(([, name, entries]) => `${name} ${entries}`).join(', ');
    return { usedMb: read('nodejs_heap_size_used_bytes'), totalMb: read('nodejs_heap_size_total_bytes'), caches };
  } catch {
    return undefined;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const { log } = options;
  const made = await createMariadbDatabase(options.mariadb);
  if (!made.database) throw new Error(`the soak needs MariaDB at ${options.mariadb}: ${made.unreachable}`);
  const database = made.database;
  const replicas: ChildServer[] = [];
  const agents: Agent[] = [];
  try {
    const env: Record<string, string> = {
      NODE_ENV: 'production',
      PLATFORM_DEPLOYMENT: 'self-hosted',
      DATABASE_URL: database.platformUrl,
      REDIS_URL: options.redis,
      SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
      LOG_LEVEL: 'silent',
      OIDC_ALLOW_HTTP_LOOPBACK: 'true',
      PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
      // The soak measures steady work, not the limiter: the rate is fixed by the driver.
      RATE_LIMITS_ENABLED: 'false',
    };
    const dpopKey = createDpopKey();
    const ingestDevices = 8;
    const seeded = await seedPlatform({ env, host: options.host, oidc: options.oidc, policyDpopJkt: dpopKey.thumbprint, ingestDevices });
    const personToken = await options.provider.mint({ sub: 'soak-person', audience: options.oidc.audience, scope: `openid ${options.oidc.apiScope}`, lifetimeSeconds: options.seconds + 600 });
    for (const name of ['replica a', 'replica b']) {
      // One at a time: the first applies the migrations (none pending: seeding did), the second finds none.
      replicas.push(await startChild({ name, script: options.script, env, port: await freePort(), ready: { path: '/readyz' }, timeoutMs: 60_000 }));
    }

    const ingest = seeded.ingest.map((device: IngestDevice, stream) => ({ device, stream, next: 0, busy: false }));
    const send = (replica: ChildServer, agent: Agent, kind: Kind): Promise<number | string> => {
      const headers: Record<string, string> = { Host: options.host };
      let method = 'GET';
      let path = '/policy/v1';
      let body: string | undefined;
      let release: (() => void) | undefined;
      switch (kind) {
        case 'policy (Bearer)':
          headers.Authorization = `Bearer ${seeded.policy!.bearerToken}`;
          break;
        case 'policy (DPoP)':
          headers.Authorization = `DPoP ${seeded.policy!.dpopToken}`;
          headers.DPoP = dpopKey.proof({ method: 'GET', url: `http://${options.host}/policy/v1`, accessToken: seeded.policy!.dpopToken });
          break;
        case 'organisation (person)':
          path = '/platform/v1/organisation';
          headers.Authorization = `Bearer ${personToken}`;
          break;
        case 'ingest': {
          // One envelope in flight per stream, in order; a stream that is busy passes its turn to the next.
          const stream = ingest.find((candidate) => !candidate.busy);
          if (!stream) return send(replica, agent, 'policy (Bearer)');
          stream.busy = true;
          const first = stream.next;
          stream.next += 10;
          release = () => {
            stream.busy = false;
          };
          method = 'POST';
          path = '/ingest/v1';
          headers.Authorization = `Bearer ${stream.device.accessToken}`;
          headers['Content-Type'] = 'application/json';
          body = JSON.stringify({
            schemaVersion: 1,
            projectId: seeded.projectId,
            workspaceId: stream.device.workspaceId,
            sentAt: new Date().toISOString(),
            cursors: { events: first - 1 },
            events: Array.from({ length: 10 }, (_, i) => ({
              seq: first + i,
              id: `soak-${stream.stream}-${first + i}`,
              at: new Date().toISOString(),
              kind: 'tool.called',
              data: { tool: 'read_file', n: first + i },
            })),
            usage: [],
            audit: [],
            tasks: [],
          });
          break;
        }
      }
      return new Promise<number | string>((resolve) => {
        const req = request(`${replica.origin}${path}`, { method, headers, agent }, (res) => {
          res.resume();
          res.on('end', () => {
            release?.();
            resolve(res.statusCode ?? 0);
          });
        });
        req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
        req.on('error', (error: Error & { code?: string }) => {
          release?.();
          resolve(error.code ?? error.message);
        });
        req.end(body);
      });
    };
    // Idle sockets are dropped after 4 s, before the server's keep-alive timeout (5 s) closes them:
    // otherwise a request sent on a socket the server is closing at that moment is reset.
    for (const _ of replicas) agents.push(new Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 }));

    const memory = replicas.map((replica) => ({ name: replica.name, pid: replica.pid, startKb: residentKb(replica.pid), warmKb: 0, midKb: 0, endKb: 0, samples: [] as number[], growth: 0, heap: [] as string[], caches: [] as string[], liveWarm: undefined as number | undefined, liveEnd: undefined as number | undefined, liveGrowth: undefined as number | undefined }));
    const heapReading = async (label: string) => {
      await Promise.all(
        replicas.map(async (replica, index) => {
          const heap = await heapOf(replica.origin);
          memory[index]!.heap.push(`${label} ${heap ? `${heap.usedMb.toFixed(1)}/${heap.totalMb.toFixed(1)}` : '?'}`);
          memory[index]!.caches.push(`${label}: ${heap?.caches || '?'}`);
        }),
      );
    };
    await heapReading('start');
    const warmupSeconds = Math.max(1, Math.round(options.seconds / 6));
    log(`soak: ${options.seconds} s at ${options.rate} requests/s over ${replicas.length} replicas (MariaDB ${database.name}, Redis ${options.redis}), mix per 10: 3 policy Bearer, 2 policy DPoP, 3 organisation (person token), 2 ingest (10 events each); warm-up ${warmupSeconds} s`);
    const latencies: number[] = [];
    const failures = new Map<string, number>();
    const inFlight = new Set<Promise<void>>();
    const started = performance.now();
    const durationMs = options.seconds * 1000;
    let sent = 0;
    let warmSampled = false;
    let midSampled = false;
    // One resident-memory sample a second per replica: the garbage collector's saw-tooth makes
    // single readings noisy, so growth compares medians (see below).
    let nextSample = 0;
    while (performance.now() - started < durationMs) {
      const elapsed = performance.now() - started;
      if (elapsed >= nextSample) {
        nextSample += 1000;
        memory.forEach((entry) => entry.samples.push(residentKb(entry.pid)));
      }
      if (!warmSampled && elapsed >= warmupSeconds * 1000) {
        warmSampled = true;
        memory.forEach((entry) => (entry.warmKb = residentKb(entry.pid)));
        void heapReading('after warm-up');
        // A full collection in each replica (a pause of a few ms; the answers wait for it).
        void Promise.all(replicas.map((replica) => replica.liveHeap())).then((bytes) => bytes.forEach((value, index) => (memory[index]!.liveWarm = value)));
      }
      if (!midSampled && elapsed >= durationMs / 2) {
        midSampled = true;
        memory.forEach((entry) => (entry.midKb = residentKb(entry.pid)));
        void heapReading('half-way');
      }
      const due = Math.floor((elapsed / 1000) * options.rate);
      while (sent < due) {
        const index = sent;
        sent += 1;
        const kind = MIX[index % MIX.length]!;
        const replica = index % replicas.length;
        const at = performance.now();
        const work = send(replicas[replica]!, agents[replica]!, kind).then((status) => {
          latencies.push(performance.now() - at);
          if (typeof status !== 'number' || status < 200 || status > 299) {
            const key = `${kind} ${typeof status === 'number' ? status : `no answer (${status})`}`;
            failures.set(key, (failures.get(key) ?? 0) + 1);
          }
        });
        inFlight.add(work);
        void work.finally(() => inFlight.delete(work));
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const elapsedSeconds = (performance.now() - started) / 1000;
    await Promise.all(inFlight);
    await heapReading('end');
    (await Promise.all(replicas.map((replica) => replica.liveHeap()))).forEach((value, index) => (memory[index]!.liveEnd = value));
    // Growth after warm-up: the median of the last warm-up-long stretch of samples against the
    // median of the stretch right after the warm-up.
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    memory.forEach((entry) => {
      entry.endKb = residentKb(entry.pid);
      const early = median(entry.samples.slice(warmupSeconds, 2 * warmupSeconds));
      const late = median(entry.samples.slice(-warmupSeconds));
      entry.growth = early ? (late - early) / early : 0;
      entry.liveGrowth = entry.liveWarm && entry.liveEnd !== undefined ? (entry.liveEnd - entry.liveWarm) / entry.liveWarm : undefined;
    });
    latencies.sort((a, b) => a - b);
    const errors = [...failures.values()].reduce((sum, n) => sum + n, 0);
    const result: SoakResult = {
      ok: errors === 0 && memory.every((entry) => entry.liveGrowth !== undefined && entry.liveGrowth <= MAX_GROWTH),
      sent,
      errors,
      achievedRate: latencies.length / elapsedSeconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      memory,
    };
    const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;
    log(`achieved ${result.achievedRate.toFixed(1)} requests/s of ${options.rate} (${latencies.length} answered of ${sent} sent), p50 ${result.p50Ms.toFixed(1)} ms, p99 ${result.p99Ms.toFixed(1)} ms`);
    log(`errors: ${errors}${errors ? ` FAIL (${[...failures].map(([key, n]) => `${key}: ${n}`).join(', ')})` : ' (ok)'}`);
    const half = Math.round(options.seconds / 2);
    for (const entry of memory) {
      log(
        `${entry.name} (pid ${entry.pid}) resident: start ${mb(entry.startKb)}, after warm-up (${warmupSeconds} s) ${mb(entry.warmKb)}, at ${half} s ${mb(entry.midKb)}, end ${mb(entry.endKb)}, peak ${mb(Math.max(...entry.samples))}; growth after warm-up (median of the last ${warmupSeconds} s against the ${warmupSeconds} s after warm-up) ${(entry.growth * 100).toFixed(1)}%${entry.growth > MAX_GROWTH ? ' (over 10%: see the live heap)' : ''}`,
      );
      log(`${entry.name} V8 heap used/total MB (its /metrics): ${entry.heap.join(', ')}`);
      const live = (bytes: number | undefined) => (bytes === undefined ? '?' : mb(bytes / 1024));
      log(
        `${entry.name} live heap after a full collection: after warm-up ${live(entry.liveWarm)}, end ${live(entry.liveEnd)}; growth ${entry.liveGrowth === undefined ? 'unknown FAIL' : `${(entry.liveGrowth * 100).toFixed(1)}%${entry.liveGrowth > MAX_GROWTH ? ' FAIL (over 10%)' : ' (ok)'}`}`,
      );
      log(`${entry.name} cache entries (platform_cache_entries): ${entry.caches.join('; ')}`);
    }
    return result;
  } finally {
    agents.forEach((agent) => agent.destroy());
    await Promise.all(replicas.map((replica) => replica.stop()));
    await database.drop();
  }
}

export interface WorkersOptions {
  script: string;
  host: string;
  oidc: { issuer: string; clientId: string; apiScope: string; audience: string };
  redis: string;
  /** A fresh directory for the SQLite file. */
  workDir: string;
  warmupSeconds: number;
  durationSeconds: number;
  connections: number;
  log: (line: string) => void;
}

export interface WorkersResult {
  ok: boolean;
  runs: { workers: number; measurement: Measurement; problem?: string }[];
}

/**
 * One worker beside two (WEB_CONCURRENCY=2, node:cluster) on one HTTP scenario, `GET /policy/v1`
 * with a Bearer device token, on the same SQLite file and Redis; the same autocannon load, from
 * this process, which shares the machine's cores with the workers.
 */
export async function runWorkerComparison(options: WorkersOptions): Promise<WorkersResult> {
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    PLATFORM_DEPLOYMENT: 'self-hosted',
    DATABASE_URL: `sqlite:${options.workDir}/workers.sqlite`,
    REDIS_URL: options.redis,
    SIGNING_KEYS_SECRET: randomBytes(32).toString('base64url'),
    LOG_LEVEL: 'silent',
    OIDC_ALLOW_HTTP_LOOPBACK: 'true',
    PLATFORM_BOOTSTRAP_LOCALHOST: 'false',
  };
  const seeded = await seedPlatform({ env, host: options.host, oidc: options.oidc, ingestDevices: 0, policyDpopJkt: createDpopKey().thumbprint });
  const scenario = allScenarios({
    host: options.host,
    personToken: '',
    policyDevices: { bearerToken: seeded.policy!.bearerToken, dpopToken: '', dpopKey: createDpopKey(), proofWindowSeconds: 60, dpopEdToken: '', dpopEdKey: createDpopKey('Ed25519') },
    // Only the Bearer policy scenario runs here: the others' credentials stay empty.
    cloud: { accessToken: '', organisationId: '' },
    peers: { jwtBearer: '', jwtBearerOtherAudience: '', jwtDpop: '', jwtDpopKey: createDpopKey(), opaque: '', opaqueRevoked: '' },
  }).find(
    (candidate) => candidate.name === 'device token (Bearer): GET /policy/v1',
  )!;
  const runs: WorkersResult['runs'] = [];
  for (const workers of [1, 2]) {
    const server = await startChild({ name: `platform, ${workers} worker(s)`, script: options.script, env: { ...env, WEB_CONCURRENCY: String(workers) }, port: await freePort(), ready: { path: '/readyz' }, timeoutMs: 60_000 });
    try {
      // The warm-up also gives the second worker time to listen.
      await load(scenario, server.origin, { connections: options.connections, durationSeconds: Math.max(options.warmupSeconds, 3) });
      const measurement = await load(scenario, server.origin, { connections: options.connections, durationSeconds: options.durationSeconds });
      const problem = problemWith(measurement);
      runs.push({ workers, measurement, ...(problem ? { problem } : {}) });
    } finally {
      await server.stop();
    }
  }
  const one = runs[0]!.measurement.requestsPerSecond;
  options.log(`workers: ${scenario.name}, ${options.connections} connections, ${options.durationSeconds} s measured after a warm-up, SQLite + Redis`);
  for (const { workers, measurement, problem } of runs) {
    options.log(
      `  WEB_CONCURRENCY=${workers}: ${measurement.requestsPerSecond.toFixed(0)} req/s, p50 ${measurement.p50} ms, p99 ${measurement.p99} ms, ${(measurement.requestsPerSecond / one).toFixed(2)}x one worker${problem ? ` FAILED (${problem})` : ''}`,
    );
  }
  return { ok: runs.every((run) => !run.problem), runs };
}
