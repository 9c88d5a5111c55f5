import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A server a test runs as a child process of its own, with a temporary directory of its own. */
export abstract class ServerProcess {
  protected process: ChildProcess | undefined;
  protected readonly dir: string;

  protected constructor(
    readonly port: number,
    directoryPrefix: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), directoryPrefix));
  }

  /** Stops the server (SIGKILL: as abrupt as a crash; it recovers at its next start) and waits until it is gone. */
  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  /** Stops the server and removes its directory. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
