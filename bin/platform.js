#!/usr/bin/env node
// The `platform` admin command line (src/cli). In a source checkout it builds dist/ first when
// needed, like `npm start`; an installation that ships dist/ without sources runs it as is.
import { runBuilt } from '../scripts/ensure-build.mjs';

await runBuilt('dist/src/cli/main.js');
