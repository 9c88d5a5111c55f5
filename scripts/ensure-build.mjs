#!/usr/bin/env node
// Builds dist/ with the project's own TypeScript when it is missing or older than the sources,
// so `npm start`, `npm run migrate` and `npx platform` work on a fresh clone after `npm install`.
// The build is incremental (dist/.tsbuildinfo); an up-to-date tree costs one directory walk.
// Messages go to stderr: the command line's stdout may be piped (`platform org list --json`).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const buildInfo = join(root, 'dist', '.tsbuildinfo');
/**
 * Written after a build this script saw succeed, dated like the build info. tsc writes its build
 * info even when the build fails, so the build info alone cannot tell a good dist/ from one a
 * failed `npm run build` left behind.
 */
const builtOk = join(root, 'dist', '.build-ok');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
/** What tsconfig.build.json compiles, and the settings that shape the output. */
const SOURCE_DIRS = ['src', 'adapters', 'policies'];
const SOURCE_FILES = ['ormconfig.ts', 'tsconfig.json', 'tsconfig.build.json'];
/** Entry points the scripts run; tsc's incremental check does not notice a deleted output. */
const ENTRY_POINTS = ['dist/src/main.js', 'dist/src/cli/main.js', 'dist/src/cli/abilities.js', 'dist/src/cli/openapi.js'];

/** The newest source change: a .ts file written, or a directory whose entries changed (a file deleted or renamed). */
function newestSource(path, newest = { time: 0, path: '' }) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return newest;
  }
  const counts = stat.isDirectory() || path.endsWith('.ts') || SOURCE_FILES.some((file) => path === join(root, file));
  if (counts && stat.mtimeMs > newest.time) {
    newest.time = stat.mtimeMs;
    newest.path = path;
  }
  if (stat.isDirectory()) for (const entry of readdirSync(path)) newestSource(join(path, entry), newest);
  return newest;
}

/** Why a build is needed, or undefined when dist/ is current. */
export function staleReason() {
  const missing = ENTRY_POINTS.find((entry) => !existsSync(join(root, entry)));
  // An installation that ships dist/ without sources has nothing to compare with.
  if (!existsSync(join(root, 'src'))) return missing ? `${missing} is missing` : undefined;
  if (!existsSync(buildInfo)) return 'dist/ has not been built';
  if (missing) return `${missing} is missing`;
  const built = existsSync(builtOk) ? statSync(builtOk).mtimeMs : -1;
  if (built < statSync(buildInfo).mtimeMs) return 'the last build is not known to have succeeded';
  const newest = { time: 0, path: '' };
  for (const path of [...SOURCE_DIRS, ...SOURCE_FILES]) newestSource(join(root, path), newest);
  return newest.time > built ? `${relative(root, newest.path) || '.'} changed since the last build` : undefined;
}

export class BuildError extends Error {}

export function ensureBuild({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const reason = staleReason();
  if (!reason) return false;
  if (!existsSync(tsc)) {
    throw new BuildError(`dist/ needs a build (${reason}) and TypeScript is not installed: run \`npm install\`, or \`npm run build\` where it is`);
  }
  // A deleted output is only re-emitted by a build that forgets what it built before.
  if (!existsSync(buildInfo) || ENTRY_POINTS.some((entry) => !existsSync(join(root, entry)))) rmSync(buildInfo, { force: true });
  log(`platform: building dist/ (${reason}) ...`);
  rmSync(builtOk, { force: true });
  const started = new Date();
  // tsc reports on stdout; it goes to our stderr (fd 2) to keep stdout for results.
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (result.error) throw new BuildError(`could not run TypeScript: ${result.error.message}`);
  if (result.status !== 0) {
    throw new BuildError('the TypeScript build failed (errors above); fix them or run `npm run build` to see them again');
  }
  // Both dated at the start: tsc leaves its build info alone when nothing changed, and a source
  // saved during the build must still count as newer than the build.
  writeFileSync(builtOk, `${started.toISOString()}\n`);
  utimesSync(builtOk, started, started);
  if (existsSync(buildInfo)) utimesSync(buildInfo, started, started);
  return true;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    ensureBuild();
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    process.stderr.write(`platform: ${error.message}\n`);
    process.exitCode = 1;
  }
}

/**
 * Builds when needed, then runs a built entry point in this process (one process: signals and
 * the exit code belong to what runs). `npm start` and `bin/platform.js` both start this way.
 */
export async function runBuilt(entry) {
  try {
    ensureBuild();
  } catch (error) {
    if (!(error instanceof BuildError)) throw error;
    process.stderr.write(`platform: ${error.message}\n`);
    process.exit(1);
  }
  // Stack traces then name the TypeScript sources (the build writes source maps).
  process.setSourceMapsEnabled(true);
  await import(new URL(`../${entry}`, import.meta.url).href);
}
