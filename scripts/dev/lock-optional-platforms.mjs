#!/usr/bin/env node
// The package registry this project is built against serves only the linux-x64 builds of
// native packages (@swc/core, esbuild, unrs-resolver), so `npm install` leaves the other
// platforms' optional packages out of package-lock.json and `npm ci` then calls the lock file
// out of sync. This records each missing optional package as an optional entry of its own
// platform, which `npm ci` skips on linux-x64 (and installs where its registry has it).
// Run after every `npm install` that changes package-lock.json.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
let added = 0;

function platformOf(name) {
  const os = ['darwin', 'win32', 'linux', 'freebsd', 'android', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony', 'wasi']
    .find((candidate) => name.includes(candidate));
  const cpu = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32']
    .find((candidate) => new RegExp(`[-_]${candidate}([-_]|$)`).test(name) || name.endsWith(candidate));
  return { os: os === 'win32' ? 'win32' : os, cpu };
}

for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = path === '' ? '' : `${path}/`;
    const candidates = [`${base}node_modules/${name}`, `node_modules/${name}`];
    if (candidates.some((candidate) => packages[candidate])) continue;
    const { os, cpu } = platformOf(name);
    if (!os && !cpu) continue;
    packages[`node_modules/${name}`] = {
      version: String(version).replace(/^[\^~=]/, ''),
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(os ? { os: [os] } : {}),
      ...(cpu ? { cpu: [cpu] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`recorded ${added} optional platform packages`);
