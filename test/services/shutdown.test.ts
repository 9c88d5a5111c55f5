import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataSource } from '../../src/db/data-source.js';
import { createLogger } from '../../src/logger.js';
import { systemClock } from '../../src/util/clock.js';
import { createPerson, enrolDevice } from '../support/devices.js';
import type { TestPlatform } from '../support/platform.js';
import { LoggedService } from '../support/service-process.js';
import { TestWorkbench } from '../support/workbench.js';

/**
 * Stopping the service (src/lifecycle.ts) as an orchestrator does, with SIGTERM to a real process:
 * readiness goes 503 at once, no new connection is taken, a request in flight finishes and is
 * answered, the process exits 0 (1 when SHUTDOWN_TIMEOUT_SECONDS cuts a request short). A port
 * that is taken or a HOST that cannot be used is one log line and exit 2.
 */

const cleanUp: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanUp.splice(0).reverse()) await Promise.resolve(step()).catch(() => undefined);
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'platform-shutdown-'));
  cleanUp.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function started(env: Record<string, string> = {}, entry?: 'scripts/start.mjs' | 'npm start'): Promise<{ service: LoggedService; port: number }> {
  const dir = dataDir();
  const service = new LoggedService({ DATABASE_URL: `sqlite:${join(dir, 'platform.sqlite')}`, MAIL_OUTBOX_DIR: join(dir, 'outbox'), ...env }, entry);
  cleanUp.push(() => service.stop());
  return { service, port: await service.port(entry ? 170_000 : 60_000) };
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A connection of its own, on which the test writes a request in pieces and reads the answer. */
class RawConnection {
  private data = '';
  readonly closed: Promise<void>;
  private readonly socket: Socket;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => (this.data += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  write(text: string): void {
    this.socket.write(text);
  }

  /** The answer, once the server has sent all of it and closed the connection. */
  async answer(): Promise<Answer> {
    await this.closed;
    const [head = '', body = ''] = this.data.split('\r\n\r\n');
    const [statusLine = '', ...lines] = head.split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const at = line.indexOf(':');
      headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
    }
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** Whether a new TCP connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: Error & { code?: string }) => resolve(error.code === 'ECONNREFUSED'));
  });
}

/** What every line the service wrote must be: JSON, never a stack trace. */
function expectCleanLogs(service: LoggedService): void {
  for (const line of service.raw.filter((text) => text.startsWith('{'))) expect(line).not.toMatch(/"stack"|\\n\s+at /);
  expect(service.stderr).toBe('');
}

const BODY = JSON.stringify({ workspaceId: 'ws', name: 'draining laptop' });
const HEAD = (port: number) =>
  `POST /relay/v1/device/code HTTP/1.1\r\nHost: localhost:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\n\r\n`;

describe('SIGTERM', () => {
  it('turns readiness off at once, takes no new connection, lets the request in flight finish, and exits 0', async () => {
    const { service, port } = await started();
    // A request in flight: its body half sent. And a readiness probe whose request line is sent
    // but not its end: both connections are busy, not idle, when the signal comes.
    const slow = await RawConnection.open(port);
    slow.write(HEAD(port) + BODY.slice(0, 10));
    const probe = await RawConnection.open(port);
    probe.write(`GET /readyz HTTP/1.1\r\nHost: localhost:${port}\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 200));

    service.signal('SIGTERM');
    await service.until(() => service.lines.find((line) => line.msg === 'shutting down: readiness is off, requests in flight may finish'), 'the stop to begin');
    expect(await refused(port)).toBe(true);

    probe.write('\r\n');
    const notReady = await probe.answer();
    expect(notReady.status).toBe(503);
    expect(notReady.headers.connection).toBe('close');
    expect(JSON.parse(notReady.body)).toEqual({ error: 'not_ready', message: 'not ready: the service is shutting down', checks: { shutdown: 'shutting down' } });

    // Still running: the request in flight holds the stop.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(service.lines.some((line) => line.msg === 'stopped')).toBe(false);
    slow.write(BODY.slice(10));
    const finished = await slow.answer();
    expect(finished.status).toBe(200);
    expect(finished.headers.connection).toBe('close');
    expect(JSON.parse(finished.body)).toMatchObject({ device_code: expect.any(String), user_code: expect.any(String) });

    expect(await service.exited).toBe(0);
    expect(service.lines.at(-1)).toMatchObject({ msg: 'stopped', forced: false, signal: 'SIGTERM' });
    expectCleanLogs(service);
  }, 90_000);

  it('closes what is still in flight when SHUTDOWN_TIMEOUT_SECONDS runs out, and exits 1', async () => {
    const { service, port } = await started({ SHUTDOWN_TIMEOUT_SECONDS: '1' });
    const stuck = await RawConnection.open(port);
    stuck.write(HEAD(port) + BODY.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const signalled = Date.now();
    service.signal('SIGTERM');
    expect(await service.exited).toBe(1);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(1_000);
    await stuck.closed;
    expect(service.lines).toEqual(expect.arrayContaining([expect.objectContaining({ level: 40, msg: 'requests still in flight when SHUTDOWN_TIMEOUT_SECONDS ran out: their connections are closed' })]));
    expectCleanLogs(service);
  }, 90_000);

  it('also stops on SIGINT with exit 0, and while still waiting for the database', async () => {
    const { service } = await started();
    service.signal('SIGINT');
    expect(await service.exited).toBe(0);

    // Nothing listens on loopback port 1: the database never answers.
    const waiting = new LoggedService({ DATABASE_URL: 'mysql://root@127.0.0.1:1/none' });
    cleanUp.push(() => waiting.stop());
    await waiting.until(() => waiting.lines.find((line) => line.dependency === 'database'), 'an attempt to reach the database');
    expect(await waiting.stop()).toBe(0);
    expectCleanLogs(waiting);
  }, 90_000);

  it('closes control channels with 1001 (going away: reconnect elsewhere) and exits 0', async () => {
    const dir = dataDir();
    const env = { DATABASE_URL: `sqlite:${join(dir, 'platform.sqlite')}`, MAIL_OUTBOX_DIR: join(dir, 'outbox'), PLATFORM_BOOTSTRAP_LOCALHOST: 'false' };
    // A workbench enrolled in the service's database before it starts.
    const config = loadConfig(env);
    const dataSource = createDataSource(config.database);
    await dataSource.initialize();
    await dataSource.runMigrations({ transaction: 'each' });
    const seeding = buildApp({ config, dataSource, clock: systemClock, logger: createLogger('silent') });
    const organisationId = (await seeding.services.organisations.create({ name: 'Stopping', kind: 'enterprise', hosts: ['127.0.0.1'] })).id;
    const seeder = { ...seeding, dataSource, clock: systemClock } as unknown as TestPlatform;
    const device = await enrolDevice(seeder, { organisationId, personId: (await createPerson(seeder, organisationId)).id });
    await dataSource.destroy();

    const service = new LoggedService(env);
    cleanUp.push(() => service.stop());
    const origin = `http://127.0.0.1:${await service.port()}`;
    const workbench = await TestWorkbench.connect(origin, device, systemClock);
    service.signal('SIGTERM');
    expect(await workbench.closed).toEqual({ code: 1001, reason: 'the service is shutting down' });
    expect(await service.exited).toBe(0);
    expectCleanLogs(service);
  }, 90_000);

  it('reaches the service when it runs under `npm start` (scripts/start.mjs, built first when needed): exit 0', async () => {
    const { service, port } = await started({}, 'scripts/start.mjs');
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await service.stop()).toBe(0);
    expect(service.lines.at(-1)).toMatchObject({ msg: 'stopped', forced: false });
  }, 180_000);

  it('stops gracefully when SIGTERM reaches only the npm process of `npm start` (exit 0, nothing left running)', async () => {
    const { service, port } = await started({}, 'npm start');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    // The signal goes to npm alone (its pid), not to its process group: npm must pass it on.
    expect(await service.stop()).toBe(0);
    expect(service.lines.at(-1)).toMatchObject({ msg: 'stopped', forced: false });
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  }, 180_000);
});

describe('a start that cannot listen', () => {
  it('says so in one line when the port is taken, and exits 2', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanUp.push(() => new Promise((resolve) => blocker.close(resolve)));
    const port = (blocker.address() as { port: number }).port;
    const dir = dataDir();
    const service = new LoggedService({ DATABASE_URL: `sqlite:${join(dir, 'platform.sqlite')}`, PORT: String(port) });
    expect(await service.exited).toBe(2);
    const fatal = service.lines.filter((line) => (line.level as number) >= 50);
    expect(fatal).toEqual([expect.objectContaining({ level: 60, port, host: '127.0.0.1', errorCode: 'EADDRINUSE', msg: `cannot listen: port ${port} on 127.0.0.1 is already in use (PORT)` })]);
    expectCleanLogs(service);
  }, 60_000);

  it.each([
    ['does not resolve', 'no-such-host.invalid', 'ENOTFOUND', 'cannot listen: HOST no-such-host.invalid does not resolve to an address'],
    ['is not an address of this machine', '192.0.2.1', 'EADDRNOTAVAIL', 'cannot listen: HOST 192.0.2.1 is not an address of this machine'],
  ])('says so in one line when HOST %s, and exits 2', async (_what, host, errorCode, msg) => {
    const dir = dataDir();
    const service = new LoggedService({ DATABASE_URL: `sqlite:${join(dir, 'platform.sqlite')}`, HOST: host });
    expect(await service.exited).toBe(2);
    expect(service.lines.filter((line) => (line.level as number) >= 50)).toEqual([expect.objectContaining({ level: 60, host, errorCode, msg })]);
    expectCleanLogs(service);
  }, 60_000);
});
