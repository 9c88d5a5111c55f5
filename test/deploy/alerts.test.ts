import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseAllDocuments, stringify } from 'yaml';
import { renderChart } from '../../scripts/chart.mjs';

/**
 * The chart's alerts and dashboard, proven with a real Prometheus's own tool: the PrometheusRule
 * rendered by helm is a rule file promtool checks (`promtool check rules`), and every alert fires
 * on a synthetic series that should fire it, with its labels and annotations (runbook included),
 * and stays quiet on the series of a healthy service (`promtool test rules`). Both are off by
 * default. Debian's `prometheus` package brings promtool (.ci/run installs it when missing); the
 * test fails, never skips, without it. The dashboard's queries meet a real Prometheus scraping a
 * running service in test/services/prometheus.test.ts.
 */

const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

async function renderObjects(set: Record<string, unknown>): Promise<{ kind: string; metadata: { name: string; labels?: Record<string, string> }; [key: string]: unknown }[]> {
  const result = await renderChart([], set);
  if (!result.ok) throw new Error(result.error);
  return parseAllDocuments(result.manifest)
    .map((document) => document.toJS() as { kind: string; metadata: { name: string } } | null)
    .filter((object): object is { kind: string; metadata: { name: string } } => object !== null);
}

function promtool(args: string[], cwd: string): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  if (run.error) {
    throw new Error(`${PROMTOOL} could not be run (${run.error.message}): install Debian's prometheus package (apt-get install -y prometheus), or set PROMTOOL`);
  }
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

let dir: string;
let groups: { name: string; rules: Rule[] }[];
const rules = () => groups.flatMap((group) => group.rules);
const rule = (name: string) => rules().find((candidate) => candidate.alert === name)!;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'platform-alerts-'));
  const objects = await renderObjects({ 'metrics.prometheusRule.enabled': true, 'metrics.prometheusRule.runbookUrl': 'https://git.example.com/platform-api/blob/main/docs/operations/metrics.md#' });
  const prometheusRule = objects.find((object) => object.kind === 'PrometheusRule') as unknown as { spec: { groups: { name: string; rules: Rule[] }[] } };
  groups = prometheusRule.spec.groups;
  writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ALERTS = ['PlatformHighErrorRatio', 'PlatformHighLatency', 'PlatformNotReady', 'PlatformDatabaseUnreachable', 'PlatformRedisUnreachable', 'PlatformSweeperNotRunning', 'PlatformTokenCheckFailures', 'PlatformMailSpike'];

describe('the chart\'s alerts', () => {
  it('are off by default, as is the dashboard', async () => {
    const objects = await renderObjects({});
    expect(objects.filter((object) => object.kind === 'PrometheusRule')).toEqual([]);
    expect(objects.filter((object) => object.kind === 'ConfigMap' && object.metadata.name.endsWith('-dashboard'))).toEqual([]);
  });

  it('are the ones docs/operations/metrics.md explains, each with a summary, a description, a runbook and its runbook_url', () => {
    expect(rules().map((candidate) => candidate.alert)).toEqual(ALERTS);
    for (const candidate of rules()) {
      expect(Object.keys(candidate.annotations).sort()).toEqual(['description', 'runbook', 'runbook_url', 'summary']);
      expect(candidate.annotations.runbook_url).toBe(`https://git.example.com/platform-api/blob/main/docs/operations/metrics.md#${candidate.alert.toLowerCase()}`);
      expect(['warning', 'critical']).toContain(candidate.labels.severity);
    }
  });

  it('leave the sweeper alone when SWEEPER_ENABLED is false', async () => {
    const objects = await renderObjects({ 'metrics.prometheusRule.enabled': true, 'config.SWEEPER_ENABLED': false });
    const spec = (objects.find((object) => object.kind === 'PrometheusRule') as unknown as { spec: { groups: { rules: Rule[] }[] } }).spec;
    expect(spec.groups.flatMap((group) => group.rules).map((candidate) => candidate.alert)).toEqual(ALERTS.filter((name) => name !== 'PlatformSweeperNotRunning'));
  });

  it('pass `promtool check rules`', () => {
    const checked = promtool(['check', 'rules', 'rules.yaml'], dir);
    expect(checked.output).toContain(`SUCCESS: ${ALERTS.length} rules found`);
    expect(checked.status).toBe(0);
  });

  it('has a check that can fail: promtool refuses a rule whose query does not parse', () => {
    writeFileSync(join(dir, 'broken.yaml'), stringify({ groups: [{ name: 'x', rules: [{ alert: 'Broken', expr: 'sum by (job (up)' }] }] }));
    expect(promtool(['check', 'rules', 'broken.yaml'], dir).status).not.toBe(0);
  });

  it('each fire on a series that should fire them, and all stay quiet on a healthy service (`promtool test rules`)', () => {
    const at = { job: 'platform', namespace: 'platform' };
    const instance = '10.0.0.1:3000';
    const series = (metric: string, labels: Record<string, string>, values: string) => ({
      series: `${metric}{${Object.entries({ ...at, instance, ...labels }).map(([name, value]) => `${name}="${value}"`).join(', ')}}`,
      values,
    });
    /** The alert as it should fire: its labels, and its annotations with `$value` and `$labels` filled in. */
    const expected = (name: string, labels: Record<string, string>, value: string) => {
      const { annotations, labels: ruleLabels } = rule(name);
      const all = { ...at, ...labels };
      const fill = (text: string) => text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_whole, label: string) => all[label as keyof typeof all] ?? '').replace(/\{\{ \$value[^}]*\}\}/g, value);
      return { exp_labels: { ...ruleLabels, ...all }, exp_annotations: Object.fromEntries(Object.entries(annotations).map(([key, text]) => [key, fill(text)])) };
    };
    const firing = [
      {
        name: 'PlatformHighErrorRatio',
        input: [series('platform_http_requests_total', { route: '/policy/v1', method: 'GET', status: '200' }, '0+540x40'), series('platform_http_requests_total', { route: '/policy/v1', method: 'GET', status: '500' }, '0+60x40')],
        at: '20m',
        alerts: [expected('PlatformHighErrorRatio', {}, '10%')],
      },
      {
        name: 'PlatformHighLatency',
        input: ['0.5', '1', '2.5', '+Inf'].map((le) => series('platform_http_request_duration_seconds_bucket', { route: '/policy/v1', method: 'GET', status: '200', le }, le === '0.5' || le === '1' ? '0x40' : '0+60x40')),
        at: '25m',
        alerts: [expected('PlatformHighLatency', {}, '2.485s')],
      },
      {
        name: 'PlatformNotReady',
        input: [series('platform_readiness_check', { check: 'migrations' }, '0x20'), series('platform_readiness_check', { check: 'database' }, '1x20')],
        at: '10m',
        alerts: [expected('PlatformNotReady', { instance, check: 'migrations' }, '0')],
      },
      {
        name: 'PlatformDatabaseUnreachable',
        input: [series('platform_readiness_check', { check: 'database' }, '0x20')],
        at: '5m',
        alerts: [expected('PlatformDatabaseUnreachable', { instance }, '0')],
      },
      {
        name: 'PlatformRedisUnreachable',
        input: [series('platform_redis_up', {}, '0x20')],
        at: '5m',
        alerts: [expected('PlatformRedisUnreachable', { instance }, '0')],
      },
      {
        name: 'PlatformSweeperNotRunning',
        // The last sweep finished at 60 s, and none since.
        input: [series('platform_sweeper_last_run_timestamp_seconds', {}, '60x100')],
        at: '90m',
        alerts: [expected('PlatformSweeperNotRunning', {}, '1h 29m 0s')],
      },
      {
        name: 'PlatformTokenCheckFailures',
        input: [series('platform_token_verifications_total', { kind: 'person', outcome: 'unauthorized' }, '0+180x30'), series('platform_token_verifications_total', { kind: 'device', outcome: 'ok' }, '0+60x30')],
        at: '20m',
        alerts: [expected('PlatformTokenCheckFailures', {}, '75%')],
      },
      {
        name: 'PlatformMailSpike',
        input: [series('platform_mails_sent_total', { kind: 'email_code' }, '0+120x30')],
        at: '20m',
        alerts: [expected('PlatformMailSpike', { kind: 'email_code' }, '120')],
      },
    ];
    // A healthy service: 1 answer in 1,000 a 5xx, fast answers (MCP calls wait for the workbench
    // and are not counted), every check ready, Redis up, a sweep every 5 minutes, some refused
    // token checks (few, or a small share), mails at their usual pace.
    const healthy = [
      series('platform_http_requests_total', { route: '/policy/v1', method: 'GET', status: '200' }, '0+5994x100'),
      series('platform_http_requests_total', { route: '/policy/v1', method: 'GET', status: '503' }, '0+6x100'),
      ...['0.05', '0.1', '+Inf'].map((le) => series('platform_http_request_duration_seconds_bucket', { route: '/policy/v1', method: 'GET', status: '200', le }, le === '0.05' ? '0+5900x100' : '0+6000x100')),
      ...['1', '10', '+Inf'].map((le) => series('platform_http_request_duration_seconds_bucket', { route: '/cloud-agents/v1/runs/{runId}/mcp', method: 'POST', status: '200', le }, le === '1' ? '0x100' : '0+60x100')),
      ...['database', 'migrations', 'redis', 'rateLimits', 'replayCache', 'relay'].map((check) => series('platform_readiness_check', { check }, '1x100')),
      series('platform_redis_up', {}, '1x100'),
      // A sweep every 5 minutes: the last one finished at most 5 minutes ago.
      series('platform_sweeper_last_run_timestamp_seconds', {}, Array.from({ length: 101 }, (_, minute) => Math.floor(minute / 5) * 300).join(' ')),
      series('platform_token_verifications_total', { kind: 'device', outcome: 'ok' }, '0+600x100'),
      series('platform_token_verifications_total', { kind: 'device_dpop', outcome: 'invalid_dpop_proof' }, '0+12x100'),
      series('platform_token_verifications_total', { kind: 'person', outcome: 'unauthorized' }, '0+30x100'),
      series('platform_mails_sent_total', { kind: 'email_code' }, '0+10x100'),
    ];
    const tests = [
      ...firing.map((test) => ({ interval: '1m', input_series: test.input, alert_rule_test: [{ eval_time: test.at, alertname: test.name, exp_alerts: test.alerts }] })),
      // Before its `for` has run out, an alert is only pending: not firing.
      { interval: '1m', input_series: firing[0]!.input, alert_rule_test: [{ eval_time: '8m', alertname: 'PlatformHighErrorRatio', exp_alerts: [] }] },
      {
        interval: '1m',
        input_series: healthy,
        alert_rule_test: ALERTS.flatMap((alertname) => ['20m', '60m', '99m'].map((eval_time) => ({ eval_time, alertname, exp_alerts: [] }))),
      },
    ];
    writeFileSync(join(dir, 'tests.yaml'), stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const tested = promtool(['test', 'rules', 'tests.yaml'], dir);
    expect(tested.output).toContain('SUCCESS');
    expect(tested.status).toBe(0);
    expect(firing.map((test) => test.name).sort()).toEqual([...ALERTS].sort());
  });
});

describe('the chart\'s dashboard', () => {
  it('is a ConfigMap with Grafana\'s sidecar label holding a dashboard of every panel docs/operations/metrics.md lists', async () => {
    const objects = await renderObjects({ 'metrics.dashboards.enabled': true, 'metrics.dashboards.annotations': { grafana_folder: 'Platform' } });
    const map = objects.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'platform-dashboard') as unknown as { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; data: Record<string, string> };
    expect(map.metadata.labels.grafana_dashboard).toBe('1');
    expect(map.metadata.annotations).toEqual({ grafana_folder: 'Platform' });
    const dashboard = JSON.parse(map.data['platform-api.json']!) as { uid: string; panels: { type: string; title: string; targets?: { expr: string }[] }[] };
    expect(dashboard.uid).toBe('platform-api');
    const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(panels.map((panel) => panel.title)).toEqual([
      'Requests by route',
      'Errors by route and status',
      '5xx ratio',
      'Latency p99 by route',
      'Latency p50 by route',
      'Rate-limit refusals',
      'Token checks by kind and outcome',
      'DPoP refusals',
      'Relay connections',
      'Ingest items',
      'Database pool',
      'Redis',
      'Readiness checks',
      'Rows deleted by the sweeper',
      'Since the last sweep',
      'Sweeper turns',
      'Memory',
      'Event-loop lag',
      'Mails sent',
    ]);
    for (const panel of panels) expect(panel.targets?.length).toBeGreaterThan(0);
  });
});
