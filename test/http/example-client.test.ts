import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { mergeOverride } from '../../src/modules/policy/merge.js';
import type { IngestEventRecord } from '../../src/modules/ingest/entities.js';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import { ManualClock } from '../../src/util/clock.js';
import { TestIdentityProvider } from '../support/idp.js';
import { personHeaders, ROLE_CLAIM } from '../support/organisations.js';
import { call, createOrganisation, listen, startPlatform, type TestPlatform } from '../support/platform.js';
import { recordSecret } from '../support/suite-record.js';

/**
 * examples/workbench.mjs, the client the docs tell people to copy, run as they would run it (a
 * node process of its own) against the service listening on loopback: it enrols with a join key
 * and by device code (a person approves it through the console API while it polls), reads its
 * policy with DPoP, uploads an envelope, refreshes its tokens, holds the control channel and
 * reads its policy again when told `policy.changed`. The test reads what it printed and what the
 * service stored.
 */

/** The real time: the example signs its DPoP proofs with it, and polls at real intervals. */
class RealClock extends ManualClock {
  override now(): Date {
    return new Date();
  }
}

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let projectId: string;
let origin: string;
let closeServer: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  // Loopback addresses only ever reach the organisation served at 127.0.0.1.
  platform = await startPlatform({ clock: new RealClock(), env: { DEVICE_POLL_INTERVAL_SECONDS: '1' } });
  idp = await TestIdentityProvider.start({ clock: platform.clock });
  organisation = await createOrganisation(platform, { name: 'Example Org', hosts: ['127.0.0.1'], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  projectId = (await platform.services.projects.create(organisation.id, { name: 'Example' })).id;
  const served = await listen(platform);
  origin = served.origin;
  closeServer = served.close;
  dir = await mkdtemp(join(tmpdir(), 'example-client-'));
});

afterAll(async () => {
  await closeServer?.();
  await idp?.close();
  await platform?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The example, running: what it printed so far, and a wait for a line. */
class Example {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private readonly waiters: (() => void)[] = [];

  constructor(args: string[], env: Record<string, string> = {}, url = origin) {
    this.child = spawn(process.execPath, ['examples/workbench.mjs', '--url', url, '--project', projectId, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString('utf8');
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => void (this.stderr += chunk.toString('utf8')));
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  async line(pattern: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(this.stdout);
      if (match) return match;
      if (Date.now() > deadline) throw new Error(`no line ${pattern} in:\n${this.stdout}\n${this.stderr}`);
      await Promise.race([new Promise<void>((resolve) => this.waiters.push(resolve)), new Promise((resolve) => setTimeout(resolve, 200))]);
    }
  }

  stop(): void {
    this.child.kill('SIGTERM');
  }
}

/** The person who approves workbenches, with a token of the organisation's provider. */
const member = () => personHeaders(idp, 'member', 'example-approver');
const admin = () => personHeaders(idp, 'admin', 'example-admin');

describe('examples/workbench.mjs', () => {
  it('joins with a key, reads its policy with DPoP, uploads with cursors, refreshes, and holds the channel (--once)', async () => {
    const created = await call(platform, 'post', '/platform/v1/join-keys', { host: '127.0.0.1', headers: await admin(), body: { description: 'example node' } });
    expect(created.status).toBe(201);
    const key = (created.body as { key: string }).key;
    recordSecret(key);
    const state = join(dir, 'node.json');

    const run = new Example(['--state', state, '--workspace', 'node-1', '--name', 'Example node', '--once'], { PLATFORM_JOIN_KEY: key });
    expect(await run.exited).toBe(0);
    expect(run.stderr).toBe('');
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      expect.stringMatching(/^key {6}created an ES256 key in .*node\.json \(mode 0600, thumbprint [\w-]{43}\)$/),
      expect.stringMatching(/^enrol {4}joined with the key; DPoP tokens bound to this key, kept in .*node\.json$/),
      expect.stringMatching(/^policy {3}revision [\w-]{43} \(start; the defaults: nothing published yet\)$/),
      'ingest   stored 1 event(s), 1 usage item(s), 0 audit record(s), 0 task(s); next event seq 1',
      expect.stringMatching(/^tokens {3}refreshed; the new access token works for \d+ s$/),
      `channel  connected to ${origin.replace('http', 'ws')}/relay/v1/connect`,
      // The service's first frame: the client reads its policy again, unchanged (304).
      'channel  hello',
      expect.stringMatching(/^policy {3}unchanged \(hello\): revision [\w-]{43}$/),
      'done     all steps worked',
    ]);
    // Nothing secret on its output.
    expect(run.stdout).not.toMatch(/platform_(at|rt|jk)_/);

    // The state file: private key and tokens, readable by its owner only.
    expect((await stat(state)).mode & 0o777).toBe(0o600);
    const kept = JSON.parse(await readFile(state, 'utf8')) as { privateJwk: { kty: string; crv: string; d: string }; tokens: { refresh_token: string; access_token: string }; cursors: { events: number } };
    recordSecret(kept.privateJwk.d);
    recordSecret(kept.tokens.access_token);
    recordSecret(kept.tokens.refresh_token);
    expect(kept.privateJwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(kept.cursors.events).toBe(0);

    // What the service holds: a node bound to the key, and its event.
    const device = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ organisationId: organisation.id, name: 'Example node' });
    expect(device).toMatchObject({ kind: 'node', enrolledVia: 'join_key', nodeId: 'node-1' });
    expect(device.dpopJkt).toMatch(/^[\w-]{43}$/);
    expect(await platform.dataSource.getRepository<IngestEventRecord>('IngestEvent').countBy({ deviceId: device.id, workspaceId: 'node-1' })).toBe(1);

    // Run again: the same key and tokens, no new enrolment; the cursors move on; the policy is unchanged (304).
    const again = new Example(['--state', state, '--workspace', 'node-1', '--name', 'Example node', '--once']);
    expect(await again.exited).toBe(0);
    expect(again.stdout).toMatch(/^key {6}loaded from .*node\.json/m);
    expect(again.stdout).toContain('enrol    already enrolled');
    expect(again.stdout).toMatch(/^policy {3}unchanged \(start\): revision [\w-]{43}$/m);
    expect(again.stdout).toContain('next event seq 2');
    expect(await platform.dataSource.getRepository(DeviceEntity).countBy({ organisationId: organisation.id, name: 'Example node' })).toBe(1);
  }, 60_000);

  it('refuses a join key that is not one, saying so, with no stack trace', async () => {
    const run = new Example(['--state', join(dir, 'refused.json'), '--join-key', 'platform_jk_nothing_here', '--once']);
    expect(await run.exited).toBe(1);
    expect(run.stderr).toMatch(/^workbench: joining with the key: 400 invalid_grant[^\n]*\n$/);
  }, 30_000);

  it('enrols by device code once a person approves, then reads the policy again on policy.changed', async () => {
    const state = join(dir, 'workbench.json');
    const run = new Example(['--state', state, '--workspace', 'ws-example', '--name', 'Example workbench']);
    try {
      const [, uri, userCode] = await run.line(/^enrol {4}to approve this workbench, open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})$/m);
      expect(uri).toBe(`${origin}/device`);
      await run.line(/^enrol {4}\(or open \S+\?user_code=[A-Z-]+\); the code works for 10 minutes$/m);
      await run.line(/^enrol {4}waiting for approval \(asking every 1 s\)…$/m);
      // It keeps asking while nobody has approved.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(run.stdout).not.toContain('approved;');

      const headers = await member();
      for (const step of ['look-up', 'approve']) {
        const res = await call(platform, 'post', `/platform/v1/device-approvals/${step}`, { host: '127.0.0.1', headers, body: { userCode } });
        expect(res.status).toBe(200);
      }
      await run.line(/^enrol {4}approved; DPoP tokens bound to this key/m);
      await run.line(/^policy {3}revision ([\w-]{43}) \(start; the defaults: nothing published yet\)$/m);
      await run.line(/^ingest {3}stored 1 event\(s\), 1 usage item\(s\)/m);
      await run.line(/^tokens {3}refreshed;/m);
      await run.line(/^channel {2}waiting for notifications \(Ctrl-C stops\)$/m);
      await run.line(/^policy {3}unchanged \(hello\): revision [\w-]{43}$/m);

      // The organisation publishes a new policy; the service tells the workbench on its channel.
      const published = await call(platform, 'put', '/policy/v1/organisation', {
        host: '127.0.0.1',
        headers: await admin(),
        body: mergeOverride(DEFAULT_POLICY, { agents: { sandbox: 'off' } }),
      });
      expect(published.status).toBe(200);
      const revision = (published.body as { revision: string }).revision;
      const device = await platform.dataSource.getRepository(DeviceEntity).findOneByOrFail({ organisationId: organisation.id, name: 'Example workbench' });
      expect(device.kind).toBe('workbench');
      await run.line(/^channel {2}policy\.changed$/m);
      await run.line(new RegExp(`^policy {3}revision ${revision} \\(policy\\.changed; published by the organisation\\)$`, 'm'));
    } finally {
      run.stop();
    }
    expect(await run.exited).toBe(0);
    expect(run.stdout).toMatch(/^done {5}stopped$/m);
    expect(run.stderr).toBe('');
    expect(run.stdout).not.toMatch(/platform_(at|rt|dc)_/);
  }, 60_000);
});

describe('its device-code poll', () => {
  it('sends the grant type, the code and a proof, slows down for good on slow_down, and stops on access_denied', async () => {
    // A stand-in token endpoint: what the service answers, in order, whatever the timing.
    const polls: { at: number; body: URLSearchParams; dpop: string | undefined }[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (req.url === '/relay/v1/device/code') {
          res.end(JSON.stringify({ device_code: 'platform_dc_stand_in', user_code: 'BCDF-GHJK', verification_uri: 'http://x/device', verification_uri_complete: 'http://x/device?user_code=BCDF-GHJK', interval: 1, expires_in: 600 }));
          return;
        }
        polls.push({ at: Date.now(), body: new URLSearchParams(text), dpop: req.headers.dpop as string | undefined });
        res.statusCode = 400;
        res.end(JSON.stringify(polls.length === 1 ? { error: 'slow_down', error_description: 'slow down' } : { error: 'access_denied', error_description: 'the person denied it' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = new Example(['--state', join(dir, 'slow.json')], {}, url);
      expect(await run.exited).toBe(1);
      expect(run.stdout).toContain('enrol    waiting for approval (asking every 1 s)…');
      expect(run.stdout).toContain('enrol    the service asked to slow down: asking every 6 s from now on');
      expect(run.stderr).toBe('workbench: enrolment ended: access_denied (the person denied it)\n');
      expect(polls).toHaveLength(2);
      for (const poll of polls) {
        expect(Object.fromEntries(poll.body)).toEqual({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'platform_dc_stand_in' });
        expect(poll.dpop).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
      }
      expect(polls[1]!.at - polls[0]!.at).toBeGreaterThanOrEqual(5_900);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});
