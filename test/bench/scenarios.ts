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

export type TargetName = 'bare' | 'bare-classes' | 'platform' | 'platform-cloud' | 'peer-jwt' | 'peer-opaque';
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
  /** The target for `vs bare` (issue 13), printed met or missed. */
  goal?: number;
  /** What no implementation of this request can avoid (limits.ts): the ideal ratio is computed from it. */
  ops?: Ops;
  /** Which figure this one is compared with (service/peer ratios), by scenario name. */
  peerOf?: string;
}

export interface Ops {
  es256?: number;
  ed25519?: number;
  sha256?: number;
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
    /** Bound to `dpopEdKey` (Ed25519). */
    dpopEdToken: string;
    dpopEdKey: DpopKey;
  };
  /** A Cloud session of a team's owner, and that team (X-Platform-Organisation). */
  cloud: { accessToken: string; organisationId: string };
  /** The peers' credentials (peer-server.ts). */
  peers: { jwtBearer: string; jwtBearerOtherAudience: string; jwtDpop: string; jwtDpopKey: DpopKey; opaque: string; opaqueRevoked: string };
}

/** The server must refuse the credential: 401 (or 400, express-oauth2-jwt-bearer's answer to a DPoP
 * token sent without a proof). */
async function refused(origin: string, path: string, label: string, headers: Record<string, string>): Promise<void> {
  const answer = await send(`${origin}${path}`, { headers, timeoutMs: 10_000 });
  if (answer.status !== 401 && answer.status !== 400) throw new Error(`a ${label} was answered ${answer.status}, not 401 or 400: ${answer.body.slice(0, 200)}`);
}

/** One character of the token's last part changed (a signature or a secret that no longer matches). */
function tampered(token: string): string {
  const at = token.length - 3;
  return `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`;
}

/** Before a Bearer scenario: no credential, a tampered one and `third` must all be refused. */
function bearerRefusals(host: string, path: string, token: string, third: { label: string; token: string }) {
  return async (origin: string) => {
    await refused(origin, path, 'request without a credential', { Host: host });
    await refused(origin, path, 'tampered token', { Host: host, Authorization: `Bearer ${tampered(token)}` });
    await refused(origin, path, third.label, { Host: host, Authorization: `Bearer ${third.token}` });
  };
}

/**
 * DPoP proofs for the measured phase are signed before it starts (a pool with one proof, one
 * `jti`, per request), so signing costs the load generator nothing while it measures. The pool
 * holds twice what the scenario's own warm-up rate says the phase will use, plus a margin: the
 * warm-up signs each proof on the spot (it is not measured), and that signing takes CPU the
 * server then lacks (it checks proof signatures on libuv's thread pool, src/auth/dpop.ts), so
 * the measured phase, with nothing to sign, runs about 1.5 times faster than the warm-up. A proof
 * is accepted until its `iat` is DPOP_PROOF_WINDOW_SECONDS old (60 s by default, left as is), so
 * pooled proofs are used only while they are younger than that window minus 10 s; after that, or
 * when the pool runs out, each proof is signed on the spot, and the report says how many were.
 */
function dpopProofs(fixtures: Fixtures, path: string, dpopKey: DpopKey, dpopToken: string) {
  const { proofWindowSeconds } = fixtures.policyDevices;
  // The URL the server sees: `Host: bench.local` on plain HTTP (no TRUST_PROXY in the bench).
  const pool = new ProofPool(dpopKey, { method: 'GET', url: `http://${fixtures.host}${path}`, accessToken: dpopToken }, proofWindowSeconds - 10);
  let phase = '';
  return {
    next: () => pool.next(),
    /** Before the load: one proof sent twice must be refused the second time, so a server that
     * stopped checking proofs cannot pass for a fast DPoP path. */
    checkReplayRefused: async (origin: string) => {
      await refused(origin, path, 'DPoP request without a proof', { Host: fixtures.host, Authorization: `DPoP ${dpopToken}` });
      await refused(origin, path, 'tampered DPoP proof', { Host: fixtures.host, Authorization: `DPoP ${dpopToken}`, DPoP: tampered(pool.next()) });
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
      pool.refill(Math.ceil((expectedRate ?? 2_000) * usableSeconds * 2) + 500);
    },
    note: () => {
      if (phase !== 'measurement') return undefined;
      const pooled = pool.handedOut - pool.live;
      return `${pool.handedOut} DPoP proofs handed to autocannon in the measurement, ${pooled} pre-signed (pool signed in ${(pool.lastRefillMs / 1000).toFixed(1)} s before it started, ${pool.remaining} left unused), ${pool.live} signed on the spot during it`;
    },
  };
}

function dpopScenario(fixtures: Fixtures, name: string, target: TargetName, key: DpopKey, token: string, extra: Partial<Scenario>): Scenario {
  const proofs = dpopProofs(fixtures, '/policy/v1', key, token);
  const authorization = `DPoP ${token}`;
  return {
    name,
    target,
    method: 'GET',
    path: '/policy/v1',
    perRequest: true,
    prepare: proofs.checkReplayRefused,
    headers: () => ({ Host: fixtures.host, Authorization: authorization, DPoP: proofs.next() }),
    beforePhase: proofs.beforePhase,
    note: proofs.note,
    ...extra,
  };
}

export const BEARER_POLICY = 'device token (Bearer): GET /policy/v1';
export const DPOP_POLICY = 'device token (DPoP ES256): GET /policy/v1';
export const BARE_CLASSES = "bare express, born with the app's prototypes: GET /";
export const PEER_OPAQUE = 'peer: express + opaque token, better-sqlite3 (Bearer)';
export const PEER_JWT_BEARER = 'peer: express-oauth2-jwt-bearer (Bearer ES256 JWT)';
export const PEER_JWT_DPOP = 'peer: express-oauth2-jwt-bearer (DPoP ES256)';

/** The first scenario on the `bare` target is the baseline every ratio is computed against. */
export function scenarios(fixtures: Fixtures): Scenario[] {
  const { host } = fixtures;
  const { bearerToken, dpopToken, dpopKey, dpopEdToken, dpopEdKey } = fixtures.policyDevices;
  return [
    {
      name: 'bare express: GET /',
      target: 'bare',
      method: 'GET',
      path: '/',
    },
    {
      // Not a target: how much of the bare handler's own cost is Express changing each request's
      // prototype (the platform's server avoids it: src/lifecycle.ts `appClasses`).
      name: BARE_CLASSES,
      target: 'bare-classes',
      method: 'GET',
      path: '/',
    },
    {
      name: 'discovery: GET /.well-known/platform.json',
      target: 'platform',
      method: 'GET',
      path: '/.well-known/platform.json',
      headers: () => ({ Host: host }),
      goal: 0.85,
      ops: {},
    },
    {
      name: 'person token: GET /platform/v1/organisation',
      target: 'platform',
      method: 'GET',
      path: '/platform/v1/organisation',
      headers: () => ({ Host: host, Authorization: `Bearer ${fixtures.personToken}` }),
      prepare: bearerRefusals(host, '/platform/v1/organisation', fixtures.personToken, { label: 'token for another audience', token: fixtures.peers.jwtBearerOtherAudience }),
      goal: 0.55,
      ops: { es256: 1 },
    },
    {
      name: 'Cloud session + X-Platform-Organisation: GET /platform/v1/organisation',
      target: 'platform-cloud',
      method: 'GET',
      path: '/platform/v1/organisation',
      headers: () => ({ Host: 'bench.cloud', Authorization: `Bearer ${fixtures.cloud.accessToken}`, 'X-Platform-Organisation': fixtures.cloud.organisationId }),
      goal: 0.55,
      ops: { sha256: 1 },
    },
    {
      name: BEARER_POLICY,
      target: 'platform',
      method: 'GET',
      path: '/policy/v1',
      headers: () => ({ Host: host, Authorization: `Bearer ${bearerToken}` }),
      prepare: bearerRefusals(host, '/policy/v1', bearerToken, { label: 'key-bound token sent as Bearer', token: dpopToken }),
      goal: 0.65,
      ops: { sha256: 1 },
    },
    dpopScenario(fixtures, DPOP_POLICY, 'platform', dpopKey, dpopToken, { goal: 0.4, ops: { es256: 1, sha256: 2 } }),
    dpopScenario(fixtures, 'device token (DPoP Ed25519): GET /policy/v1', 'platform', dpopEdKey, dpopEdToken, { goal: 0.5, ops: { ed25519: 1, sha256: 2 } }),
    {
      name: PEER_OPAQUE,
      target: 'peer-opaque',
      method: 'GET',
      path: '/policy/v1',
      headers: () => ({ Host: host, Authorization: `Bearer ${fixtures.peers.opaque}` }),
      prepare: bearerRefusals(host, '/policy/v1', fixtures.peers.opaque, { label: 'revoked token', token: fixtures.peers.opaqueRevoked }),
      ops: { sha256: 1 },
    },
    {
      name: PEER_JWT_BEARER,
      target: 'peer-jwt',
      method: 'GET',
      path: '/policy/v1',
      headers: () => ({ Host: host, Authorization: `Bearer ${fixtures.peers.jwtBearer}` }),
      prepare: bearerRefusals(host, '/policy/v1', fixtures.peers.jwtBearer, { label: 'token for another audience', token: fixtures.peers.jwtBearerOtherAudience }),
      ops: { es256: 1 },
    },
    dpopScenario(fixtures, PEER_JWT_DPOP, 'peer-jwt', fixtures.peers.jwtDpopKey, fixtures.peers.jwtDpop, { ops: { es256: 2, sha256: 1 } }),
  ];
}
