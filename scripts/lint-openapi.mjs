#!/usr/bin/env node
// `npm run lint:openapi`: writes the OpenAPI document of each deployment (Cloud and self-hosted)
// to a temporary directory and lints both with Spectral (`.spectral.yaml`: `spectral:oas`).
// Fails on any error; warnings are printed and allowed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BuildError, ensureBuild } from './ensure-build.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
try {
  ensureBuild();
} catch (error) {
  if (!(error instanceof BuildError)) throw error;
  process.stderr.write(`lint:openapi: ${error.message}\n`);
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), 'platform-openapi-'));
let status = 0;
try {
  const written = spawnSync(process.execPath, [join(root, 'dist/src/cli/openapi.js'), dir], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (written.status !== 0) throw new Error('could not write the OpenAPI documents');
  const files = written.stdout.trim().split('\n');
  const spectral = join(root, 'node_modules', '.bin', 'spectral');
  for (const file of files) {
    process.stdout.write(`\n${file.slice(dir.length + 1)}\n`);
    const linted = spawnSync(spectral, ['lint', '--ruleset', join(root, '.spectral.yaml'), '--fail-severity', 'error', '--format', 'text', file], { stdio: 'inherit' });
    if (linted.status !== 0) status = 1;
  }
} catch (error) {
  process.stderr.write(`lint:openapi: ${error instanceof Error ? error.message : String(error)}\n`);
  status = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
