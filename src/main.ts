import { runMain } from './lifecycle.js';

// The service process: configuration, start, graceful stop and exit codes live in lifecycle.ts.
void runMain();
