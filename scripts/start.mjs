#!/usr/bin/env node
// `npm start`: build dist/ when it is missing or stale, then run the service in this process.
// Running it here rather than in a child keeps one process: signals (SIGTERM from an orchestrator,
// Ctrl-C) reach the service's own shutdown handlers directly, and its exit code is ours.
import { BuildError, ensureBuild } from './ensure-build.mjs';

try {
  ensureBuild();
} catch (error) {
  if (!(error instanceof BuildError)) throw error;
  process.stderr.write(`platform: ${error.message}\n`);
  process.exit(1);
}
// Stack traces then name the TypeScript sources (the build writes source maps).
process.setSourceMapsEnabled(true);
await import('../dist/src/main.js');
