import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import type { RequestShape, Scenario } from './scenarios.js';

export interface LoadOptions {
  connections: number;
  durationSeconds: number;
  /** The server's process: its CPU time over the run is read from /proc (Linux). */
  serverPid?: number;
}

export interface Measurement {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  durationSeconds: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Server CPU time (user + system) per answered request, µs; undefined without /proc. */
  serverCpuMicros?: number;
}

/** User + system CPU time of a process so far, µs (/proc/<pid>/stat, in clock ticks of 10 ms). */
export function cpuMicros(pid: number): number | undefined {
  try {
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    return (Number(fields[11]) + Number(fields[12])) * (1e6 / CLOCK_TICKS_PER_SECOND);
  } catch {
    return undefined;
  }
}
/** sysconf(_SC_CLK_TCK): 100 on Linux builds for every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

let current: autocannon.Instance | undefined;

/** Stops a run in progress (the watchdog and Ctrl-C use it). */
export function stopLoad(): void {
  current?.stop();
}

/** The request autocannon sends; with `perRequest`, rebuilt before every request. */
export function requestFor(scenario: Scenario, origin: string): autocannon.Request {
  const shape: RequestShape = { method: scenario.method, url: `${origin}${scenario.path}` };
  const build = (): autocannon.Request => ({
    method: scenario.method,
    path: scenario.path,
    headers: scenario.headers?.(shape) ?? {},
    ...(scenario.body ? { body: scenario.body(shape) } : {}),
  });
  if (!scenario.perRequest) return build();
  return { ...build(), setupRequest: (request) => ({ ...request, ...build() }) };
}

export async function load(scenario: Scenario, origin: string, options: LoadOptions): Promise<Measurement> {
  let instance!: autocannon.Instance;
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(
      {
        url: origin,
        connections: options.connections,
        pipelining: 1,
        duration: options.durationSeconds,
        timeout: 10,
        requests: [requestFor(scenario, origin)],
      },
      (error, result) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result)),
    );
  });
  current = instance;
  const cpuBefore = options.serverPid === undefined ? undefined : cpuMicros(options.serverPid);
  try {
    const result = await finished;
    const cpuAfter = options.serverPid === undefined ? undefined : cpuMicros(options.serverPid);
    const statusCodes: Record<string, number> = {};
    for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statusCodes[code] = stat.count ?? 0;
    return {
      requestsPerSecond: result.duration > 0 ? result.requests.total / result.duration : 0,
      p50: result.latency.p50,
      p99: result.latency.p99,
      total: result.requests.total,
      durationSeconds: result.duration,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      ...(cpuBefore !== undefined && cpuAfter !== undefined && result.requests.total > 0 ? { serverCpuMicros: (cpuAfter - cpuBefore) / result.requests.total } : {}),
    };
  } finally {
    current = undefined;
  }
}

/** Why a measurement cannot be trusted, or undefined when every answer was a 2xx. */
export function problemWith(measurement: Measurement): string | undefined {
  const problems: string[] = [];
  if (measurement.total === 0) problems.push('no answers at all');
  if (measurement.non2xx > 0) {
    const codes = Object.entries(measurement.statusCodes)
      .filter(([code]) => !code.startsWith('2'))
      .map(([code, count]) => `${count}× ${code}`)
      .join(', ');
    problems.push(`${measurement.non2xx} non-2xx answers (${codes})`);
  }
  if (measurement.errors > 0) problems.push(`${measurement.errors} errors (${measurement.timeouts} of them timeouts)`);
  return problems.length ? problems.join('; ') : undefined;
}
