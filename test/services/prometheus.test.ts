import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments, stringify } from 'yaml';
import { renderChart } from '../../scripts/chart.mjs';
import { seedPlatform } from '../bench/fixtures.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/redis-server.js';
import { startService, type ServiceProcess } from '../support/service-process.js';

/**
 * The chart's dashboard and alerts against a real Prometheus (Debian's `prometheus` package; the
 * test fails, never skips, without it): Prometheus scrapes a running service (src/main.ts on
 * MariaDB and Redis) every second while it serves a short load of every kind the dashboard shows
 * (policy reads, ingest, refused tokens, a token sent without its DPoP proof, enough device codes
 * to meet the rate limit, readiness probes), and its sweeper runs; then every query of every
 * panel of the dashboard the chart ships is evaluated through Prometheus's HTTP API, and each
 * must return data. The alerts the chart ships are loaded into the same Prometheus: each must
 * evaluate without an error, and none may fire on this healthy service.
 */

const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';
const HOST = 'metrics.test';

let database: TestDatabase;
let service: ServiceProcess;
let prometheus: ChildProcess | undefined;
let prometheusUrl: string;
let dir: string;
let dashboard: { panels: { type: string; title: string; targets?: { expr: string }[] }[] };
let tokens: { bearer: string; dpop: string; ingest: string; projectId: string; workspaceId: string };

/** One request to the service, with a Host header of our choosing. */
function send(method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      { host: '127.0.0.1', port: service.port, method, path, headers: { Host: HOST, ...(text ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } : {}), ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

async function query(expr: string): Promise<{ status: string; data: { result: unknown[] }; error?: string }> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  return (await res.json()) as { status: string; data: { result: unknown[] }; error?: string };
}

async function until<T>(what: string, find: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find().catch(() => undefined);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'platform-prometheus-'));
  // What the chart ships: its dashboard and its alerts, rendered by helm.
  const rendered = await renderChart([], { 'metrics.dashboards.enabled': true, 'metrics.prometheusRule.enabled': true });
  if (!rendered.ok) throw new Error(rendered.error);
  const objects = parseAllDocuments(rendered.manifest).map((document) => document.toJS() as { kind: string; metadata: { name: string }; data?: Record<string, string>; spec?: unknown } | null);
  dashboard = JSON.parse(objects.find((object) => object?.kind === 'ConfigMap' && object.metadata.name === 'platform-dashboard')!.data!['platform-api.json']!) as typeof dashboard;
  writeFileSync(join(dir, 'rules.yaml'), stringify(objects.find((object) => object?.kind === 'PrometheusRule')!.spec));

  database = await freshDatabase();
  const env = { DATABASE_URL: database.url, PLATFORM_BOOTSTRAP_LOCALHOST: 'false', RATE_LIMITS_ENABLED: 'true' };
  const seeded = await seedPlatform({
    env,
    host: HOST,
    oidc: { issuer: 'https://idp.metrics.test', clientId: 'platform', apiScope: 'platform', audience: 'platform' },
    policyDpopJkt: 'A'.repeat(43),
    ingestDevices: 1,
  });
  tokens = { bearer: seeded.policy!.bearerToken, dpop: seeded.policy!.dpopToken, ingest: seeded.ingest[0]!.accessToken, projectId: seeded.projectId, workspaceId: seeded.ingest[0]!.workspaceId };
  service = await startService({ ...env, REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', SWEEPER_INTERVAL_SECONDS: '10', LOG_LEVEL: 'warn' }, 60_000);

  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  // The labels a ServiceMonitor gives the series (job: the Service's name; namespace), so the chart's alerts select them.
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: ['rules.yaml'],
      scrape_configs: [{ job_name: 'platform', metrics_path: '/metrics', static_configs: [{ targets: [`127.0.0.1:${service.port}`], labels: { namespace: 'platform' } }] }],
    }),
  );
  prometheus = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  prometheus.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-5_000)));
  const started = await new Promise<Error | undefined>((resolve) => {
    prometheus!.once('error', (error) => resolve(new Error(`${PROMETHEUS} could not be started (${error.message}): install Debian's prometheus package (apt-get install -y prometheus), or set PROMETHEUS`)));
    prometheus!.once('spawn', () => resolve(undefined));
  });
  if (started) throw started;
  await until('Prometheus to scrape the service', async () => {
    const up = await query('up{job="platform"}');
    return (up.data.result[0] as { value: [number, string] } | undefined)?.value[1] === '1' ? true : undefined;
  }).catch((error: Error) => {
    throw new Error(`${error.message}\n${stderr}`);
  });

  // The load: 15 seconds of every kind of request the dashboard shows.
  const device = (token: string) => ({ Authorization: `Bearer ${token}` });
  const envelope = (seq: number) => ({
    schemaVersion: 1,
    projectId: tokens.projectId,
    workspaceId: tokens.workspaceId,
    sentAt: new Date().toISOString(),
    cursors: { events: seq - 1 },
    events: [{ seq, id: `e${seq}`, at: new Date().toISOString(), kind: 'tool.called', data: {} }],
    usage: [],
    audit: [],
    tasks: [],
  });
  const statuses = new Map<number, number>();
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const end = Date.now() + 15_000;
  let seq = 0;
  let codes = 0;
  while (Date.now() < end) {
    const batch: Promise<number>[] = [];
    for (let i = 0; i < 8; i++) batch.push(send('GET', '/policy/v1', device(tokens.bearer)));
    batch.push(send('GET', '/.well-known/platform.json'));
    batch.push(send('GET', '/readyz'));
    batch.push(send('GET', '/policy/v1', device('platform_at_not-a-token')));
    // A token bound to a key, sent without its proof.
    batch.push(send('GET', '/policy/v1', device(tokens.dpop)));
    seq += 1;
    batch.push(send('POST', '/ingest/v1', device(tokens.ingest), envelope(seq)));
    // 60 device codes a minute per address: the rest are refused (429).
    if (codes < 70) {
      codes += 1;
      batch.push(send('POST', '/relay/v1/device/code', {}, { workspaceId: 'ws-metrics', name: 'Metrics workbench' }));
    }
    for (const status of await Promise.all(batch)) count(status);
  }
  expect(Object.fromEntries(statuses)).toEqual({ 200: expect.any(Number), 401: expect.any(Number), 429: expect.any(Number) });
  // A sweep has run (every 10 s here), and Prometheus has scraped what the load left.
  await until('a sweep', async () => {
    const last = await query('max(platform_sweeper_last_run_timestamp_seconds{job="platform"}) > 0');
    return last.data.result.length ? true : undefined;
  });
  await new Promise((resolve) => setTimeout(resolve, 2_000));
}, 180_000);

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await service?.stop();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A panel's query as Grafana sends it: the dashboard's variables filled in. */
function asGrafanaSends(expr: string): string {
  return expr.replaceAll('$job', 'platform').replaceAll('$instance', '.+').replaceAll('$__rate_interval', '1m');
}

describe("the chart's dashboard against a real Prometheus scraping the service", () => {
  it('has every panel\'s every query answered with data', async () => {
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(panels.length).toBe(19);
    const empty: string[] = [];
    for (const panel of panels) {
      for (const target of panel.targets ?? []) {
        const answer = await query(asGrafanaSends(target.expr));
        if (answer.status !== 'success') empty.push(`${panel.title}: ${answer.error ?? answer.status} (${target.expr})`);
        else if (answer.data.result.length === 0) empty.push(`${panel.title}: no data (${target.expr})`);
      }
    }
    expect(empty).toEqual([]);
  });

  it('has a check that can fail: a query of a metric the service does not have returns no data', async () => {
    expect((await query(asGrafanaSends('sum(rate(platform_no_such_metric_total{job=~"$job"}[$__rate_interval]))'))).data.result).toEqual([]);
  });

  it('shows what the load did: 429s on the rate-limited route, DPoP refusals, stored ingest items, the sweeper\'s turns', async () => {
    const value = async (expr: string) => Number(((await query(expr)).data.result[0] as { value: [number, string] } | undefined)?.value[1] ?? NaN);
    // Counted since the service started (the refusals may all fall between two scrapes).
    expect(await value('sum(platform_http_requests_total{job="platform", route="/relay/v1/device/code", status="429"})')).toBeGreaterThan(0);
    expect(await value('sum(platform_token_verifications_total{job="platform", outcome="invalid_dpop_proof"})')).toBeGreaterThan(0);
    expect(await value('sum(platform_ingest_items_total{job="platform", kind="events", outcome="stored"})')).toBeGreaterThan(0);
    expect(await value('sum(platform_sweeper_runs_total{job="platform", outcome="swept"})')).toBeGreaterThanOrEqual(1);
    expect(await value('min(platform_redis_up{job="platform"})')).toBe(1);
  });
});

describe("the chart's alerts in the same Prometheus", () => {
  it('are all loaded and evaluated without an error, and none is even pending on the healthy service', async () => {
    const answer = (await (await fetch(`${prometheusUrl}/api/v1/rules?type=alert`)).json()) as { data: { groups: { rules: { name: string; health: string; state: string; lastError?: string }[] }[] } };
    const rules = answer.data.groups.flatMap((group) => group.rules);
    expect(rules.map((rule) => rule.name).sort()).toEqual(
      ['PlatformDatabaseUnreachable', 'PlatformHighErrorRatio', 'PlatformHighLatency', 'PlatformMailSpike', 'PlatformNotReady', 'PlatformRedisUnreachable', 'PlatformSweeperNotRunning', 'PlatformTokenCheckFailures'],
    );
    const evaluated = await until('every rule to be evaluated', async () => {
      const again = (await (await fetch(`${prometheusUrl}/api/v1/rules?type=alert`)).json()) as typeof answer;
      const all = again.data.groups.flatMap((group) => group.rules);
      return all.every((rule) => rule.health === 'ok') ? all : undefined;
    });
    // Not even pending: no alert's condition holds on this service (each fires on its own series: test/deploy/alerts.test.ts).
    expect(evaluated.map((rule) => `${rule.name}: ${rule.state}${rule.lastError ? ` ${rule.lastError}` : ''}`)).toEqual(evaluated.map((rule) => `${rule.name}: inactive`));
    const alerts = (await (await fetch(`${prometheusUrl}/api/v1/alerts`)).json()) as { data: { alerts: unknown[] } };
    expect(alerts.data.alerts).toEqual([]);
  });
});
