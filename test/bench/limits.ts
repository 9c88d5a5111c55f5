import { createHash, generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import type { Ops } from './scenarios.js';

/**
 * What no implementation can avoid, measured in this process with node:crypto in the same run:
 * one ES256 signature verification, one Ed25519 verification, one SHA-256 of a 56-character
 * token. Each is the median of 5 rounds of `rounds` operations, in microseconds.
 *
 * The ideal ratio of a scenario. The bare handler answers `bare` requests per second with the
 * server's core saturated, so one bare request costs 1/bare seconds of that core. A server doing
 * only that plus the scenario's unavoidable work `c` (seconds: Σ cost_us × count / 1e6) spends
 * 1/bare + c per request and answers 1 / (1/bare + c) requests per second; divided by bare:
 *
 *     ideal = 1 / (1 + bare × Σ cost_us × count / 1e6)
 *
 * (The load generator's own share of the machine is the same for both, as in the measured ratio.)
 * This is a ceiling for a server that verifies every request's credential; one that caches a
 * verified token (as the platform does for a few seconds, src/auth/auth-cache.ts) skips the
 * token's signature on a hit, so its person-token figure may pass this line. A DPoP proof is
 * fresh on every request: its signature is never skipped.
 */
export interface CryptoCosts {
  es256: number;
  ed25519: number;
  sha256: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function time(rounds: number, work: () => void): number {
  const samples: number[] = [];
  for (let round = 0; round < 5; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) work();
    samples.push(Number(process.hrtime.bigint() - started) / 1_000 / rounds);
  }
  return median(samples);
}

export function measureCryptoCosts(): CryptoCosts {
  const message = Buffer.from(`${randomBytes(120).toString('base64url')}.${randomBytes(200).toString('base64url')}`);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ecSignature = sign('sha256', message, { key: ec.privateKey, dsaEncoding: 'ieee-p1363' });
  const ed = generateKeyPairSync('ed25519');
  const edSignature = sign(null, message, ed.privateKey);
  const token = `platform_at_${randomBytes(32).toString('base64url')}`;
  // Warm up, then measure.
  time(50, () => verify('sha256', message, { key: ec.publicKey, dsaEncoding: 'ieee-p1363' }, ecSignature));
  return {
    es256: time(400, () => {
      if (!verify('sha256', message, { key: ec.publicKey, dsaEncoding: 'ieee-p1363' }, ecSignature)) throw new Error('ES256 verify failed');
    }),
    ed25519: time(400, () => {
      if (!verify(null, message, ed.publicKey, edSignature)) throw new Error('Ed25519 verify failed');
    }),
    sha256: time(20_000, () => createHash('sha256').update(token).digest()),
  };
}

export function unavoidableMicros(ops: Ops, costs: CryptoCosts): number {
  return (ops.es256 ?? 0) * costs.es256 + (ops.ed25519 ?? 0) * costs.ed25519 + (ops.sha256 ?? 0) * costs.sha256;
}

export function idealRatio(ops: Ops, costs: CryptoCosts, bareRps: number): number {
  return 1 / (1 + (bareRps * unavoidableMicros(ops, costs)) / 1e6);
}

export function describeOps(ops: Ops): string {
  const parts = [ops.es256 ? `${ops.es256}×ES256` : '', ops.ed25519 ? `${ops.ed25519}×Ed25519` : '', ops.sha256 ? `${ops.sha256}×SHA-256` : ''].filter(Boolean);
  return parts.length ? parts.join(' + ') : 'nothing';
}
