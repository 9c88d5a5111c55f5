import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './redis-server.js';

const run = promisify(execFile);

/**
 * A real Redis Cluster of the test's own, from Debian's `redis-server` and `redis-cli`: three
 * primaries and a replica of each, on free ports, nothing saved, a node timeout of one second so
 * a killed primary is replaced within a few seconds.
 */
export class RedisCluster {
  private readonly processes = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  /** Seed nodes as REDIS_URL names them with REDIS_MODE=cluster (two of the six: ioredis learns the rest). */
  get url(): string {
    return `redis://127.0.0.1:${this.ports[0]},127.0.0.1:${this.ports[1]}`;
  }

  static async start(): Promise<RedisCluster> {
    const ports: number[] = [];
    while (ports.length < 6) {
      const port = await freePort();
      // The cluster bus listens at port + 10000: keep both below 65536 and apart.
      if (port + 10_000 < 65_536 && !ports.includes(port)) ports.push(port);
    }
    const cluster = new RedisCluster(ports, mkdtempSync(join(tmpdir(), 'platform-redis-cluster-')));
    await Promise.all(ports.map((port) => cluster.startNode(port)));
    await run('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 30_000 });
    await cluster.waitUntil(async () => (await cluster.info(ports[0]!, 'cluster', 'info')).includes('cluster_state:ok') && (await cluster.primaries()).length === 3);
    return cluster;
  }

  private async startNode(port: number): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1000'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.processes.set(port, child);
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`redis-server on port ${port} did not start: ${output}`)), 10_000);
      child.once('error', (error) => reject(new Error(`redis-server could not be started (Debian: redis-server): ${error.message}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  /** One command to one node, on a connection of its own. */
  async info(port: number, ...command: string[]): Promise<string> {
    return String(await this.command(port, ...command));
  }

  async command(port: number, ...command: string[]): Promise<unknown> {
    const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    node.on('error', () => undefined);
    try {
      await node.connect();
      return await node.call(command[0]!, ...command.slice(1));
    } finally {
      node.disconnect();
    }
  }

  /** The ports of the nodes that are primaries now (asked of each live node). */
  async primaries(): Promise<number[]> {
    const found: number[] = [];
    for (const port of this.ports) {
      if (!this.processes.has(port)) continue;
      const replication = await this.info(port, 'info', 'replication').catch(() => '');
      if (replication.includes('role:master')) found.push(port);
    }
    return found;
  }

  /** The primary serving `key`'s slot now. */
  async primaryOf(key: string): Promise<number> {
    const slot = Number(await this.command([...this.processes.keys()][0]!, 'cluster', 'keyslot', key));
    const live = [...this.processes.keys()][0]!;
    const slots = (await this.command(live, 'cluster', 'slots')) as [number, number, [string, number]][];
    const range = slots.find(([from, to]) => slot >= from && slot <= to)!;
    return range[2][1];
  }

  /** Waits until the primary's replica has every write the primary took (replication is asynchronous). */
  async replicated(primary: number): Promise<void> {
    await this.waitUntil(async () => {
      const info = await this.info(primary, 'info', 'replication');
      const offset = /master_repl_offset:(\d+)/.exec(info)?.[1];
      const replica = /slave0:.*offset=(\d+)/.exec(info)?.[1];
      return offset !== undefined && offset === replica;
    });
  }

  /** Kills a node as a crash would (SIGKILL). */
  async kill(port: number): Promise<void> {
    const child = this.processes.get(port);
    if (!child) return;
    this.processes.delete(port);
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  async waitUntil(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      if (await check().catch(() => false)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the Redis Cluster did not get there in time');
  }

  async stop(): Promise<void> {
    await Promise.all([...this.processes.keys()].map((port) => this.kill(port)));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
