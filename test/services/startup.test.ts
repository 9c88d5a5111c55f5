import { request } from 'node:http';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort, RedisServer } from '../support/redis-server.js';
import { LoggedService } from '../support/service-process.js';

/**
 * The service as operators start it (src/main.ts, in a process of its own), with a dependency
 * down: it writes one JSON log line per attempt to reach it, with no stack trace, and tries again
 * with a growing wait instead of dying. A database that comes up lets it start; Redis does not
 * hold the start back, and once it is up the service is ready without a restart.
 */

/** The lines of the attempts to reach `dependency`. */
function attemptsOf(service: LoggedService, dependency: string): Record<string, unknown>[] {
  return service.lines.filter((line) => line.dependency === dependency && line.attempt !== undefined);
}

/** What every line the service wrote must be: JSON, and never a stack trace. */
function expectCleanLogs(service: LoggedService): void {
  for (const line of service.raw.filter((text) => text.startsWith('{'))) {
    expect(line).not.toMatch(/"stack"|\\n\s+at /);
  }
  expect(service.stderr).toBe('');
}

/** A TCP forwarder on `port` to `target`: the database appearing at the address the service was given. */
async function forward(port: number, target: { host: string; port: number }): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  server.on('close', () => sockets.forEach((socket) => socket.destroy()));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

/** A JSON POST with a Host header of our choosing (fetch may not set one): the organisation served at `localhost`. */
function post(port: number, path: string, host: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { Host: host, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } }, (res) => {
      let answer = '';
      res.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(answer) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end(text);
  });
}

const cleanUp: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanUp.splice(0).reverse()) await step().catch(() => undefined);
});

describe('starting with the database down', () => {
  it('logs one JSON line per attempt with a growing wait, and starts once the database answers', async () => {
    const database: TestDatabase = await freshDatabase();
    cleanUp.push(() => database.drop());
    const server = new URL(process.env.TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306');
    const port = await freePort();
    const url = database.url.replace(`${server.hostname}:${server.port || 3306}`, `127.0.0.1:${port}`);
    expect(url).toContain(`:${port}/`);

    const service = new LoggedService({ DATABASE_URL: url });
    cleanUp.push(() => service.stop());
    await service.until(() => (attemptsOf(service, 'database').length >= 3 ? true : undefined), 'three attempts');
    const attempts = attemptsOf(service, 'database');
    expect(attempts.slice(0, 3)).toEqual([
      expect.objectContaining({ level: 40, attempt: 1, retryInMs: 500, reason: expect.stringContaining('ECONNREFUSED'), errorCode: 'ECONNREFUSED', msg: 'database not reachable; trying again' }),
      expect.objectContaining({ attempt: 2, retryInMs: 1000 }),
      expect.objectContaining({ attempt: 3, retryInMs: 2000 }),
    ]);
    expect(service.lines.some((line) => line.msg === 'platform api listening')).toBe(false);
    // After a few attempts, one line says where it tries and what to check (never a password); attempts go on.
    await service.until(() => (attemptsOf(service, 'database').length >= 4 ? true : undefined), 'a fourth attempt');
    const hints = service.lines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('cannot reach the database'));
    expect(hints).toEqual([
      expect.objectContaining({ level: 50, dependency: 'database', attempts: 3, msg: `cannot reach the database at 127.0.0.1:${port}: check DATABASE_URL (still trying)` }),
    ]);

    const proxy = await forward(port, { host: server.hostname, port: Number(server.port || 3306) });
    cleanUp.push(() => new Promise((resolve) => proxy.close(resolve)));
    const listening = await service.port();
    expect(service.lines).toEqual(expect.arrayContaining([expect.objectContaining({ msg: 'database reachable', dependency: 'database' })]));
    const ready = await fetch(`http://127.0.0.1:${listening}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: unknown }).checks).toMatchObject({ database: 'ok', migrations: 'ok' });

    expect(await service.stop()).toBe(0);
    expectCleanLogs(service);
  }, 90_000);
});

describe('starting with Redis down', () => {
  it('serves at once (not ready), logs one JSON line per attempt to reach Redis, and is ready once Redis is up', async () => {
    const redis = await RedisServer.create({ running: false });
    cleanUp.push(() => redis.close());
    const service = new LoggedService({ DATABASE_URL: 'sqlite::memory:', REDIS_URL: redis.url });
    cleanUp.push(() => service.stop());
    const port = await service.port();
    await service.until(() => (attemptsOf(service, 'redis').length >= 2 ? true : undefined), 'two attempts to reach Redis');
    expect(attemptsOf(service, 'redis')[0]).toMatchObject({ level: 40, attempt: 1, reason: expect.stringContaining('ECONNREFUSED'), msg: 'redis not reachable; trying again' });

    const base = `http://127.0.0.1:${port}`;
    const code = () => post(port, '/relay/v1/device/code', 'localhost', { workspaceId: 'ws', name: 'starter' });
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ error: 'not_ready', checks: { redis: 'unreachable', rateLimits: 'unreachable', replayCache: 'unreachable' } });
    const refused = await code();
    expect(refused.status).toBe(503);
    expect(refused.body.error).toBe('unavailable');

    await redis.start();
    await service.until(() => (service.lines.some((line) => line.msg === 'redis reachable') ? true : undefined), 'Redis to be reachable');
    // The relay's subscription has a connection of its own, back on its own reconnect schedule.
    for (let deadline = Date.now() + 10_000; (await fetch(`${base}/readyz`)).status !== 200; ) {
      if (Date.now() > deadline) throw new Error('not ready 10 s after Redis came back');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect((await code()).status).toBe(200);

    expect(await service.stop()).toBe(0);
    expectCleanLogs(service);
  }, 90_000);
});
