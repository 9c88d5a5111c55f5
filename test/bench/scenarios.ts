import { ProofPool, type DpopKey } from './dpop.js';
import { send } from './servers.js';

/**
 * What the bench measures over HTTP with autocannon. To add a scenario, add an object to the
 * list `scenarios()` returns. (The ingest throughput part is not a request loop of this kind:
 * see ingest.ts.)
 *
 * `headers` is called once per run, or once per request when `perRequest` is true (a DPoP
 * scenario: a fresh proof, with its own `jti`, for every request; see `dpop.ts`). It runs in the
 * load generator's event loop and must be synchronous and cheap, or it becomes what is measured.
 */

export type TargetName = 'bare' | 'platform';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestShape {
  method: HttpMethod;
  /** The absolute URL the request goes to (for a DPoP proof's `htu`). */
  url: string;
}

export interface Scenario {
  name: string;
  target: TargetName;
  method: HttpMethod;
  path: string;
  headers?: (request: RequestShape) => Record<string, string>;
  /** Call `headers` (and `body`) again for every request. */
  perRequest?: boolean;
  body?: (request: RequestShape) => string;
  /** Runs once before the scenario's warm-up, with its target up (enrol a device, seed data...). */
  prepare?: (origin: string) => Promise<void>;
  /**
   * Runs right before each load phase (after the preflight request). `expectedRate` is the
   * best guess of this scenario's requests/s: its own warm-up's, else the bare baseline's.
   */
  beforePhase?: (phase: { name: 'warm-up' | 'measurement'; seconds: number; expectedRate: number | undefined }) => void;
  /** A line for the report about how the last phase was driven (e.g. where its DPoP proofs came from). */
  note?: () => string | undefined;
}

/** What the harness has set up before any scenario runs. */
export interface Fixtures {
  /** The host name the bench organisation is served at. */
  host: string;
  /** A person token for that organisation, from the bench's own OpenID provider. */
  personToken: string;
  /** Access tokens of two workbenches of that organisation (see fixtures.ts). */
  policyDevices: {
    bearerToken: string;
    /** Bound to `dpopKey`: every request needs a fresh proof signed with it. */
    dpopToken: string;
    dpopKey: DpopKey;
    /** DPOP_PROOF_WINDOW_SECONDS of the platform under test: how old a proof may get. */
    proofWindowSeconds: number;
  };
}

/**
 * DPoP proofs for the measured phase are signed before it starts (a pool with one proof, one
 * `jti`, per request), so signing costs the load generator nothing while it measures. The pool
 * holds 1.5 times what the scenario's own warm-up rate says the phase will use, plus a margin;
 * the warm-up itself signs each proof on the spot (it is not measured). A proof is accepted until
 * its `iat` is DPOP_PROOF_WINDOW_SECONDS old (60 s by default, left as is), so pooled proofs are
 * used only while they are younger than that window minus 10 s; after that, or when the pool runs
 * out, each proof is signed on the spot, and the report says how many were.
 */
function dpopProofs(fixtures: Fixtures, path: string) {
  const { dpopKey, dpopToken, proofWindowSeconds } = fixtures.policyDevices;
  // The URL the server sees: `Host: bench.local` on plain HTTP (no TRUST_PROXY in the bench).
  const pool = new ProofPool(dpopKey, { method: 'GET', url: `http://${fixtures.host}${path}`, accessToken: dpopToken }, proofWindowSeconds - 10);
  let phase = '';
  return {
    next: () => pool.next(),
    /** Before the load: one proof sent twice must be refused the second time, so a server that
     * stopped checking proofs cannot pass for a fast DPoP path. */
    checkReplayRefused: async (origin: string) => {
      const headers = { Host: fixtures.host, Authorization: `DPoP ${dpopToken}`, DPoP: pool.next() };
      const first = await send(`${origin}${path}`, { headers, timeoutMs: 10_000 });
      const again = await send(`${origin}${path}`, { headers, timeoutMs: 10_000 });
      if (first.status !== 200 || again.status !== 401) {
        throw new Error(`a DPoP proof sent twice was answered ${first.status}, then ${again.status} (expected 200, then 401): ${again.body.slice(0, 300)}`);
      }
    },
    beforePhase: ({ name, seconds, expectedRate }: { name: 'warm-up' | 'measurement'; seconds: number; expectedRate: number | undefined }) => {
      phase = name;
      if (name === 'warm-up') {
        pool.drain();
        return;
      }
      // No more than can be used before they get too old (a long --duration signs the rest on the spot).
      const usableSeconds = Math.min(seconds, proofWindowSeconds - 10);
      pool.refill(Math.ceil((expectedRate ?? 2_000) * usableSeconds * 1.5) + 500);
    },
    note: () => {
      if (phase !== 'measurement') return undefined;
      const pooled = pool.handedOut - pool.live;
      return `${pool.handedOut} DPoP proofs handed to autocannon in the measurement, ${pooled} pre-signed (pool signed in ${(pool.lastRefillMs / 1000).toFixed(1)} s before it started, ${pool.remaining} left unused), ${pool.live} signed on the spot during it`;
    },
  };
}

/** The first scenario on the `bare` target is the baseline every ratio is computed against. */
export function scenarios(fixtures: Fixtures): Scenario[] {
  return [
    {
      name: 'bare express: GET /',
      target: 'bare',
      method: 'GET',
      path: '/',
    },
    {
      name: 'discovery: GET /.well-known/platform.json',
      target: 'platform',
      method: 'GET',
      path: '/.well-known/platform.json',
      headers: () => ({ Host: fixtures.host }),
    },
    {
      name: 'person token: GET /platform/v1/organisation',
      target: 'platform',
      method: 'GET',
      path: '/platform/v1/organisation',
      headers: () => ({ Host: fixtures.host, Authorization: `Bearer ${fixtures.personToken}` }),
    },
    {
      name: 'device token (Bearer): GET /policy/v1',
      target: 'platform',
      method: 'GET',
      path: '/policy/v1',
      headers: () => ({ Host: fixtures.host, Authorization: `Bearer ${fixtures.policyDevices.bearerToken}` }),
    },
    (() => {
      const proofs = dpopProofs(fixtures, '/policy/v1');
      const authorization = `DPoP ${fixtures.policyDevices.dpopToken}`;
      return {
        name: 'device token (DPoP): GET /policy/v1',
        target: 'platform',
        method: 'GET',
        path: '/policy/v1',
        perRequest: true,
        prepare: proofs.checkReplayRefused,
        headers: () => ({ Host: fixtures.host, Authorization: authorization, DPoP: proofs.next() }),
        beforePhase: proofs.beforePhase,
        note: proofs.note,
      } satisfies Scenario;
    })(),
  ];
}
