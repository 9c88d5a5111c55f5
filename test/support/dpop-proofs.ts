import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, CompactSign, decodeJwt, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import type * as DPoP from 'dpop';
import { DeviceEntity } from '../../src/modules/devices/entities.js';
import type { TestPlatform } from './platform.js';

/**
 * A forger of DPoP proofs for tests: every header member and claim can be set, removed or made
 * wrong one at a time, and `iat` follows the test's ManualClock (the `dpop` package always signs
 * with the real time). With no overrides it makes a valid proof, the control of every refusal.
 */

export type ProofKeyAlg = 'ES256' | 'Ed25519' | 'RS256' | 'ES384';

export interface ProofKey {
  /** The `alg` a proof signed by this key carries by default (`Ed25519`, as the `dpop` package does). */
  alg: string;
  privateKey: CryptoKey;
  /** The public key as it goes into the `jwk` header. */
  publicJwk: JWK;
  /** RFC 7638 SHA-256 thumbprint: what a token is bound to. */
  jkt: string;
}

async function describeKey(alg: string, privateKey: CryptoKey, publicKey: CryptoKey): Promise<ProofKey> {
  const { kty, crv, x, y, n, e } = await exportJWK(publicKey);
  const publicJwk = Object.fromEntries(Object.entries({ kty, crv, x, y, n, e }).filter(([, value]) => value !== undefined)) as JWK;
  return { alg, privateKey, publicJwk, jkt: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

/**
 * A fresh key pair; its private key is extractable (to put `d` in a `jwk`). `signAs`: the `alg`
 * its proofs carry when not the key's own name (`EdDSA` for an Ed25519 key, the older name).
 */
export async function newProofKey(alg: ProofKeyAlg = 'ES256', options: { signAs?: string } = {}): Promise<ProofKey> {
  const pair = await generateKeyPair(alg, { extractable: true });
  return describeKey(options.signAs ?? alg, pair.privateKey, pair.publicKey);
}

/** The key pair the `dpop` package made (an enrolled device's), for the forger. */
export async function proofKeyOf(keys: DPoP.KeyPair): Promise<ProofKey> {
  const algorithm = keys.privateKey.algorithm as { name: string; namedCurve?: string };
  const alg = algorithm.name === 'ECDSA' ? 'ES256' : algorithm.name === 'Ed25519' ? 'Ed25519' : undefined;
  if (!alg) throw new Error(`proofKeyOf: unexpected key algorithm ${algorithm.name}`);
  return describeKey(alg, keys.privateKey, keys.publicKey);
}

/** The private key as a JWK (with `d`); the key must have been made by `newProofKey`. */
export async function privateJwkOf(key: ProofKey): Promise<JWK> {
  return exportJWK(key.privateKey);
}

export function sha256base64url(value: string): string {
  return createHash('sha256').update(value, 'ascii').digest('base64url');
}

/** Whole seconds of a clock, as `iat` carries them. */
export function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

export interface ForgeOptions {
  htm: string;
  htu: string;
  /** Seconds since the epoch. */
  iat: number;
  /** Sets `ath` to its hash. */
  accessToken?: string;
  nonce?: string;
  /** Default: a fresh UUID. */
  jti?: string;
  /** Merged over `{ typ, alg, jwk }`; a member set to `undefined` is left out. */
  header?: Record<string, unknown>;
  /** Merged over `{ jti, htm, htu, iat, ath, nonce }`; a member set to `undefined` is left out. */
  claims?: Record<string, unknown>;
  /** Sign with this key (or HMAC secret) instead of the proof key; `'none'`: an unsecured JWT. */
  signWith?: CryptoKey | Uint8Array | 'none';
  /** Pad the proof (a `pad` claim, and a `pad` header member when needed) to exactly this many characters. */
  length?: number;
}

function withoutUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined));
}

const encoder = new TextEncoder();
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

/** Base64url length (no padding) of n bytes. */
const b64Length = (bytes: number): number => Math.ceil((bytes * 4) / 3);

async function sign(header: Record<string, unknown>, claims: Record<string, unknown>, key: CryptoKey | Uint8Array | 'none'): Promise<string> {
  if (key === 'none') return `${b64(header)}.${b64(claims)}.`;
  return new CompactSign(encoder.encode(JSON.stringify(claims))).setProtectedHeader(header as { alg: string }).sign(key);
}

/** A proof's claims: a fresh `jti` unless given, `ath` of the token, then the overrides. */
function claimsOf(options: Omit<ForgeOptions, 'header' | 'signWith' | 'length'>): Record<string, unknown> {
  return withoutUndefined({
    jti: options.jti ?? randomUUID(),
    htm: options.htm,
    htu: options.htu,
    iat: options.iat,
    ath: options.accessToken === undefined ? undefined : sha256base64url(options.accessToken),
    nonce: options.nonce,
    ...options.claims,
  });
}

/** A DPoP proof made by `key`, valid for the given request unless told otherwise. */
export async function forgeProof(key: ProofKey, options: ForgeOptions): Promise<string> {
  const header = withoutUndefined({ typ: 'dpop+jwt', alg: key.alg, jwk: key.publicJwk, ...options.header });
  const claims = claimsOf(options);
  const signingKey = options.signWith ?? key.privateKey;
  if (options.length === undefined) return sign(header, claims, signingKey);

  // Signature length of a real signature with this key: sign once and measure.
  const signatureLength = (await sign(header, claims, signingKey)).split('.')[2]!.length;
  const target = options.length;
  // JSON grows one byte per padding character; find a header pad (0-3) and claim pad that land on target.
  for (let headerPad = 0; headerPad < 4; headerPad += 1) {
    const paddedHeader = headerPad === 0 ? header : { ...header, pad: 'h'.repeat(headerPad) };
    const headerLength = b64Length(Buffer.byteLength(JSON.stringify(paddedHeader)));
    const emptyClaims = Buffer.byteLength(JSON.stringify({ ...claims, pad: '' }));
    for (let claimPad = 0; claimPad < target; claimPad += 1) {
      const total = headerLength + 1 + b64Length(emptyClaims + claimPad) + 1 + signatureLength;
      if (total > target) break;
      if (total === target) {
        const proof = await sign(paddedHeader, { ...claims, pad: 'p'.repeat(claimPad) }, signingKey);
        if (proof.length !== target) throw new Error(`forgeProof: made ${proof.length} characters, wanted ${target}`);
        return proof;
      }
    }
  }
  throw new Error(`forgeProof: cannot make a proof of exactly ${target} characters`);
}

/**
 * Ed25519 public keys of small order (`x` of a `jwk`): the identity (y = 1), a point of order 4
 * (y = 0) and one of order 8 (from libsodium's list of small-order encodings).
 */
export const SMALL_ORDER_ED25519: Record<'identity' | 'order 4' | 'order 8', string> = {
  identity: Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]).toString('base64url'),
  'order 4': Buffer.alloc(32).toString('base64url'),
  'order 8': Buffer.from('26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', 'hex').toString('base64url'),
};

/**
 * A proof "signed" by a small-order Ed25519 public key without any private key: R the identity
 * and S zero. With the identity as the key, node:crypto (OpenSSL) verifies that signature over
 * every message. Answers the proof, its signed bytes, its signature and the key's thumbprint.
 */
export async function keylessProof(x: string, options: Omit<ForgeOptions, 'header' | 'signWith' | 'length'>): Promise<{ proof: string; signed: Buffer; signature: Buffer; jwk: JWK; jkt: string }> {
  const jwk: JWK = { kty: 'OKP', crv: 'Ed25519', x };
  const claims = claimsOf(options);
  const signed = `${b64({ typ: 'dpop+jwt', alg: 'EdDSA', jwk })}.${b64(claims)}`;
  const signature = Buffer.concat([Buffer.from([1]), Buffer.alloc(63)]);
  return { proof: `${signed}.${signature.toString('base64url')}`, signed: Buffer.from(signed, 'ascii'), signature, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

export interface RequestProofOptions {
  /** Default: `POST`. */
  method?: string;
  accessToken?: string;
  nonce?: string;
}

/** What `proofSigner` answers: a valid proof by `key` for one request to `url`. */
export type RequestProof = (key: ProofKey, url: string, options?: RequestProofOptions) => Promise<string>;

/**
 * Valid proofs for one request at a time whose `iat` is read from `clock`: a test's ManualClock
 * (the one the platform reads, which the `dpop` package cannot follow), or `{ now: () => new Date() }`
 * for the real time. An empty access token or nonce is left out, as if not given.
 */
export function proofSigner(clock: { now(): Date }): RequestProof {
  return (key, url, options = {}) =>
    forgeProof(key, {
      htm: options.method ?? 'POST',
      htu: url,
      iat: epochSeconds(clock.now()),
      accessToken: options.accessToken || undefined,
      nonce: options.nonce || undefined,
    });
}

/** The claims of a proof (to read the `iat` the `dpop` package put in). */
export function proofClaims(proof: string): Record<string, unknown> {
  return decodeJwt(proof);
}

/** Binds a device's tokens to another key, as if it had enrolled with it. */
export async function bindDevice(platform: TestPlatform, deviceId: string, key: ProofKey): Promise<void> {
  await platform.dataSource.manager.update(DeviceEntity, { id: deviceId }, { dpopJkt: key.jkt });
}
