// The directory one jest run shares between its parts (sequencer and reporter in the main
// process, the test files in the workers): what each test file answered and logged, and which
// files the run holds. See test/http/suite-checks.test.ts.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const RUN_DIR_VARIABLE = 'PLATFORM_SUITE_RUN_DIR';
const ROOT = join(process.cwd(), '.jest-suite');
const KEEP_MS = 6 * 3600_000;

/**
 * A run split over two jest invocations (npm run test:services: the shared suites in parallel,
 * then the suites of their own one at a time) shares one directory, named by
 * PLATFORM_SUITE_RUN_NAME: the first invocation starts it afresh, the second (with
 * PLATFORM_SUITE_RUN_APPEND=1) adds its files to it, and its suite checks read both.
 */
export const RUN_NAME_VARIABLE = 'PLATFORM_SUITE_RUN_NAME';
export const RUN_APPEND_VARIABLE = 'PLATFORM_SUITE_RUN_APPEND';

/** Makes this run's directory (and forgets runs older than six hours); the workers inherit it. */
export function startRun() {
  mkdirSync(ROOT, { recursive: true });
  for (const name of readdirSync(ROOT)) {
    const path = join(ROOT, name);
    if (Date.now() - statSync(path).mtimeMs > KEEP_MS) rmSync(path, { recursive: true, force: true });
  }
  const named = process.env[RUN_NAME_VARIABLE];
  if (named !== undefined && !/^[a-z0-9-]+$/.test(named)) throw new Error(`${RUN_NAME_VARIABLE} must be lower-case letters, digits and dashes`);
  const dir = named ? join(ROOT, named) : join(ROOT, `${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`);
  if (named && !appending()) rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'files'), { recursive: true });
  mkdirSync(join(dir, 'finished'), { recursive: true });
  process.env[RUN_DIR_VARIABLE] = dir;
  return dir;
}

/** Whether this invocation adds to a named run the one before it started. */
export function appending() {
  return Boolean(process.env[RUN_NAME_VARIABLE]) && process.env[RUN_APPEND_VARIABLE] === '1';
}

export function runDir() {
  return process.env[RUN_DIR_VARIABLE];
}

/** A file name for a test file's records, the same in every process. */
export function keyOf(testPath) {
  const readable = relative(process.cwd(), testPath).replace(/[^A-Za-z0-9._-]+/g, '_');
  return `${readable}-${createHash('sha256').update(testPath).digest('hex').slice(0, 8)}`;
}
