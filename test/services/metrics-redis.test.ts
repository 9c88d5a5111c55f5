import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import request from 'supertest';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../adapters/state/redis.js';
import { startPlatform, type TestPlatform } from '../support/platform.js';
import { RedisServer } from '../support/redis-server.js';

// platform_redis_up follows a real redis-server of this file's own, stopped and started while the
// platform runs (the production client: it reconnects by itself).

const WAIT_MS = 15_000;

async function redisUp(platform: TestPlatform): Promise<number> {
  const res = await request(platform.app).get('/metrics').set('Host', '10.0.0.9:3000');
  expect(res.status).toBe(200);
  const family = parsePrometheusTextFormat(res.text).find((candidate) => candidate.name === 'platform_redis_up');
  expect(family?.type).toBe('GAUGE');
  return Number(family!.metrics[0]!.value);
}

async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('platform_redis_up', () => {
  let server: RedisServer;
  let redis: Redis;
  let platform: TestPlatform;

  beforeAll(async () => {
    server = await RedisServer.create();
    redis = connectRedis(server.url);
    redis.on('error', () => undefined);
    const ready = once(redis, 'ready');
    await redis.connect();
    await ready;
    platform = await startPlatform({ redis });
  });
  afterAll(async () => {
    redis.disconnect();
    await platform?.close();
    await server.close();
  });

  it('is 1 while Redis answers, 0 while it is away, and 1 again when it is back', async () => {
    expect(await redisUp(platform)).toBe(1);
    await server.stop();
    await until(async () => (await redisUp(platform)) === 0, 'the gauge to fall to 0');
    await server.start();
    await until(async () => (await redisUp(platform)) === 1, 'the gauge to come back to 1');
  });
});
