/**
 * The real platform as it is started in production (src/main.ts: config from the environment,
 * migrations, the same HTTP server settings), in a child process of run.ts. main.ts handles
 * SIGTERM itself (graceful close); this wrapper only adds: leave if run.ts disappears (its IPC
 * channel closes), so no server outlives a bench, even one that was killed.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// The soak asks each replica for its live heap (soak.ts): a full collection, then the heap still
// in use, which a leak makes grow and garbage awaiting V8's next major collection does not. Only
// through this bench wrapper's IPC channel; the service itself exposes no collection to anyone.
process.on('message', (message: unknown) => {
  if ((message as { type?: unknown } | null)?.type !== 'live-heap') return;
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  collect();
  process.send?.({ type: 'live-heap', bytes: process.memoryUsage().heapUsed });
});
process.on('disconnect', () => {
  setTimeout(() => process.exit(1), 5_000).unref();
  process.kill(process.pid, 'SIGTERM');
});
await import('../../src/main.js');
