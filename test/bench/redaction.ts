import { monitorEventLoopDelay } from 'node:perf_hooks';
import { RedactionBudget, redactSteps } from '../../src/modules/ingest/redaction.js';

/**
 * Ingest redaction in this process, as `POST /ingest/v1` runs it (RedactionBudget: 10 ms slices,
 * the event loop given back between them), on envelopes of the largest size (4 MiB, strings of
 * 1 MiB, 250,000 keys): a realistic one (tool output and command lines with a few secrets) and
 * the worst cases known. For each: the work spent (the budget's measure, median of 3 runs after a
 * warm-up), the CPU time, the longest step (the longest the event loop waited on redaction), and
 * the event-loop delay a 10 ms timer saw meanwhile (monitorEventLoopDelay, p99 and max).
 */

export interface RedactionBenchRow {
  name: string;
  megabytes: number;
  workMs: number;
  cpuMs: number;
  longestStepMs: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
}

const MB = 1 << 20;
const fill = (unit: string, size = MB - 1024): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
const event = (seq: number, data: unknown) => ({ seq, id: `e${seq}`, at: '2026-01-01T00:00:00.000Z', kind: 'tool.called', data });

function realistic(): unknown[] {
  const lines = [
    'total 24',
    'drwxr-xr-x  5 user user 4096 Jan  2 03:04 .',
    '-rw-r--r--  1 user user  220 Jan  2 03:04 README.md',
    'curl -sS -H "Authorization: Bearer aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY" https://api.example.com/v1/items',
    'export DATABASE_URL=postgres://app:S3cr3t-pw@db.internal:5432/app',
    '{"model": "claude", "max_tokens": 1024, "usage": {"input_tokens": 1234, "output_tokens": 567}}',
    'The agent read src/modules/ingest/redaction.ts and ran the tests: 42 passed.',
  ];
  const output = Array.from({ length: 1400 }, (_, i) => lines[i % lines.length]).join('\n');
  return Array.from({ length: 40 }, (_, i) => event(i, { tool: 'shell', args: { command: lines[3 + (i % 2)] }, output, exitCode: 0, env: { HOME: '/home/user', GITHUB_TOKEN: `ghp_aB3${'x9Y'.repeat(11)}` } }));
}

const ENVELOPES: [string, () => unknown[]][] = [
  ['realistic tool output, 40 events', realistic],
  ['4 x 1 MiB of "cookie:"', () => [1, 2, 3, 4].map((i) => event(i, { s: fill('cookie:') }))],
  ['4 x 1 MiB of "token: " (all replaced)', () => [1, 2, 3, 4].map((i) => event(i, { s: fill('token: ') }))],
  ['4 x 1 MiB of URL credentials (all replaced)', () => [1, 2, 3, 4].map((i) => event(i, { s: fill('a://b:c@') }))],
  ['4 x 1 MiB of JWT look-alikes', () => [1, 2, 3, 4].map((i) => event(i, { s: fill('eyJhbGci.') }))],
  ['250,000 keys', () => [event(1, Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [`key_${i}_token`, `v${i}`])))]],
];

async function once(envelope: unknown[]): Promise<Omit<RedactionBenchRow, 'name' | 'megabytes'>> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const steps = redactSteps({ events: envelope });
  let longest = 0;
  const timed = (function* () {
    for (;;) {
      const started = performance.now();
      const step = steps.next();
      longest = Math.max(longest, performance.now() - started);
      if (step.done) return step.value;
      yield;
    }
  })();
  const budget = new RedactionBudget(60_000);
  const cpu = process.cpuUsage();
  delay.enable();
  await budget.run(timed);
  delay.disable();
  const used = process.cpuUsage(cpu);
  return { workMs: budget.spent, cpuMs: (used.user + used.system) / 1000, longestStepMs: longest, loopDelayP99Ms: delay.percentile(99) / 1e6, loopDelayMaxMs: delay.max / 1e6 };
}

export async function measureRedaction(): Promise<RedactionBenchRow[]> {
  const rows: RedactionBenchRow[] = [];
  for (const [name, build] of ENVELOPES) {
    const envelope = build();
    const megabytes = Buffer.byteLength(JSON.stringify(envelope)) / MB;
    await once(envelope);
    const runs = [await once(envelope), await once(envelope), await once(envelope)].sort((a, b) => a.workMs - b.workMs);
    rows.push({ name, megabytes, ...runs[1]! });
  }
  return rows;
}

export function formatRedactionTable(rows: RedactionBenchRow[]): string {
  const table = [['envelope', 'MiB', 'work ms', 'CPU ms', 'longest step ms', 'loop delay p99 ms', 'loop delay max ms']];
  for (const row of rows) {
    table.push([row.name, row.megabytes.toFixed(2), row.workMs.toFixed(0), row.cpuMs.toFixed(0), row.longestStepMs.toFixed(1), row.loopDelayP99Ms.toFixed(1), row.loopDelayMaxMs.toFixed(1)]);
  }
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  return table.map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')).join('\n');
}
