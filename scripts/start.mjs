#!/usr/bin/env node
// `npm start`: build dist/ when it is missing or stale, then run the service in this process.
// Running it here rather than in a child keeps one process: signals (SIGTERM from an orchestrator,
// Ctrl-C) reach the service's own shutdown handlers directly, and its exit code is ours.
import { runBuilt } from './ensure-build.mjs';

await runBuilt('dist/src/main.js');
