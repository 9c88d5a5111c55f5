import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { CheckAnswer, CheckRequest } from './check-worker.js';
import { checkSvg, SvgRefusal, type CheckedSvg } from './pipeline.js';

/**
 * The SVG check off the event loop. A 2 MB picture takes the pipeline about a second of CPU; on
 * the event loop that would stall every other request for as long (issue 23: no request may
 * stall it longer than 250 ms). So checks run on a small pool of worker threads (node:worker_threads,
 * `check-worker.ts`), each thread one check at a time:
 * - `threads`: how many (started when first needed, kept afterwards); 0 checks inline, on the
 *   event loop, with no time limit (for tools and tests that want no threads);
 * - `queue`: how many checks may wait for a thread; one more is refused at once
 *   (`SvgCheckBusy`: 503 `unavailable` with `Retry-After`), so a flood of large pictures costs a
 *   bounded amount of memory and waiting, and the client is told to come back;
 * - `timeoutMs`: a check running longer is abandoned: its thread is ended (`terminate`, which
 *   stops a thread even in the middle of a loop) and replaced, and the check fails with
 *   `SvgCheckTimeout` (400 `svg_too_complex`). The time counts from when a thread took the check,
 *   not the wait in the queue, and never a thread's start-up (a thread takes checks once it has
 *   loaded the pipeline).
 * - a thread's heap is bounded (`heapMb`, 512 MB): a check that needs more ends its own thread
 *   (ERR_WORKER_OUT_OF_MEMORY), never the process, and fails as too complex; the pool replaces it.
 * A thread that dies otherwise fails its check (500); the pool replaces it.
 *
 * Built from `dist`, a thread runs `check-worker.js`. Run from the TypeScript sources (jest runs
 * them through @swc/jest in this process, which a thread does not share), it loads
 * `check-worker.ts` through tsx's loader, a development dependency that dist never needs.
 */

export interface SvgCheckSettings {
  threads: number;
  queue: number;
  timeoutMs: number;
  /** The V8 heap a thread may use (old generation, MB); over it the thread dies alone and its check fails as too complex. */
  heapMb?: number;
}

/** A 2 MB picture's check peaks well under 200 MB of heap. */
const DEFAULT_HEAP_MB = 512;

/** Every thread is busy and the queue is full. */
export class SvgCheckBusy extends Error {
  constructor() {
    super('every SVG check thread is busy and the queue of checks is full');
    this.name = 'SvgCheckBusy';
  }
}

/** The check took longer than its time limit (or its thread ran out of memory) and was abandoned. */
export class SvgCheckTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`checking the SVG took longer than ${timeoutMs} ms`);
    this.name = 'SvgCheckTimeout';
  }
}

export interface SvgChecker {
  check(text: string): Promise<CheckedSvg>;
  close(): Promise<void>;
}

interface Task {
  id: number;
  text: string;
  resolve: (checked: CheckedSvg) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  task: Task | undefined;
  timer: NodeJS.Timeout | undefined;
}

/** Starts a worker: the compiled entry, or the TypeScript one through tsx. */
function startWorker(heapMb: number): Worker {
  const here = import.meta.url;
  const resourceLimits = { maxOldGenerationSizeMb: heapMb };
  if (here.endsWith('.js')) return new Worker(new URL('./check-worker.js', here), { resourceLimits });
  // tsx's ESM API (its `import` condition) registers its loader for the imports after it.
  const tsx = pathToFileURL(join(dirname(createRequire(here).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const entry = new URL('./check-worker.ts', here).href;
  const boot = `const { workerData } = require('node:worker_threads');
import(workerData.tsx).then(({ register }) => { register(); return import(workerData.entry); });`;
  return new Worker(boot, { eval: true, workerData: { tsx, entry }, resourceLimits });
}

/** Checks inline, on the event loop (threads 0). */
class InlineChecker implements SvgChecker {
  check(text: string): Promise<CheckedSvg> {
    try {
      return Promise.resolve(checkSvg(text));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

class PooledChecker implements SvgChecker {
  private readonly threads = new Set<Thread>();
  private readonly waiting: Task[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly settings: SvgCheckSettings) {}

  check(text: string): Promise<CheckedSvg> {
    if (this.closed) return Promise.reject(new Error('the SVG checker is closed'));
    let free = false;
    let starting = 0;
    for (const thread of this.threads) {
      if (!thread.ready) starting += 1;
      else if (thread.task === undefined) free = true;
    }
    // A check waiting for a thread that is still starting holds that thread's place, not the queue's.
    const queued = Math.max(0, this.waiting.length - starting);
    if (!free && this.threads.size >= this.settings.threads && queued >= this.settings.queue) return Promise.reject(new SvgCheckBusy());
    return new Promise<CheckedSvg>((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, text, resolve, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.waiting.splice(0)) task.reject(new Error('the SVG checker is closed'));
    const threads = [...this.threads];
    this.threads.clear();
    for (const thread of threads) {
      clearTimeout(thread.timer);
      thread.task?.reject(new Error('the SVG checker is closed'));
    }
    await Promise.all(threads.map((thread) => thread.worker.terminate()));
  }

  /** Gives waiting checks to ready idle threads, and starts threads (up to the limit) for the rest. */
  private pump(): void {
    let starting = 0;
    for (const thread of this.threads) {
      if (!thread.ready) starting += 1;
      else if (thread.task === undefined && this.waiting.length > 0) this.run(thread, this.waiting.shift() as Task);
    }
    while (this.waiting.length > starting && this.threads.size < this.settings.threads) {
      this.start();
      starting += 1;
    }
  }

  private start(): void {
    const thread: Thread = { worker: startWorker(this.settings.heapMb ?? DEFAULT_HEAP_MB), ready: false, task: undefined, timer: undefined };
    this.threads.add(thread);
    // The pool never keeps the process alive; the server does while it serves.
    thread.worker.unref();
    thread.worker.on('message', (answer: CheckAnswer) => this.answered(thread, answer));
    thread.worker.on('error', (error: Error & { code?: string }) => this.lost(thread, error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new SvgCheckTimeout(this.settings.timeoutMs) : error));
    thread.worker.on('exit', () => this.lost(thread, new Error('an SVG check thread stopped')));
  }

  private run(thread: Thread, task: Task): void {
    thread.task = task;
    thread.timer = setTimeout(() => {
      // Abandoned: the thread is ended (and replaced when a check waits), the check answered.
      this.threads.delete(thread);
      thread.task = undefined;
      void thread.worker.terminate();
      task.reject(new SvgCheckTimeout(this.settings.timeoutMs));
      this.pump();
    }, this.settings.timeoutMs);
    thread.worker.postMessage({ id: task.id, text: task.text } satisfies CheckRequest);
  }

  private answered(thread: Thread, answer: CheckAnswer): void {
    if (answer.type === 'ready') {
      thread.ready = true;
      this.pump();
      return;
    }
    const task = thread.task;
    if (!task || task.id !== answer.id) return;
    clearTimeout(thread.timer);
    thread.task = undefined;
    thread.timer = undefined;
    if (answer.type === 'checked') task.resolve(answer.checked);
    else if (answer.type === 'refused') task.reject(new SvgRefusal(answer.refusal.code, answer.refusal.reason, answer.refusal.where));
    else task.reject(new Error(`the SVG check failed: ${answer.failure}`));
    this.pump();
  }

  /** A thread that died (or failed to start): its check fails, the others go on. */
  private lost(thread: Thread, error: Error): void {
    if (!this.threads.delete(thread)) return;
    clearTimeout(thread.timer);
    const task = thread.task;
    thread.task = undefined;
    if (task) task.reject(error);
    else if (!thread.ready && this.waiting.length > 0 && this.threads.size === 0) {
      // No thread could start: the checks waiting for one fail rather than wait for ever.
      for (const waiting of this.waiting.splice(0)) waiting.reject(error);
    }
    if (!this.closed) this.pump();
  }
}

export function svgChecker(settings: SvgCheckSettings): SvgChecker {
  return settings.threads === 0 ? new InlineChecker() : new PooledChecker(settings);
}
