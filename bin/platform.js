#!/usr/bin/env node
// The `platform` admin command line (src/cli). In a source checkout it builds dist/ first when
// needed, like `npm start`; an installation that ships dist/ without sources runs it as is.
import { BuildError, ensureBuild } from '../scripts/ensure-build.mjs';

try {
  ensureBuild();
} catch (error) {
  if (!(error instanceof BuildError)) throw error;
  process.stderr.write(`platform: ${error.message}\n`);
  process.exit(1);
}
process.setSourceMapsEnabled(true);
await import('../dist/src/cli/main.js');
