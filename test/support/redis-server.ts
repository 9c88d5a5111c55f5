import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { ServerProcess } from './server-process.js';

/**
 * A redis-server process of a test's own: its own free port and data directory, nothing saved,
 * stopped and started again by the test (a restart forgets every key and every loaded script,
 * as a real Redis restart without persistence does). Fails loudly when redis-server is missing.
 */

/** A port nothing listens on just now (the OS picks it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address !== 'object') throw new Error('no free port');
  return address.port;
}

export class RedisServer extends ServerProcess {

  private constructor(port: number) {
    super(port, 'platform-redis-');
  }

  /** A server on a free port; `running: false` only reserves the port (Redis down from the start). */
  static async create(options: { running?: boolean } = {}): Promise<RedisServer> {
    const server = new RedisServer(await freePort());
    if (options.running !== false) await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process !== undefined;
  }

  async start(): Promise<void> {
    if (this.process) return;
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.process = child;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`redis-server on port ${this.port} did not start: ${output}`)), 10_000);
      child.once('error', (error) => {
        clearTimeout(timer);
        this.process = undefined;
        reject(new Error(`redis-server could not be started (is it installed? Debian: redis-server): ${error.message}`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        this.process = undefined;
        reject(new Error(`redis-server on port ${this.port} exited with ${code}: ${output}`));
      });
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          resolve();
        }
      });
    });
  }
}
