/**
 * Shared by the bench's child processes: leave when run.ts says so (SIGTERM) or when run.ts is
 * gone (its IPC channel closes), so no server outlives a bench, even one that was killed.
 */
export function watchParent(stop: () => void): void {
  let stopping = false;
  const once = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), 5_000).unref();
    stop();
  };
  process.on('SIGTERM', once);
  process.on('SIGINT', once);
  process.on('disconnect', once);
}
