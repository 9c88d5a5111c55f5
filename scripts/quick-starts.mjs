#!/usr/bin/env node
// The README's quick starts, pasted as a newcomer pastes them: each `sh` block of the README's
// "Quick start (self-hosted)", "Cloud quick start" and "From enrolment to an upload", and the
// block of docs/api/teams.md, run in order by one bash in a fresh clone of this commit (its
// node_modules linked), on free ports instead of 3000 and 3001. Fails when bash fails, when an
// answer the text promises is missing, or when anything looks broken (a stack trace, `undefined`,
// a curl error). The services the blocks start are stopped at the end.
//
//   node scripts/quick-starts.mjs          (in CI: .ci/run)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const SELF_HOSTED_PORT = Number(process.env.QUICK_START_PORT ?? 39131);
const CLOUD_PORT = SELF_HOSTED_PORT + 1;

/** The `sh` blocks of a Markdown section: from its heading to the next heading of its level or above, code aside. */
function blocksOf(file, heading) {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`${file} has no heading "${heading}"`);
  const level = heading.indexOf(' ');
  const blocks = [];
  let block;
  for (const line of lines.slice(start + 1)) {
    if (block) {
      if (line === '```') {
        blocks.push(`${block.join('\n')}\n`);
        block = undefined;
      } else block.push(line);
    } else if (line === '```sh') block = [];
    else if (/^#+ /.test(line) && line.indexOf(' ') <= level) break;
  }
  if (!blocks.length) throw new Error(`${file} "${heading}" holds no sh block`);
  return blocks;
}

/** A block on this run's ports; the self-hosted one's service gets its port from PORT. */
const onOurPorts = (block) => block.replaceAll(':3001', `:${CLOUD_PORT}`).replaceAll('PORT=3001', `PORT=${CLOUD_PORT}`).replaceAll(':3000', `:${SELF_HOSTED_PORT}`);

const steps = [
  ['self-hosted quick start', blocksOf('README.md', '## Quick start (self-hosted)')[0], `export PORT=${SELF_HOSTED_PORT}`, 'unset PORT'],
  ['Cloud quick start', blocksOf('README.md', '## Cloud quick start')[0]],
  ['teams', blocksOf('docs/api/teams.md', '# Teams (Cloud)')[0]],
  ['a join key', blocksOf('README.md', '## From enrolment to an upload')[0]],
];

/** What each step must print: the answers its comments promise. */
const EXPECTED = [
  '"edition":"enterprise"',
  '"status":"ready"',
  'platform_http_requests_total{',
  '"error":"unknown_tenant"',
  '"kind":"personal"',
  '"edition":"free"',
  '"refresh_token":"platform_sr_',
  '\n204\n',
  '"kind":"team"',
  '"role":"admin"',
  '"name":"Rocket"',
  'enrol    joined with the key',
  'done     all steps worked',
];
const BROKEN = [/SyntaxError/, /\bundefined\b/, /^curl: \(\d+\)/m];
/** A line of a stack trace. */
const stackLine = (line) => line.startsWith('    at ') && /:\d+:\d+\)?$/.test(line);

const clone = mkdtempSync(join(tmpdir(), 'platform-quick-starts-'));
let status;
try {
  const cloned = spawnSync('git', ['clone', '--quiet', ROOT, clone], { stdio: 'inherit' });
  if (cloned.status !== 0) throw new Error('git clone failed');
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
  const script = [
    'set -m',
    `cd ${JSON.stringify(clone)}`,
    ...steps.flatMap(([name, block, before = '', after = '']) => [`echo ${JSON.stringify(`=== ${name}`)}`, before, onOurPorts(block), after]),
    'echo "=== done"',
    // Each job is its own process group (set -m): stop the whole group, npm and the service.
    'for pid in $(jobs -p); do kill -TERM -- "-$pid" 2>/dev/null; done; wait',
  ].join('\n');
  writeFileSync(join(clone, 'quick-starts.sh'), script);
  const run = spawnSync('bash', ['quick-starts.sh'], { cwd: clone, encoding: 'utf8', timeout: 600_000, env: { ...process.env, LOG_LEVEL: 'warn' } });
  const output = `${run.stdout}${run.stderr}`;
  process.stdout.write(output);
  const missing = EXPECTED.filter((text) => !output.includes(text));
  const broken = BROKEN.filter((pattern) => pattern.test(output));
  const problems = [
    ...(run.error ? [`bash: ${run.error.message}`] : []),
    ...(run.status !== 0 ? [`bash exited ${run.status}`] : []),
    ...(output.includes('=== done') ? [] : ['the blocks did not run to their end']),
    ...missing.map((text) => `no ${JSON.stringify(text)} in the output`),
    ...broken.map((pattern) => `the output matches ${pattern}`),
    ...(output.split('\n').some(stackLine) ? ['the output holds a stack trace'] : []),
  ];
  if (problems.length) process.stderr.write(`quick starts: ${problems.join('; ')}\n`);
  else process.stdout.write('quick starts: every block ran as the docs say\n');
  status = problems.length ? 1 : 0;
} finally {
  rmSync(clone, { recursive: true, force: true });
}
process.exit(status);
