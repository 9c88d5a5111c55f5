import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../bench/servers.js';

/**
 * The real service as production starts it (src/main.ts: configuration from the environment,
 * the same HTTP server, WebSocket upgrades, graceful stop), run from source with tsx in a child
 * process on a free loopback port: several of them make the replicas of a deployment.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  origin: string;
  port: number;
  /** Everything the process wrote to stderr and stdout, for failures. */
  output(): string;
  /** SIGTERM and wait (graceful: control channels get 1001). */
  stop(): Promise<void>;
  /** SIGKILL and wait: a replica that dies. */
  kill(): Promise<void>;
}

export async function startService(env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    // Nothing from the caller's environment but PATH: the test says what the replica gets.
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const service: ServiceProcess = {
    origin,
    port,
    output: () => output,
    stop: async () => {
      if (!running()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
    kill: async () => {
      if (!running()) return;
      child.kill('SIGKILL');
      await exited;
    },
  };
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (!running()) throw new Error(`the service exited before it was ready:\n${output}`);
    try {
      const res = await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(1_000) });
      if (res.status === 200) return service;
      last = `readyz answered ${res.status}: ${await res.text()}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await service.kill();
  throw new Error(`the service was not ready in time (${last}):\n${output}`);
}

type Line = Record<string, unknown>;

/**
 * The service in a child process whose log lines the test reads: `PORT` 0 unless the test says
 * otherwise (the port is read from the "listening" line), the exit code kept. `entry` is what node
 * runs: `src/main.ts` from source (tsx), or `scripts/start.mjs` as `npm start` runs it.
 */
export class LoggedService {
  readonly lines: Line[] = [];
  readonly raw: string[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(env: Record<string, string>, entry: 'src/main.ts' | 'scripts/start.mjs' | 'npm start' = 'src/main.ts') {
    // `npm start` as an operator types it: npm (found on PATH) runs the package's start script.
    const [command, args] =
      entry === 'npm start' ? ['npm', ['start']] : entry === 'src/main.ts' ? [process.execPath, ['--import', 'tsx', entry]] : [process.execPath, [entry]];
    this.child = spawn(command, args, {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let pending = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const parts = pending.split('\n');
      pending = parts.pop() ?? '';
      for (const part of parts) {
        if (!part.trim()) continue;
        this.raw.push(part);
        if (part.startsWith('{')) this.lines.push(JSON.parse(part) as Line);
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get pid(): number {
    return this.child.pid!;
  }

  async until<T>(find: () => T | undefined, what: string, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output so far:\n${this.raw.join('\n')}\n${this.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** The port of the first "listening" line (a worker's, with WEB_CONCURRENCY). */
  async port(timeoutMs?: number): Promise<number> {
    return this.until(() => this.lines.find((line) => line.msg === 'platform api listening')?.port as number | undefined, 'the service to listen', timeoutMs);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  /** SIGTERM and the exit code (SIGKILL after 20 s, for a test that failed half-way). */
  async stop(): Promise<number | null> {
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), 20_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}
