import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import parsePrometheusTextFormat, { type MetricFamily, type Sample } from 'parse-prometheus-text-format';
import request from 'supertest';
import { call, createOrganisation, listen, startPlatform, unreachableRedis, type TestPlatform } from '../support/platform.js';
import { createPerson, deviceHeaders, enrolDevice, type EnrolledDevice } from '../support/devices.js';
import { TestIdentityProvider } from '../support/idp.js';
import { TestWorkbench } from '../support/workbench.js';
import { recordSecret } from '../support/suite-record.js';
import { loadConfig } from '../../src/config.js';

// GET /metrics: Prometheus text, parsed with parse-prometheus-text-format (prom2json's output
// shape). Counters are compared before and after the requests that move them.

/** Every sample line of the exposition format: `name{labels} value`, nothing else. */
const SAMPLE_LINE = /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*",?)*\})? -?([0-9.e+-]+|NaN|Nan|\+Inf|-Inf)$/;

async function scrape(platform: TestPlatform, headers: Record<string, string> = {}, host = '10.42.0.17:3000'): Promise<{ text: string; families: Map<string, MetricFamily> }> {
  let test = request(platform.app).get('/metrics').set('Host', host);
  for (const [name, value] of Object.entries(headers)) test = test.set(name, value);
  const res = await test;
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  expect(res.headers['cache-control']).toBe('no-store');
  for (const line of res.text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    expect(line).toMatch(SAMPLE_LINE);
  }
  return { text: res.text, families: parseFamilies(res.text) };
}

/**
 * The families by name. parse-prometheus-text-format folds every series of a histogram into one
 * sample and drops their labels (its `flattenMetrics`), so histograms are read a second time
 * with their TYPE line set to untyped: their `_bucket`, `_sum` and `_count` lines then come out as
 * families of their own, labels kept.
 */
function parseFamilies(text: string): Map<string, MetricFamily> {
  const families = new Map(parsePrometheusTextFormat(text).map((family) => [family.name, family]));
  const series = parsePrometheusTextFormat(text.replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped'));
  for (const family of series) {
    if (!/_(bucket|sum|count)$/.test(family.name)) continue;
    // One family per series here (prom-client writes each series' lines together): merge them.
    const known = families.get(family.name);
    if (known) known.metrics.push(...family.metrics);
    else families.set(family.name, family);
  }
  return families;
}

function samples(families: Map<string, MetricFamily>, name: string): Sample[] {
  return families.get(name)?.metrics ?? [];
}

/** The value of the one sample of `name` with exactly these labels (0 when there is none yet). */
function value(families: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}): number {
  const found = samples(families, name).filter((sample) => sameLabels(sample.labels ?? {}, labels));
  if (found.length > 1) throw new Error(`${name} has ${found.length} samples labelled ${JSON.stringify(labels)}`);
  const sample = found[0];
  if (!sample) return 0;
  return Number(sample.value ?? sample.count);
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}

describe('GET /metrics without METRICS_TOKEN', () => {
  let platform: TestPlatform;
  let idp: TestIdentityProvider;
  let host: string;
  let projectId: string;
  let adminToken: string;
  let device: EnrolledDevice;

  beforeAll(async () => {
    platform = await startPlatform();
    idp = await TestIdentityProvider.start({ clock: platform.clock });
    const organisation = await createOrganisation(platform, { name: 'Metrics Org', oidc: idp.settings({ roleClaim: 'platform_role' }), hosts: ['127.0.0.1', `metrics-${Date.now()}.test`] });
    host = (await platform.services.organisations.hostsOf(organisation.id)).find((name) => name.endsWith('.test'))!;
    const admin = await createPerson(platform, organisation.id, 'admin');
    projectId = (await platform.services.projects.create(organisation.id, { name: 'Measured', owner: admin.id })).id;
    adminToken = await idp.mint({ sub: 'metrics-admin', claims: { platform_role: 'admin' } });
    device = await enrolDevice(platform, { organisationId: organisation.id, personId: admin.id, alg: 'ES256' });
  });
  afterAll(async () => {
    await idp.close();
    await platform.close();
  });

  it('counts requests by route template and status, never by path, and times them', async () => {
    const before = (await scrape(platform)).families;
    const auth = { Authorization: `Bearer ${adminToken}` };
    expect((await call(platform, 'get', `/platform/v1/projects/${projectId}`, { host, headers: auth })).status).toBe(200);
    expect((await call(platform, 'get', `/platform/v1/projects/${projectId}`, { host, headers: auth })).status).toBe(200);
    expect((await call(platform, 'get', '/platform/v1/projects/prj_nothing_here', { host, headers: auth })).status).toBe(404);
    expect((await call(platform, 'get', `/no/such/route/${projectId}/secret-path-part`, { host })).status).toBe(404);
    expect((await call(platform, 'delete', '/healthz', { host })).status).toBe(405);
    const { text, families } = await scrape(platform);

    const template = '/platform/v1/projects/{projectId}';
    const delta = (labels: Record<string, string>) => value(families, 'platform_http_requests_total', labels) - value(before, 'platform_http_requests_total', labels);
    expect(delta({ method: 'GET', route: template, status: '200' })).toBe(2);
    expect(delta({ method: 'GET', route: template, status: '404' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(delta({ method: 'DELETE', route: 'unmatched', status: '405' })).toBe(1);
    // The scrape before this one is counted too, by its own route.
    expect(value(families, 'platform_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);

    expect(families.get('platform_http_request_duration_seconds')!.type).toBe('HISTOGRAM');
    const series = { method: 'GET', route: template, status: '200' };
    const count = value(families, 'platform_http_request_duration_seconds_count', series);
    expect(count).toBe(value(families, 'platform_http_requests_total', series));
    expect(value(families, 'platform_http_request_duration_seconds_bucket', { ...series, le: '+Inf' })).toBe(count);
    expect(value(families, 'platform_http_request_duration_seconds_sum', series)).toBeGreaterThan(0);

    // No path as sent, no identifier, no host name, no token anywhere in the answer.
    for (const family of ['platform_http_requests_total', 'platform_http_request_duration_seconds_count']) {
      for (const sample of samples(families, family)) expect(sample.labels!.route).toMatch(/^(unmatched|\/[a-z0-9/{}._-]*)$/i);
    }
    for (const leak of [projectId, 'prj_nothing_here', 'secret-path-part', host, adminToken, device.tokens.access_token]) expect(text).not.toContain(leak);
  });

  it('counts token verifications by kind and outcome', async () => {
    const before = (await scrape(platform)).families;
    const url = `http://${host}/ingest/v1`;
    expect((await call(platform, 'get', '/platform/v1/projects', { host, headers: { Authorization: `Bearer ${adminToken}` } })).status).toBe(200);
    expect((await call(platform, 'get', '/platform/v1/projects', { host, headers: { Authorization: 'Bearer not-a-token' } })).status).toBe(401);
    expect((await call(platform, 'get', '/platform/v1/projects', { host })).status).toBe(401);
    const body = { schemaVersion: 1, projectId, workspaceId: 'ws-m', sentAt: platform.clock.now().toISOString(), cursors: { events: -1 }, events: [], usage: [], audit: [], tasks: [] };
    expect((await call(platform, 'post', '/ingest/v1', { host, headers: await deviceHeaders(device, 'POST', url), body })).status).toBe(200);
    // A proof for another URL: the DPoP-bound token is refused for its proof.
    expect((await call(platform, 'post', '/ingest/v1', { host, headers: await deviceHeaders(device, 'POST', `http://${host}/elsewhere`), body })).status).toBe(401);
    const { families } = await scrape(platform);
    const delta = (labels: Record<string, string>) => value(families, 'platform_token_verifications_total', labels) - value(before, 'platform_token_verifications_total', labels);
    expect(delta({ kind: 'person', outcome: 'ok' })).toBe(1);
    expect(delta({ kind: 'unrecognised', outcome: 'unauthorized' })).toBe(1);
    expect(delta({ kind: 'none', outcome: 'unauthorized' })).toBe(1);
    expect(delta({ kind: 'device_dpop', outcome: 'ok' })).toBe(1);
    expect(delta({ kind: 'device_dpop', outcome: 'invalid_dpop_proof' })).toBe(1);
  });

  it('counts ingest items stored and held already, by kind', async () => {
    const before = (await scrape(platform)).families;
    const url = `http://${host}/ingest/v1`;
    const events = [1, 2, 3].map((seq) => ({ seq, id: `m-${seq}`, at: new Date(Date.UTC(2026, 10, 1, 12, 0, seq)).toISOString(), kind: 'tool.called', data: { n: seq } }));
    const usage = [{ id: 'mu1', at: '2026-11-01T12:00:00.000Z', provider: 'anthropic', model: 'claude', inputTokens: 1, outputTokens: 1, cachedTokens: 0, cost: 0.01 }];
    const body = { schemaVersion: 1, projectId, workspaceId: 'ws-items', sentAt: platform.clock.now().toISOString(), cursors: { events: -1 }, events, usage, audit: [], tasks: [] };
    expect((await call(platform, 'post', '/ingest/v1', { host, headers: await deviceHeaders(device, 'POST', url), body })).body.accepted).toEqual({ events: 3, usage: 1, audit: 0, tasks: 0 });
    expect((await call(platform, 'post', '/ingest/v1', { host, headers: await deviceHeaders(device, 'POST', url), body })).body.accepted).toEqual({ events: 0, usage: 0, audit: 0, tasks: 0 });
    const { families } = await scrape(platform);
    const delta = (labels: Record<string, string>) => value(families, 'platform_ingest_items_total', labels) - value(before, 'platform_ingest_items_total', labels);
    expect(delta({ kind: 'events', outcome: 'stored' })).toBe(3);
    expect(delta({ kind: 'events', outcome: 'duplicate' })).toBe(3);
    expect(delta({ kind: 'usage', outcome: 'stored' })).toBe(1);
    expect(delta({ kind: 'usage', outcome: 'duplicate' })).toBe(1);
    expect(delta({ kind: 'audit', outcome: 'stored' })).toBe(0);
  });

  it('shows the entries of each bounded in-process cache', async () => {
    const { families } = await scrape(platform);
    const caches = ['deviceTokens', 'personTokens', 'cloudSessions', 'policyLatestNumbers', 'policyAnswers', 'policyLayers'];
    for (const cache of caches) expect(value(families, 'platform_cache_entries', { cache })).toBe(platform.cacheSizes()[cache]);
    expect(Object.keys(platform.cacheSizes()).sort()).toEqual([...caches].sort());
    // A policy poll with a device token fills the device token and publish number caches.
    const url = `http://${host}/policy/v1`;
    expect((await call(platform, 'get', '/policy/v1', { host, headers: await deviceHeaders(device, 'GET', url) })).status).toBe(200);
    const after = (await scrape(platform)).families;
    expect(value(after, 'platform_cache_entries', { cache: 'deviceTokens' })).toBeGreaterThan(0);
    expect(value(after, 'platform_cache_entries', { cache: 'policyLatestNumbers' })).toBeGreaterThan(0);
  });

  it('shows the relay connections this replica holds', async () => {
    const server = await listen(platform);
    try {
      expect(value((await scrape(platform)).families, 'platform_relay_connections')).toBe(0);
      const workbench = await TestWorkbench.connect(server.origin, device, platform.clock);
      expect(value((await scrape(platform)).families, 'platform_relay_connections')).toBe(1);
      workbench.close();
      await workbench.closed;
      for (let i = 0; i < 50 && platform.services.relay.size > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(value((await scrape(platform)).families, 'platform_relay_connections')).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('describes the database, its pool with MySQL or MariaDB, and the process', async () => {
    const { families } = await scrape(platform);
    const driver = String(platform.dataSource.options.type);
    expect(value(families, 'platform_database_info', { driver })).toBe(1);
    if (driver === 'better-sqlite3') {
      // One connection in the process: no pool to show.
      expect(families.has('platform_database_pool_connections')).toBe(false);
    } else {
      expect(value(families, 'platform_database_pool_connections', { state: 'limit' })).toBe(10);
      expect(value(families, 'platform_database_pool_connections', { state: 'open' })).toBeGreaterThanOrEqual(1);
      expect(value(families, 'platform_database_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
      expect(value(families, 'platform_database_pool_waiting')).toBe(0);
    }
    // Without REDIS_URL there is no Redis to be up or down.
    expect(families.has('platform_redis_up')).toBe(false);
    // The default process metrics.
    expect(value(families, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(families.has('nodejs_eventloop_lag_seconds')).toBe(true);
  });

  it('is described metric by metric in the table of docs/operations/metrics.md', async () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'operations', 'metrics.md'), 'utf8');
    const section = doc.slice(doc.indexOf('# Reading metrics'), doc.indexOf('\n## ', doc.indexOf('# Reading metrics') + 1));
    const documented = new Set([...section.matchAll(/^\| `(platform_[a-z_]+)/gm)].map((match) => match[1]!));
    const exposed = new Set([...(await scrape(platform)).families.keys()].filter((name) => name.startsWith('platform_')).map((name) => name.replace(/_(bucket|sum|count)$/, '')));
    // Only with MySQL/MariaDB, only with Redis.
    const conditional = ['platform_database_pool_connections', 'platform_database_pool_waiting', 'platform_redis_up', 'platform_database_reads_total'];
    expect([...exposed].filter((name) => !documented.has(name))).toEqual([]);
    expect([...documented].filter((name) => !exposed.has(name) && !conditional.includes(name))).toEqual([]);
    expect(conditional.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('answers at any host name, without tenancy, and only GET or HEAD', async () => {
    for (const name of ['10.1.2.3:3000', 'unknown.example', '[::1]:3000']) await scrape(platform, {}, name);
    expect((await request(platform.app).head('/metrics').set('Host', '10.1.2.3')).status).toBe(200);
    const post = await request(platform.app).post('/metrics').set('Host', '10.1.2.3');
    expect(post.status).toBe(405);
    expect(post.body).toMatchObject({ error: 'method_not_allowed' });
    expect(post.headers.allow).toBe('GET, HEAD');
  });
});

describe('GET /metrics with METRICS_TOKEN', () => {
  const token = 'mtk_3b7c0f2e9a8d41c6b5e4f3a2d1c0b9a8';
  let platform: TestPlatform;

  beforeAll(async () => {
    recordSecret(token);
    platform = await startPlatform({ env: { METRICS_TOKEN: token } });
  });
  afterAll(() => platform.close());

  it('refuses a scrape without the token, or with another, with 401 and a challenge', async () => {
    for (const authorization of [undefined, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, 'Bearer ', `Basic ${Buffer.from(`x:${token}`).toString('base64')}`, token]) {
      let test = request(platform.app).get('/metrics').set('Host', '10.1.2.3:3000');
      if (authorization !== undefined) test = test.set('Authorization', authorization);
      const res = await test;
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: 'unauthorized' });
      expect(res.headers['www-authenticate']).toBe('Bearer realm="metrics"');
      expect(res.text).not.toContain('platform_http_requests_total');
    }
  });

  it('answers with the token, and never shows it', async () => {
    const { text } = await scrape(platform, { Authorization: `Bearer ${token}` });
    expect(text).toContain('platform_http_requests_total');
    expect(value(parseFamilies(text), 'platform_http_requests_total', { method: 'GET', route: '/metrics', status: '401' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(token);
    for (const line of platform.logs) expect(JSON.stringify(line)).not.toContain(token);
  });

  it('is refused at start when too short or holding spaces, without showing it', () => {
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN: must be 16 to 512 visible ASCII characters/);
    expect(() => loadConfig({ METRICS_TOKEN: 'a long token with spaces' })).toThrow(/the value is not shown/);
    expect(() => loadConfig({ METRICS_TOKEN: 'a long token with spaces' })).not.toThrow(/spaces"/);
  });
});

describe('platform_redis_up', () => {
  it('is 0 while the Redis client is not connected', async () => {
    const redis = await unreachableRedis();
    const platform = await startPlatform({ redis });
    try {
      expect(value((await scrape(platform)).families, 'platform_redis_up')).toBe(0);
    } finally {
      await platform.close();
      redis.disconnect();
    }
  });
});
