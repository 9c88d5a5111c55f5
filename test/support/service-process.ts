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
