/**
 * The real platform as it is started in production (src/main.ts: config from the environment,
 * migrations, the same HTTP server settings), in a child process of run.ts. main.ts handles
 * SIGTERM itself (graceful close); this wrapper only adds: leave if run.ts disappears (its IPC
 * channel closes), so no server outlives a bench, even one that was killed.
 */
process.on('disconnect', () => {
  setTimeout(() => process.exit(1), 5_000).unref();
  process.kill(process.pid, 'SIGTERM');
});
await import('../../src/main.js');
