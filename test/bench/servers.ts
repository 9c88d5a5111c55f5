import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { Redis } from 'ioredis';

/**
 * The servers under test run in child processes, one Node process each, so the load generator
 * (autocannon, in run.ts's process) never shares an event loop with what it measures.
 */

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One plain request on a fresh connection (no keep-alive), with a deadline. */
export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(options.timeoutMs ?? 5_000, () => req.destroy(new Error(`no answer from ${url} in time`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A port nobody listens on at the moment (loopback only). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export interface ChildServer {
  name: string;
  origin: string;
  pid: number;
  /** The last few kilobytes the child wrote to stderr (shown when something goes wrong). */
  stderr(): string;
  /**
   * The V8 heap still in use after a full collection, bytes: asked of the child over its IPC
   * channel (only platform-server.ts answers; undefined otherwise or after 15 s).
   */
  liveHeap(): Promise<number | undefined>;
  stop(): Promise<void>;
  kill(): void;
}

const running = new Set<ChildProcess>();

/** Last resort when run.ts leaves in a hurry: no child survives it. */
export function killAllChildren(): void {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

export interface StartOptions {
  name: string;
  /** The compiled script to run with this Node binary. */
  script: string;
  env: Record<string, string>;
  port: number;
  /** A request that answers 200 once the server is ready. */
  ready: { path: string; headers?: Record<string, string> };
  timeoutMs?: number;
}

export async function startChild(options: StartOptions): Promise<ChildServer> {
  const origin = `http://127.0.0.1:${options.port}`;
  // A fixed, small environment: nothing from the caller's shell (DATABASE_URL, REDIS_URL...) leaks in.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', ...options.env, HOST: '127.0.0.1', PORT: String(options.port) };
  // BENCH_CPU_PROF=<dir>: every server child writes a V8 CPU profile there when it stops
  // (`node --cpu-prof`; open it in Chrome DevTools or speedscope), named after the child, the time
  // and a random tag (Node does not fill in a pid there), so a second run does not overwrite the first.
  const profileDir = process.env.BENCH_CPU_PROF;
  const execArgv = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${options.name.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}-${randomBytes(3).toString('hex')}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...execArgv, options.script], { env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  running.add(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8_192);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', () => running.delete(child));

  const server: ChildServer = {
    name: options.name,
    origin,
    pid: child.pid ?? -1,
    stderr: () => stderr,
    liveHeap: () =>
      new Promise<number | undefined>((resolve) => {
        const timer = setTimeout(() => finish(undefined), 15_000);
        const onMessage = (message: unknown) => {
          const answer = message as { type?: unknown; bytes?: unknown } | null;
          if (answer?.type === 'live-heap' && typeof answer.bytes === 'number') finish(answer.bytes);
        };
        function finish(bytes: number | undefined) {
          clearTimeout(timer);
          child.off('message', onMessage);
          resolve(bytes);
        }
        child.on('message', onMessage);
        if (!child.connected || !child.send({ type: 'live-heap' })) finish(undefined);
      }),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => server.kill(), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  let lastProblem = 'no answer yet';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${options.name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${stderr}`);
    }
    try {
      const answer = await send(`${origin}${options.ready.path}`, { headers: options.ready.headers, timeoutMs: 1_000 });
      if (answer.status === 200) return server;
      lastProblem = `answered ${answer.status}: ${answer.body.slice(0, 300)}`;
    } catch (error) {
      lastProblem = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  server.kill();
  throw new Error(`${options.name} was not ready in time (${lastProblem})\n${stderr}`);
}

/** Why Redis at `url` cannot be used for a part of the bench, or undefined when it answers PING. */
export async function redisProblem(url: string): Promise<string | undefined> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2_000, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    redis.disconnect();
  }
}
