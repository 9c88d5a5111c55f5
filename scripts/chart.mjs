#!/usr/bin/env node
// The Helm chart's checks, with the helm of scripts/helm.mjs (nothing to install by hand):
//
//   npm run chart:check    helm lint --strict and helm template over the default values and every
//                          example values file, and the chart README's tables up to date
//   npm run chart:readme   regenerate the chart README's tables from the values file's comments
//
// test/deploy/chart.test.ts runs the same checks inside `npm test` and looks at what is rendered.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runHelm } from './helm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CHART = join(root, 'charts', 'platform');
/** The Kubernetes version templates are rendered for (Capabilities.KubeVersion). */
export const KUBE_VERSION = '1.35.0';

/** The example values files, each rendered and linted besides the defaults. */
export function exampleValuesFiles() {
  const folder = join(CHART, 'examples');
  return readdirSync(folder)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => join(folder, name));
}

function valuesArgs(valuesFiles = [], set = {}) {
  const args = [];
  for (const file of valuesFiles) args.push('--values', file);
  for (const [key, value] of Object.entries(set)) args.push('--set-json', `${key}=${JSON.stringify(value)}`);
  return args;
}

/** `helm lint --strict`: { ok, output }. */
export async function lintChart(valuesFiles = [], set = {}) {
  const { status, stdout, stderr } = await runHelm(['lint', '--strict', '--kube-version', KUBE_VERSION, CHART, ...valuesArgs(valuesFiles, set)]);
  return { ok: status === 0, output: `${stdout}${stderr}` };
}

/** `helm template`: { ok, manifest (YAML text), error }. */
export async function renderChart(valuesFiles = [], set = {}, { release = 'platform', namespace = 'platform' } = {}) {
  const { status, stdout, stderr } = await runHelm([
    'template', release, CHART, '--namespace', namespace, '--kube-version', KUBE_VERSION, ...valuesArgs(valuesFiles, set),
  ]);
  return { ok: status === 0, manifest: stdout, error: stderr.trim() };
}

/** NOTES.txt as `helm install` prints it (a client-side dry run: no cluster is asked). */
export async function releaseNotes(valuesFiles = [], set = {}) {
  const { status, stdout, stderr } = await runHelm([
    'install', 'platform', CHART, '--dry-run=client', '--namespace', 'platform', ...valuesArgs(valuesFiles, set),
  ]);
  if (status !== 0) throw new Error(`helm install --dry-run=client failed: ${stderr.trim()}`);
  const start = stdout.indexOf('NOTES:\n');
  return start < 0 ? '' : stdout.slice(start + 'NOTES:\n'.length);
}

/** The chart README as the generator writes it from values.yaml's `## @param` comments. */
export function generatedReadme() {
  const require = createRequire(import.meta.url);
  const { runReadmeGenerator } = require('@bitnami/readme-generator-for-helm');
  const scratch = mkdtempSync(join(tmpdir(), 'platform-chart-readme-'));
  const readme = join(scratch, 'README.md');
  writeFileSync(readme, readFileSync(join(CHART, 'README.md')));
  // The generator reports every step on the console; only its result matters here.
  const log = console.log;
  console.log = () => undefined;
  try {
    runReadmeGenerator({ values: join(CHART, 'values.yaml'), readme });
    return readFileSync(readme, 'utf8');
  } finally {
    console.log = log;
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function check() {
  const failures = [];
  const cases = [[], ...exampleValuesFiles().map((file) => [file])];
  for (const files of cases) {
    const name = files.length ? relative(root, files[0]) : 'default values';
    const lint = await lintChart(files);
    if (!lint.ok) failures.push(`helm lint --strict (${name}):\n${lint.output}`);
    const render = await renderChart(files);
    if (!render.ok) failures.push(`helm template (${name}): ${render.error}`);
    process.stdout.write(`${lint.ok && render.ok ? 'ok  ' : 'FAIL'} ${name}\n`);
  }
  if (generatedReadme() !== readFileSync(join(CHART, 'README.md'), 'utf8')) {
    failures.push('charts/platform/README.md is out of date with values.yaml: run `npm run chart:readme`');
  }
  for (const failure of failures) process.stderr.write(`${failure}\n`);
  process.stdout.write(failures.length ? `chart: ${failures.length} problem(s)\n` : 'chart: lint, render and README are good\n');
  return failures.length === 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const command = process.argv[2];
  if (command === 'readme') {
    writeFileSync(join(CHART, 'README.md'), generatedReadme());
    process.stdout.write('charts/platform/README.md regenerated from values.yaml\n');
  } else if (command === 'check') {
    process.exitCode = (await check()) ? 0 : 1;
  } else {
    process.stderr.write('usage: node scripts/chart.mjs check|readme\n');
    process.exitCode = 2;
  }
}
