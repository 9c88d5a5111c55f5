import { Agent, request } from 'node:http';
import { STALL_LIMIT_MS, type Hostile, type HostileRequest, type Target } from './hostile-payloads.js';

/**
 * The event loop of a running service under hostile requests (hostile-payloads.ts): each request
 * is sent alone, in a window of its own, while `GET /healthz` is asked every 10 ms; its stall is
 * read twice: the longest of those probes (what a client sees), and the service's own
 * `nodejs_eventloop_lag_max_seconds` (prom-client's `monitorEventLoopDelay`, reset by each scrape
 * of `/metrics`). Used by test/services/event-loop.test.ts (which asserts) and the bench (which
 * reports).
 */

export interface Served {
  port: number;
}

export interface Stall {
  name: string;
  status: number;
  /** The longest `GET /healthz` while the request was handled and logged. */
  probeMs: number;
  /** The service's longest event-loop delay meanwhile (monitorEventLoopDelay). */
  serverMs: number;
  probes: number;
  probeFailures: number;
  budgetMs: number;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

export function closeAgents(): void {
  agent.destroy();
}

export function sendTo(port: number, host: string, message: HostileRequest, timeoutMs = 60_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // A message may bring a Host of its own (a hostile one).
    const req = request({ host: '127.0.0.1', port, agent, method: message.method, path: message.path, headers: { Host: host, ...message.headers }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${message.method} ${message.path.slice(0, 40)}… had no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(message.body);
  });
}

/** `GET /healthz` every 10 ms until stopped, one at a time on one connection: a stall of N ms is one probe of about N ms. */
function probe(port: number): { stop(): Promise<{ longestMs: number; count: number; failures: number }> } {
  let running = true;
  let longestMs = 0;
  let count = 0;
  let failures = 0;
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      try {
        await new Promise<void>((resolve, reject) => {
          request({ host: '127.0.0.1', port, agent: probeAgent, path: '/healthz', headers: { Host: 'localhost' } }, (res) => {
            if (res.statusCode !== 200) failures += 1;
            res.resume().on('end', resolve);
          })
            .on('error', reject)
            .end();
        });
      } catch {
        failures += 1;
      }
      const took = performance.now() - started;
      longestMs = Math.max(longestMs, took);
      count += 1;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 10 - took)));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      probeAgent.destroy();
      return { longestMs, count, failures };
    },
  };
}

/** The service's longest event-loop delay since the previous scrape, in ms (the scrape resets it). */
export async function serverLagMs(port: number): Promise<number> {
  const { status, body } = await sendTo(port, 'localhost', { method: 'GET', path: '/metrics' });
  const line = body.split('\n').find((l) => l.startsWith('nodejs_eventloop_lag_max_seconds '));
  if (status !== 200 || !line) throw new Error(`/metrics answered ${status} without nodejs_eventloop_lag_max_seconds`);
  return Number(line.split(' ')[1]) * 1000;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends `hostile` alone in a window of probes, up to `attempts` times while it is over its budget:
 * its answer and the stalls of the quietest attempt. The stall a request causes comes back every
 * time; what the other processes of a shared machine add does not.
 */
export async function measureStall(served: Served, target: Target, hostile: Hostile, attempts = 3): Promise<Stall> {
  let best: Stall | undefined;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const stall = await measureOnce(served, target, hostile);
    if (!best || stall.serverMs + stall.probeMs < best.serverMs + best.probeMs) best = stall;
    if (best.serverMs < Math.min(best.budgetMs, STALL_LIMIT_MS) && best.probeMs < STALL_LIMIT_MS) break;
  }
  return best!;
}

async function measureOnce(served: Served, target: Target, hostile: Hostile): Promise<Stall> {
  const message = hostile.build(target);
  await serverLagMs(served.port);
  const probes = probe(served.port);
  await pause(50);
  const answer = await sendTo(served.port, target.host, message);
  // The log line is written after the answer: give the probes a moment to meet it.
  await pause(100);
  const seen = await probes.stop();
  return { name: hostile.name, status: answer.status, probeMs: seen.longestMs, serverMs: await serverLagMs(served.port), probes: seen.count, probeFailures: seen.failures, budgetMs: hostile.budgetMs };
}

/** The bench's table: one line per payload. */
export function formatStallTable(stalls: Stall[]): string {
  const rows = [['payload', 'answer', 'loop lag max (monitorEventLoopDelay)', 'longest /healthz probe', 'budget', 'verdict']];
  for (const stall of stalls) {
    const over = stall.serverMs >= Math.min(stall.budgetMs, STALL_LIMIT_MS);
    rows.push([stall.name, String(stall.status), `${stall.serverMs.toFixed(1)} ms`, `${stall.probeMs.toFixed(1)} ms`, `${stall.budgetMs} ms`, over ? 'OVER' : 'ok']);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')).join('\n');
}
