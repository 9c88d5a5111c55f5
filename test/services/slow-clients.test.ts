import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { CONNECTIONS_CHECKING_INTERVAL_MS } from '../../src/lifecycle.js';
import { LoggedService } from '../support/service-process.js';

/**
 * Slow, idle and too many clients against the real service process (src/lifecycle.ts): a socket
 * that dribbles its head is closed within HEADERS_TIMEOUT_SECONDS plus the check interval (Node's
 * default interval of 30 s let such a socket live about 36 s against a 20 s timeout); one that
 * dribbles its body within REQUEST_TIMEOUT_SECONDS plus the interval; an idle keep-alive connection
 * after KEEP_ALIVE_TIMEOUT_SECONDS; and past MAX_CONNECTIONS a new connection is closed as it
 * arrives. Node's timers are real time here (the server's, not the app's clock), so the timeouts
 * are set to a few seconds.
 */

const cleanUp: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanUp.splice(0).reverse()) await Promise.resolve(step()).catch(() => undefined);
});

async function started(env: Record<string, string>): Promise<{ service: LoggedService; port: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-slow-clients-'));
  cleanUp.push(() => rmSync(dir, { recursive: true, force: true }));
  const service = new LoggedService({ DATABASE_URL: `sqlite:${join(dir, 'platform.sqlite')}`, MAIL_OUTBOX_DIR: join(dir, 'outbox'), ...env });
  cleanUp.push(() => service.stop());
  return { service, port: await service.port() };
}

/** A raw connection: what it received, and when it was closed (ms after it opened). */
async function connect(port: number): Promise<{ socket: Socket; received: () => string; closedAfter: Promise<number> }> {
  const socket = createConnection({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const opened = performance.now();
  let data = '';
  socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  cleanUp.push(() => socket.destroy());
  const closedAfter = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now() - opened)));
  return { socket, received: () => data, closedAfter };
}

/** Writes `line` every `everyMs` until the socket closes. */
function dribble(socket: Socket, line: () => string, everyMs: number): void {
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) return clearInterval(timer);
    socket.write(line());
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
  cleanUp.push(() => clearInterval(timer));
}

const SLACK_MS = 750;

describe('slow clients', () => {
  it('closes a socket that dribbles header lines within HEADERS_TIMEOUT_SECONDS plus the check interval, answering 408', async () => {
    const { port } = await started({ HEADERS_TIMEOUT_SECONDS: '2', REQUEST_TIMEOUT_SECONDS: '4' });
    const client = await connect(port);
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    let n = 0;
    dribble(client.socket, () => `X-Slow-${n++}: ${'a'.repeat(10)}\r\n`, 300);
    const closedAfter = await client.closedAfter;
    expect(closedAfter).toBeGreaterThanOrEqual(2_000 - 50);
    expect(closedAfter).toBeLessThan(2_000 + CONNECTIONS_CHECKING_INTERVAL_MS + SLACK_MS);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  }, 30_000);

  it('closes a request whose body dribbles within REQUEST_TIMEOUT_SECONDS plus the check interval', async () => {
    const { port } = await started({ HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '3' });
    const client = await connect(port);
    client.socket.write('POST /relay/v1/device/code HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":"');
    dribble(client.socket, () => 'aaaa', 300);
    const closedAfter = await client.closedAfter;
    expect(closedAfter).toBeGreaterThanOrEqual(3_000 - 50);
    expect(closedAfter).toBeLessThan(3_000 + CONNECTIONS_CHECKING_INTERVAL_MS + SLACK_MS);
  }, 30_000);

  it('closes an idle keep-alive connection after KEEP_ALIVE_TIMEOUT_SECONDS, and keeps it until then', async () => {
    const { port } = await started({ KEEP_ALIVE_TIMEOUT_SECONDS: '2' });
    const client = await connect(port);
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const closedAfter = await client.closedAfter;
    expect(client.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.received()).toMatch(/Keep-Alive: timeout=2/i);
    expect(closedAfter).toBeGreaterThanOrEqual(2_000 - 50);
    expect(closedAfter).toBeLessThan(2_000 + CONNECTIONS_CHECKING_INTERVAL_MS + SLACK_MS);
  }, 30_000);
});

describe('too many clients', () => {
  it('closes a connection past MAX_CONNECTIONS as it arrives, logs it once, and takes new ones when others go', async () => {
    const { service, port } = await started({ MAX_CONNECTIONS: '3' });
    const held = [await connect(port), await connect(port), await connect(port)];
    // Each is served: the server counts it.
    for (const client of held) client.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await service.until(() => (held.every((client) => client.received().includes('200 OK')) ? true : undefined), 'three answers');
    const refused = await connect(port);
    refused.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    expect(await refused.closedAfter).toBeLessThan(2_000);
    expect(refused.received()).toBe('');
    const line = await service.until(() => service.lines.find((l) => l.msg === 'connections refused: MAX_CONNECTIONS reached'), 'the drop line');
    expect(line).toMatchObject({ level: 40, maxConnections: 3 });

    held[0]!.socket.destroy();
    await held[0]!.closedAfter;
    // The server learns of the close on one of its next turns; a new connection is then taken.
    let answered = '';
    for (let attempt = 0; attempt < 20 && !answered.includes('200 OK'); attempt++) {
      const next = await connect(port);
      next.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      await next.closedAfter;
      answered = next.received();
    }
    expect(answered).toMatch(/^HTTP\/1\.1 200 /);
  }, 60_000);
});
