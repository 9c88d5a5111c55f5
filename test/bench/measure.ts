import autocannon from 'autocannon';
import type { RequestShape, Scenario } from './scenarios.js';

export interface LoadOptions {
  connections: number;
  durationSeconds: number;
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
}

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
  try {
    const result = await finished;
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
