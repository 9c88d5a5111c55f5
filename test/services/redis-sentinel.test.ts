import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { connectRedis, type RedisClient } from '../../adapters/state/redis.js';
import { RedisReplayCache } from '../../adapters/state/redis-replay-cache.js';
import { ManualClock } from '../../src/util/clock.js';
import { freePort } from '../support/redis-server.js';

// REDIS_MODE=sentinel on real processes from Debian's redis-server: a primary, its replica and a
// sentinel watching them. The replay cache works through the sentinel's primary, and after a
// failover (SENTINEL FAILOVER: the replica promoted) the client follows it and a key written
// before is still there: nothing is accepted twice.

const NAME = 'platform-test';
const dir = mkdtempSync(join(tmpdir(), 'platform-redis-sentinel-'));
const processes: ChildProcess[] = [];
let primary: number;
let replica: number;
let sentinel: number;
let client: RedisClient;

async function serve(args: string[]): Promise<void> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  processes.push(child);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000);
    child.once('error', (error) => reject(error));
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('Ready to accept connections') || output.includes('Sentinel ID is')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

async function roleOf(port: number): Promise<string> {
  const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await node.connect();
    return /role:(\w+)/.exec(await node.info('replication'))?.[1] ?? '';
  } finally {
    node.disconnect();
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('not in time');
}

beforeAll(async () => {
  [primary, replica, sentinel] = [await freePort(), await freePort(), await freePort()];
  const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  await serve(['--port', String(primary), ...common]);
  await serve(['--port', String(replica), ...common, '--replicaof', '127.0.0.1', String(primary)]);
  const config = join(dir, 'sentinel.conf');
  writeFileSync(config, [`port ${sentinel}`, 'bind 127.0.0.1', `dir ${dir}`, `sentinel monitor ${NAME} 127.0.0.1 ${primary} 1`, `sentinel down-after-milliseconds ${NAME} 1000`, `sentinel failover-timeout ${NAME} 5000`, ''].join('\n'));
  await serve([config, '--sentinel']);
  await until(async () => (await roleOf(replica)) === 'slave');
  client = connectRedis({ url: `redis://127.0.0.1:${sentinel}`, mode: 'sentinel', sentinelName: NAME });
  client.on('error', () => undefined);
  await client.connect();
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  for (const child of processes) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('REDIS_MODE=sentinel', () => {
  it('refuses to connect without REDIS_SENTINEL_NAME', () => {
    expect(() => connectRedis({ url: `redis://127.0.0.1:${sentinel}`, mode: 'sentinel' })).toThrow('REDIS_SENTINEL_NAME');
  });

  it('the replay cache works through the primary, and follows a failover without accepting anything twice', async () => {
    const clock = new ManualClock(Date.now());
    const cache = new RedisReplayCache(client, clock, 'platform:test:sentinel:');
    const until60 = new Date(clock.now().getTime() + 60_000);
    expect(await cache.unique('before', until60)).toBe(true);
    expect(await cache.unique('before', until60)).toBe(false);
    // The replica has every write before it is promoted.
    await until(async () => {
      const node = new Redis(primary, '127.0.0.1');
      const info = await node.info('replication').finally(() => node.disconnect());
      return /slave0:.*offset=(\d+)/.exec(info)?.[1] === /master_repl_offset:(\d+)/.exec(info)?.[1];
    });
    const admin = new Redis(sentinel, '127.0.0.1');
    await admin.call('SENTINEL', 'FAILOVER', NAME);
    admin.disconnect();
    await until(async () => (await roleOf(replica)) === 'master');
    // The client follows the sentinels to the promoted replica (its failover detector).
    await until(async () => ((await client.call('INFO', 'server')) as string).includes(`tcp_port:${replica}\r`));
    // The key written before is still there; a new one is accepted once.
    expect(await cache.unique('before', until60)).toBe(false);
    expect(await cache.unique('after', until60)).toBe(true);
    expect(await cache.unique('after', until60)).toBe(false);
  }, 60_000);
});
