import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { storedDate } from '../../src/db/dates.js';
import { JoinKeyEntity } from '../../src/modules/devices/entities.js';
import { WebSessionEntity } from '../../src/web/device-approval/page-session.js';
import { SignInFlowEntity } from '../../src/modules/signin/entities.js';
import { DAY_MS, SWEEP_KINDS, type SweepKind } from '../../src/sweeper/kinds.js';
import { newId } from '../../src/util/ids.js';
import { runCliCapturing } from '../support/cli.js';
import { mintRun } from '../support/cloud-agents.js';
import { bearer, CONSOLE_REDIRECT, createTeam, emailedSignInCode, emailSignIn, inviteTo, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { call, serverOf } from '../support/platform.js';

/**
 * The sweeper (src/sweeper) on the real app, SQLite here and MariaDB in `npm run test:services`:
 * rows made by the service's own flows go exactly when their kind's grace (or retention) has run
 * out, never a millisecond before; a live row is never touched; reuse detection still works
 * inside the grace; history is kept forever unless a retention setting says otherwise; what it
 * deleted is counted in /metrics and said by `platform sweep`. Two replicas sweeping one MariaDB
 * database: test/services/sweeper-replicas.test.ts.
 */

let platform: CloudPlatform;
let owner: SignedIn;

const RETENTION_EVENTS_DAYS = 30;
const RETENTION_RUN_EVENTS_DAYS = 7;

beforeAll(async () => {
  platform = await startCloud({
    env: { RETENTION_INGEST_EVENTS_DAYS: String(RETENTION_EVENTS_DAYS), RETENTION_RUN_EVENTS_DAYS: String(RETENTION_RUN_EVENTS_DAYS), SWEEPER_BATCH_PAUSE_MS: '0', SWEEPER_BATCH_SIZE: '10' },
  });
  owner = await emailSignIn(platform, 'owner@sweep.test');
});
afterAll(() => platform.close());

const sweep = () => platform.sweeper.sweep({ force: true });

let counter = 0;
/** A name of its own for each thing a test makes. */
const unique = () => `${Date.now().toString(36)}${(counter += 1)}`;

async function keysOf(table: string, key: string, where = '1 = 1'): Promise<string[]> {
  const rows = (await platform.dataSource.query(`SELECT ${key} AS k FROM ${table} WHERE ${where}`)) as { k: unknown }[];
  return rows.map((row) => String(row.k)).sort();
}

async function timesOf(table: string, key: string, column: string, where = '1 = 1'): Promise<Map<string, number>> {
  const rows = (await platform.dataSource.query(`SELECT ${key} AS k, ${column} AS t FROM ${table} WHERE ${where}`)) as { k: unknown; t: unknown }[];
  return new Map(rows.filter((row) => row.t !== null).map((row) => [String(row.k), storedDate(row.t).getTime()]));
}

/** A device of a team of `owner`'s, through the service (its enrolment flows have their own tests). */
async function newDevice(organisationId: string): Promise<EnrolledDevice> {
  return enrolDevice(platform, { organisationId, personId: owner.personId });
}

/** A refresh at the token endpoint, as a device does it. */
function refreshDevice(refreshToken: string) {
  return call(platform, 'post', '/relay/v1/token', { body: { refresh_token: refreshToken } });
}

describe('rows past their use go exactly when their grace has run out, and never a live one', () => {
  /** The kinds whose rows end at `expires_at`, kept a fixed grace after. */
  const simple = SWEEP_KINDS.filter((kind): kind is SweepKind & { keep: { graceMs: number } } => kind.where === 'expires_at < :cutoff' && 'graceMs' in kind.keep);

  it('covers every kind that ends at expires_at', () => {
    expect(simple.map((kind) => kind.name).sort()).toEqual(['device_codes', 'device_tokens', 'email_codes', 'invitations', 'join_keys', 'link_tickets', 'page_sessions', 'session_tokens', 'sign_in_codes', 'sign_in_flows']);
  });

  it('keeps each row until its end plus the grace, deletes it a millisecond later, and touches no row still in use', async () => {
    // One row (at least) of every kind, made by the flows that make them.
    const team = await createTeam(platform, 'Sweep Team', [[owner.personId, 'owner']]);
    const code = await call(platform, 'post', '/relay/v1/device/code', { body: { workspaceId: 'ws-sweep', name: 'Sweeping workbench' } });
    expect(code.status).toBe(200);
    await newDevice(team.id);
    const now = platform.clock.now();
    await platform.dataSource.manager.insert(JoinKeyEntity, {
      id: newId('jk'), organisationId: team.id, createdBy: owner.personId, description: 'sweep', lookup: unique(), secretHash: 'a'.repeat(64),
      reusable: false, expiresAt: new Date(now.getTime() + 3_600_000), usedAt: null, useCount: 0, revokedAt: null, createdAt: now,
    });
    await platform.dataSource.manager.insert(WebSessionEntity, { idHash: 'b'.repeat(64), organisationId: null, stage: 'signing_in', personId: null, stateHash: null, sealed: 'x', expiresAt: new Date(now.getTime() + 600_000), createdAt: now });
    await platform.dataSource.manager.insert(SignInFlowEntity, { stateHash: 'c'.repeat(64), provider: 'google', sealed: 'x', expiresAt: new Date(now.getTime() + 600_000), createdAt: now });
    const link = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) });
    expect(link.status).toBe(200);
    await inviteTo(platform, owner, team.id, 'invitee@sweep.test');
    await emailSignIn(platform, 'second@sweep.test');

    // Each kind's rows, and when each ends.
    const ends = new Map<string, Map<string, number>>();
    for (const kind of simple) {
      const times = await timesOf(kind.table, kind.key, 'expires_at');
      expect(`${kind.name}: ${times.size > 0}`).toBe(`${kind.name}: true`);
      ends.set(kind.name, times);
    }
    // Every moment a row's grace runs out, in order: at that moment it stays, a millisecond later it is gone.
    const moments = [...new Set(simple.flatMap((kind) => [...ends.get(kind.name)!.values()].map((end) => end + kind.keep.graceMs)))].sort((a, b) => a - b);
    let checked = 0;
    for (const moment of moments) {
      for (const [at, gone] of [[moment, false], [moment + 1, true]] as const) {
        platform.clock.set(at);
        await sweep();
        for (const kind of simple) {
          const present = new Set(await keysOf(kind.table, kind.key));
          for (const [key, end] of ends.get(kind.name)!) {
            const due = end + kind.keep.graceMs;
            // Rows whose grace ended before this moment are gone; every other row is untouched.
            const expected = due < at ? false : true;
            if (due === moment) checked += 1;
            expect(`${kind.name} ${key} at end+grace${at - due >= 0 ? '+' : ''}${at - due} ms: ${present.has(key)}`).toBe(`${kind.name} ${key} at end+grace${at - due >= 0 ? '+' : ''}${at - due} ms: ${expected}`);
            if (due === moment && gone) expect(present.has(key)).toBe(false);
          }
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(simple.length * 2);
  });
});

describe('reuse detection inside the grace', () => {
  it('a used device refresh token, replayed just before it expires after a sweep, still revokes every token of its device; after its grace it is gone', async () => {
    const team = await createTeam(platform, 'Refresh Team', [[owner.personId, 'owner']]);
    const device = await newDevice(team.id);
    const rotated = await refreshDevice(device.tokens.refresh_token);
    expect(rotated.status).toBe(200);
    const [usedExpiry] = [...(await timesOf('device_tokens', 'token_hash', 'expires_at')).entries()].filter(([, at]) => at > platform.clock.now().getTime() + 29 * DAY_MS).map(([, at]) => at);
    expect(usedExpiry).toBeDefined();

    platform.clock.set(usedExpiry! - 1_000);
    await sweep();
    const replay = await refreshDevice(device.tokens.refresh_token);
    expect(replay.status).toBe(400);
    expect(replay.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token was already used; every token of this device has been revoked' });
    // The pair it replaced, unused until now, was revoked with it.
    const successor = await refreshDevice(rotated.body.refresh_token);
    expect(successor.body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token was revoked' });

    platform.clock.set(usedExpiry! + DAY_MS + 1);
    await sweep();
    expect((await refreshDevice(device.tokens.refresh_token)).body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token is not valid' });
  });

  it('a one-time sign-in code, replayed a day after it expired (the last moment of its grace) after a sweep, still ends the session it started', async () => {
    const { code, verifier } = await emailedSignInCode(platform, `reuse-${unique()}@sweep.test`);
    const exchange = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT };
    const tokens = await call(platform, 'post', '/auth/v1/token', { body: exchange });
    expect(tokens.status).toBe(200);
    const codeExpiry = Math.max(...(await timesOf('sign_in_codes', 'id', 'expires_at', 'used_at IS NOT NULL')).values());

    // The session is kept alive meanwhile (a refresh a day), as a client would.
    let refresh = tokens.body.refresh_token as string;
    for (let day = platform.clock.now().getTime() + DAY_MS / 2; day < codeExpiry + DAY_MS; day += DAY_MS / 2) {
      platform.clock.set(day);
      const refreshed = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: refresh, client_id: 'console' } });
      expect(refreshed.status).toBe(200);
      refresh = refreshed.body.refresh_token;
    }
    platform.clock.set(codeExpiry + DAY_MS);
    await sweep();
    const replay = await call(platform, 'post', '/auth/v1/token', { body: exchange });
    expect(replay.body).toMatchObject({ error: 'invalid_grant', error_description: 'the code was already used; the session it started has ended' });
    const after = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: refresh, client_id: 'console' } });
    expect(after.body).toMatchObject({ error: 'invalid_grant' });

    platform.clock.set(codeExpiry + DAY_MS + 1);
    await sweep();
    expect((await call(platform, 'post', '/auth/v1/token', { body: exchange })).body).toMatchObject({ error: 'invalid_grant', error_description: 'the code is not valid' });
  });
});

describe('Cloud sessions', () => {
  it('go with their tokens a day after they end; a session in use keeps its own', async () => {
    const leaving = await emailSignIn(platform, `leaving-${unique()}@sweep.test`);
    const staying = await emailSignIn(platform, `staying-${unique()}@sweep.test`);
    const sessionOf = async (person: SignedIn) => (await keysOf('cloud_sessions', 'id', `person_id = '${person.personId}'`))[0]!;
    const leavingSession = await sessionOf(leaving);
    const stayingSession = await sessionOf(staying);
    expect((await call(platform, 'post', '/auth/v1/logout', { headers: bearer(leaving.access_token) })).status).toBe(204);
    const endedAt = platform.clock.now().getTime();

    platform.clock.set(endedAt + DAY_MS);
    await sweep();
    expect(await keysOf('cloud_sessions', 'id', `id = '${leavingSession}'`)).toEqual([leavingSession]);
    platform.clock.set(endedAt + DAY_MS + 1);
    await sweep();
    expect(await keysOf('cloud_sessions', 'id', `id = '${leavingSession}'`)).toEqual([]);
    expect(await keysOf('cloud_session_tokens', 'id', `session_id = '${leavingSession}'`)).toEqual([]);
    // The other session: untouched, and its tokens still work.
    expect(await keysOf('cloud_sessions', 'id', `id = '${stayingSession}'`)).toEqual([stayingSession]);
    const refreshed = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: staying.refresh_token, client_id: 'console' } });
    expect(refreshed.status).toBe(200);
  });

  it('go when never signed out but every token expired and was swept (nothing can use them again)', async () => {
    const idle = await emailSignIn(platform, `idle-${unique()}@sweep.test`);
    const session = (await keysOf('cloud_sessions', 'id', `person_id = '${idle.personId}'`))[0]!;
    const lastExpiry = Math.max(...(await timesOf('cloud_session_tokens', 'id', 'expires_at', `session_id = '${session}'`)).values());
    platform.clock.set(lastExpiry + DAY_MS);
    await sweep();
    expect(await keysOf('cloud_sessions', 'id', `id = '${session}'`)).toEqual([session]);
    platform.clock.set(lastExpiry + DAY_MS + 1);
    await sweep();
    expect(await keysOf('cloud_session_tokens', 'id', `session_id = '${session}'`)).toEqual([]);
    expect(await keysOf('cloud_sessions', 'id', `id = '${session}'`)).toEqual([]);
  });
});

describe('cloud agent runs', () => {
  it("clear a run's credential hash a day after it expired, and keep the run", async () => {
    const team = await createTeam(platform, `Runs ${unique()}`, [[owner.personId, 'owner']]);
    const expired = await mintRun(platform, team.id);
    const expiry = (await timesOf('cloud_agent_runs', 'id', 'expires_at', `id = '${expired.runId}'`)).get(expired.runId);
    platform.clock.set(expiry! + DAY_MS);
    const live = await mintRun(platform, team.id);
    await sweep();
    expect(await keysOf('cloud_agent_runs', 'id', 'credential_hash IS NOT NULL')).toEqual(expect.arrayContaining([expired.runId, live.runId]));
    platform.clock.set(expiry! + DAY_MS + 1);
    const result = await sweep();
    expect(result.deleted.run_credentials).toBeGreaterThanOrEqual(1);
    expect(await keysOf('cloud_agent_runs', 'id', 'credential_hash IS NOT NULL')).toContain(live.runId);
    expect(await keysOf('cloud_agent_runs', 'id', 'credential_hash IS NOT NULL')).not.toContain(expired.runId);
    expect(await keysOf('cloud_agent_runs', 'id', `id = '${expired.runId}'`)).toEqual([expired.runId]);
    // The live run's credential still works.
    const mcp = await call(platform, 'post', `/cloud-agents/v1/runs/${live.runId}/mcp`, { headers: { ...live.headers, Accept: 'application/json, text/event-stream' }, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    expect(mcp.status).toBe(202);
  });
});

describe('history by age', () => {
  it('deletes ingest events past RETENTION_INGEST_EVENTS_DAYS, and keeps usage, audit and tasks, which have no retention set, forever', async () => {
    const team = await createTeam(platform, `Ingest ${unique()}`, [[owner.personId, 'owner']]);
    const project = await platform.services.projects.create(team.id, { name: 'Ingest' });
    const device = await newDevice(team.id);
    const sentAt = platform.clock.now();
    const body = {
      schemaVersion: 1,
      projectId: project.id,
      workspaceId: 'ws-1',
      sentAt: sentAt.toISOString(),
      cursors: { events: -1 },
      events: [{ seq: 1, id: 'e1', at: sentAt.toISOString(), kind: 'tool.called', data: {} }],
      usage: [{ id: 'u1', at: sentAt.toISOString(), provider: 'p', model: 'm', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0 }],
      audit: [{ id: 'a1', at: sentAt.toISOString(), actor: 'me', action: 'command.run' }],
      tasks: [{ id: 't1', title: 'T', status: 'pending', createdAt: sentAt.toISOString(), updatedAt: sentAt.toISOString() }],
    };
    const res = await call(platform, 'post', '/ingest/v1', { headers: await deviceHeaders(device, 'POST', 'https://platform.test/ingest/v1'), body });
    expect(res.status).toBe(200);
    const mine = `device_id = '${device.device.id}'`;
    const received = Math.max(...(await timesOf('ingest_events', 'row_id', 'received_at', mine)).values());

    platform.clock.set(received + RETENTION_EVENTS_DAYS * DAY_MS);
    await sweep();
    expect(await keysOf('ingest_events', 'row_id', mine)).toHaveLength(1);
    platform.clock.set(received + RETENTION_EVENTS_DAYS * DAY_MS + 1);
    await sweep();
    expect(await keysOf('ingest_events', 'row_id', mine)).toEqual([]);

    platform.clock.set(received + 3650 * DAY_MS);
    await sweep();
    for (const table of ['ingest_usage', 'ingest_audit', 'ingest_tasks']) expect(`${table}: ${(await keysOf(table, 'row_id', mine)).length}`).toBe(`${table}: 1`);
  });

  it('deletes run events past RETENTION_RUN_EVENTS_DAYS, then the runs that ended before it once their events are gone', async () => {
    const team = await createTeam(platform, `Run history ${unique()}`, [[owner.personId, 'owner']]);
    const run = await mintRun(platform, team.id);
    const report = await call(platform, 'post', `/cloud-agents/v1/runs/${run.runId}/events`, {
      headers: await deviceHeaders(run.workbench, 'POST', `https://platform.test/cloud-agents/v1/runs/${run.runId}/events`),
      body: { events: [{ at: platform.clock.now().toISOString(), kind: 'started' }] },
    });
    expect(report.status).toBeLessThan(300);
    const ended = await call(platform, 'post', `/cloud-agents/v1/runs/${run.runId}/end`, {
      headers: await deviceHeaders(run.workbench, 'POST', `https://platform.test/cloud-agents/v1/runs/${run.runId}/end`),
      body: {},
    });
    expect(ended.status).toBeLessThan(300);
    const mine = `run_id = '${run.runId}'`;
    const received = Math.max(...(await timesOf('cloud_agent_run_events', 'row_id', 'received_at', mine)).values());
    const expiry = (await timesOf('cloud_agent_runs', 'id', 'expires_at', `id = '${run.runId}'`)).get(run.runId);

    platform.clock.set(received + RETENTION_RUN_EVENTS_DAYS * DAY_MS);
    await sweep();
    expect(await keysOf('cloud_agent_run_events', 'row_id', mine)).toHaveLength(1);
    platform.clock.set(received + RETENTION_RUN_EVENTS_DAYS * DAY_MS + 1);
    await sweep();
    expect(await keysOf('cloud_agent_run_events', 'row_id', mine)).toEqual([]);
    // The run's credential would have expired by now; the run ended long before the retention.
    platform.clock.set(Math.max(received, expiry!) + RETENTION_RUN_EVENTS_DAYS * DAY_MS + 1);
    await sweep();
    expect(await keysOf('cloud_agent_runs', 'id', `id = '${run.runId}'`)).toEqual([]);
  });
});

describe('what the sweeper says', () => {
  it('skips a sweep an interval has not passed since, unless forced', async () => {
    await platform.sweeper.sweep({ force: true });
    platform.clock.advance(60_000);
    const again = await platform.sweeper.sweep();
    expect(again).toMatchObject({ outcome: 'skipped', reason: 'swept less than an interval ago' });
    platform.clock.advance(300_000);
    expect((await platform.sweeper.sweep()).outcome).toBe('swept');
  });

  it('counts the rows it deleted by kind in /metrics, with when it last ran', async () => {
    const team = await createTeam(platform, `Metrics ${unique()}`, [[owner.personId, 'owner']]);
    const device = await newDevice(team.id);
    const expiry = platform.clock.now().getTime() + 3_600_000;
    const text = async () => (await request(serverOf(platform.app)).get('/metrics')).text;
    const families = async () => new Map(parsePrometheusTextFormat(await text()).map((family) => [family.name, family]));
    const deletedOf = (family: { metrics: { labels?: Record<string, string>; value?: string }[] } | undefined, kind: string) => Number(family?.metrics.find((m) => m.labels?.kind === kind)?.value ?? NaN);
    const before = await families();
    for (const kind of SWEEP_KINDS) expect(`${kind.name} ${Number.isNaN(deletedOf(before.get('platform_sweeper_rows_deleted_total'), kind.name))}`).toBe(`${kind.name} false`);
    platform.clock.set(expiry + DAY_MS + 1);
    const result = await sweep();
    expect(result.deleted.device_tokens).toBeGreaterThanOrEqual(1);
    const after = await families();
    expect(deletedOf(after.get('platform_sweeper_rows_deleted_total'), 'device_tokens') - deletedOf(before.get('platform_sweeper_rows_deleted_total'), 'device_tokens')).toBe(result.deleted.device_tokens);
    expect(Number(after.get('platform_sweeper_last_run_timestamp_seconds')?.metrics[0]?.value)).toBe(result.lastRun!.getTime() / 1000);
    expect(after.get('platform_sweeper_runs_total')?.metrics.map((m) => m.labels?.outcome).sort()).toEqual(['failed', 'skipped', 'swept']);
    expect(device.device.id).toBeDefined();
  });

  it('`platform sweep --dry-run` says what would go, by kind, and deletes nothing; `platform sweep` deletes it', async () => {
    const team = await createTeam(platform, `CLI ${unique()}`, [[owner.personId, 'owner']]);
    await newDevice(team.id);
    platform.clock.advance(31 * DAY_MS + 1);
    const deps = { env: { DATABASE_URL: platform.database.url, PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://platform.test', RETENTION_INGEST_EVENTS_DAYS: '30', LOG_LEVEL: 'warn' }, dataSource: platform.dataSource, clock: platform.clock };
    const before = await keysOf('device_tokens', 'id');
    const cutoff = new Date(platform.clock.now().getTime() - DAY_MS).toISOString();
    const due = (await keysOf('device_tokens', 'id')).length - [...(await timesOf('device_tokens', 'id', 'expires_at')).values()].filter((at) => at >= Date.parse(cutoff)).length;
    expect(due).toBeGreaterThanOrEqual(2);
    const dry = await runCliCapturing(['sweep', '--dry-run', '--json'], deps);
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout) as { dryRun: boolean; total: number; kinds: { kind: string; rows: number | null; kept: string }[] };
    expect(plan.dryRun).toBe(true);
    expect(plan.kinds.map((kind) => kind.kind)).toEqual(SWEEP_KINDS.map((kind) => kind.name));
    expect(plan.kinds.find((kind) => kind.kind === 'device_tokens')).toEqual({ kind: 'device_tokens', table: 'device_tokens', rows: due, kept: '1 day' });
    expect(plan.kinds.find((kind) => kind.kind === 'ingest_usage')).toEqual({ kind: 'ingest_usage', table: 'ingest_usage', rows: null, kept: 'forever (RETENTION_INGEST_USAGE_DAYS unset)' });
    expect(plan.kinds.find((kind) => kind.kind === 'ingest_events')?.kept).toBe('RETENTION_INGEST_EVENTS_DAYS=30');
    expect(await keysOf('device_tokens', 'id')).toEqual(before);

    const text = await runCliCapturing(['sweep', '--dry-run'], deps);
    expect(text.stdout).toMatch(/^A sweep now would delete \d+ rows \(nothing was deleted: --dry-run\):\nKIND +TABLE +ROWS +KEPT AFTER ITS END\n/);
    expect(text.stdout).toMatch(new RegExp(`^device_tokens +device_tokens +${due} +1 day$`, 'm'));

    const swept = await runCliCapturing(['sweep'], deps);
    expect(swept.code).toBe(0);
    expect(swept.stdout).toMatch(/^Deleted \d+ rows\.\nKIND +ROWS\n/);
    expect(swept.stdout).toMatch(new RegExp(`^device_tokens +${due}$`, 'm'));
    expect(await keysOf('device_tokens', 'id')).toHaveLength(before.length - due);
  });
});
