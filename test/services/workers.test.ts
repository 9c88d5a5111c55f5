import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { RedisServer } from '../support/redis-server.js';
import { LoggedService } from '../support/service-process.js';

/**
 * WEB_CONCURRENCY (src/lifecycle.ts): that many worker processes (node:cluster) share the port;
 * above 1 the service needs Redis and refuses to start without it (exit 2, one line); a SIGTERM
 * to the primary stops every worker gracefully and the primary exits 0.
 */

const cleanUp: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanUp.splice(0).reverse()) await Promise.resolve(step()).catch(() => undefined);
});

function sqlite(): string {
  const dir = mkdtempSync(join(tmpdir(), 'platform-workers-'));
  cleanUp.push(() => rmSync(dir, { recursive: true, force: true }));
  return `sqlite:${join(dir, 'platform.sqlite')}`;
}

/** One request on a connection of its own (the cluster hands each new connection to the next worker). */
function status(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, headers: { Host: 'localhost', Connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('WEB_CONCURRENCY', () => {
  it('runs two workers on one port, both answering, and stops them all on SIGTERM with exit 0', async () => {
    const redis = await RedisServer.create();
    cleanUp.push(() => redis.close());
    const service = new LoggedService({ DATABASE_URL: sqlite(), REDIS_URL: redis.url, WEB_CONCURRENCY: '2' });
    cleanUp.push(() => service.stop());
    const listening = await service.until(() => {
      const lines = service.lines.filter((line) => line.msg === 'platform api listening');
      return lines.length === 2 ? lines : undefined;
    }, 'two workers to listen', 90_000);
    expect(new Set(listening.map((line) => line.worker))).toEqual(new Set([1, 2]));
    const port = listening[0]!.port as number;
    expect(listening[1]!.port).toBe(port);
    // Migrations and the first-start bootstrap ran once, in the primary.
    expect(service.lines.filter((line) => line.msg === 'migrations applied')).toHaveLength(1);
    expect(service.raw.filter((line) => line.startsWith('Created organisation'))).toHaveLength(1);

    // Refusals are logged at info with the worker that answered: both answer.
    for (let i = 0; i < 12; i++) expect(await status(port, '/no-such-route')).toBe(404);
    const answeredBy = new Set(service.lines.filter((line) => line.msg === 'request completed').map((line) => line.worker));
    expect(answeredBy).toEqual(new Set([1, 2]));
    expect(await status(port, '/readyz')).toBe(200);

    expect(await service.stop()).toBe(0);
    expect(service.lines.filter((line) => line.msg === 'stopped')).toEqual([
      expect.objectContaining({ worker: expect.any(Number), forced: false }),
      expect.objectContaining({ worker: expect.any(Number), forced: false }),
    ]);
    expect(service.stderr).toBe('');
  }, 120_000);

  it('refuses to start above 1 without REDIS_URL: one line, exit 2', async () => {
    const service = new LoggedService({ DATABASE_URL: sqlite(), WEB_CONCURRENCY: '2' });
    expect(await service.exited).toBe(2);
    expect(service.stderr).toBe('platform-api: configuration error: WEB_CONCURRENCY: above 1 needs REDIS_URL: workers share rate limits, the DPoP replay cache and relay routing through Redis\n');
    expect(service.raw).toEqual([]);
  }, 60_000);

  it('names every bad variable on a line of its own, and exits 2', async () => {
    const service = new LoggedService({ DATABASE_URL: sqlite(), PORT: 'eighty', WEB_CONCURRENCY: '2', LOG_LEVEL: 'loud' });
    expect(await service.exited).toBe(2);
    expect(service.stderr).toBe(
      [
        'platform-api: configuration error: PORT: must be a whole number (got "eighty")',
        'platform-api: configuration error: WEB_CONCURRENCY: above 1 needs REDIS_URL: workers share rate limits, the DPoP replay cache and relay routing through Redis',
        'platform-api: configuration error: LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
        '',
      ].join('\n'),
    );
    expect(service.raw).toEqual([]);
  }, 60_000);
});
