import { createHash, createHmac, createPublicKey, hash, randomBytes, timingSafeEqual, verify as verifySignature, type KeyObject } from 'node:crypto';
import type { Request } from 'express';
import type { JWK, JWTPayload } from 'jose';
import { ed25519 } from '@noble/curves/ed25519.js';
import { requestOrigin } from '../http/origin.js';
import type { ReplayCache } from '../state/replay-cache.js';
import type { Clock } from '../util/clock.js';
import { safeEqual } from '../util/secrets.js';

/**
 * DPoP proofs (RFC 9449). One verifier for every device request, the token endpoints included.
 * Each rule is one named step below so a reviewer can match it to the RFC's section 4.3 list.
 */

/** Algorithms accepted for proofs: ES256 and EdDSA (Ed25519). `Ed25519` is the fully-specified
 * name (RFC 9864) that current client libraries sign with; it is the same key type. */
export const DPOP_ALGORITHMS = ['ES256', 'EdDSA', 'Ed25519'] as const;
export const DPOP_ADVERTISED_ALGS = 'ES256 EdDSA';

const MAX_PROOF_LENGTH = 4096;
const MAX_JTI_LENGTH = 128;
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

export type DpopErrorCode = 'invalid_dpop_proof' | 'use_dpop_nonce';

export class DpopError extends Error {
  constructor(
    readonly code: DpopErrorCode,
    message: string,
    /** A fresh nonce to send back as `DPoP-Nonce` (with `use_dpop_nonce`, or a stale nonce). */
    readonly nonce?: string,
  ) {
    super(message);
    this.name = 'DpopError';
  }
}

export interface DpopOptions {
  clock: Clock;
  replay: ReplayCache;
  /** Oldest acceptable `iat`, in seconds before now. */
  windowSeconds: number;
  /** How far in the future `iat` may be (client clocks run fast). */
  futureSkewSeconds: number;
  /** Require a server nonce (`DPoP-Nonce`) in every proof. */
  requireNonce: boolean;
  /** Key of the stateless nonces; shared by every replica. */
  nonceSecret: Buffer;
  nonceLifetimeSeconds: number;
}

export interface ProofExpectations {
  method: string;
  /** The request URL as the client addressed it, without query and fragment. */
  url: string;
  /** The access token the proof must be bound to (`ath`); absent at the token endpoints. */
  accessToken?: string | undefined;
  /** Its SHA-256, base64url, when the caller already computed it (then `accessToken` is not hashed again). */
  accessTokenHash?: string | undefined;
  /** The key thumbprint the token or device code is bound to; absent when nothing is bound yet. */
  boundJkt?: string | undefined;
}

export interface VerifiedProof {
  jkt: string;
  jti: string;
}

function sha256base64url(value: string): string {
  return hash('sha256', value, 'base64url');
}

/** scheme://host[:port]/path, lower-case scheme and host, default port dropped; no query or fragment. */
export function normaliseHtu(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** The URL the client addressed, as `htu` must name it: the request's trusted origin (the one
 * tenancy chose the organisation by; src/http/origin.ts) and its path. */
export function requestHtu(req: Request): string {
  const url = req.originalUrl;
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  const origin = requestOrigin(req).origin;
  // Parsed once per (origin, path): a device polls the same URL all day.
  const key = `${origin}\n${path}`;
  let htu = expectedHtus.get(key);
  if (htu === undefined) {
    htu = normaliseHtu(`${origin}${path}`) ?? '';
    if (expectedHtus.size >= 1_000) expectedHtus.clear();
    expectedHtus.set(key, htu);
  }
  return htu;
}

const expectedHtus = new Map<string, string>();
const normalised = new Map<string, string | undefined>();

function normalisedOnce(url: string): string | undefined {
  if (normalised.has(url)) return normalised.get(url);
  const value = normaliseHtu(url);
  if (normalised.size >= 1_000) normalised.clear();
  normalised.set(url, value);
  return value;
}

/** Constant-time comparison of two values whose length is public (base64url hashes and
 * thumbprints): unequal lengths differ at once, equal ones are compared byte by byte. */
function sameFixedLength(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const left = Buffer.from(a, 'latin1');
  const right = Buffer.from(b, 'latin1');
  return left.length === right.length && timingSafeEqual(left, right);
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * One proof signature, checked on libuv's thread pool (node:crypto's callback form) rather than
 * on the event loop: a proof is new on every request, so its signature is the one check no cache
 * can skip, and it is the largest single cost of a DPoP request (close to half its CPU time). Off the
 * loop, other requests are parsed and answered while it runs, and a second core does the
 * verifying. The answer is the same function's answer; an error is thrown as before.
 */
function signatureHolds(alg: string, data: Buffer, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, valid: boolean) => (error ? reject(error) : resolve(valid));
    // The header check let through ES256 on a P-256 key, or EdDSA / Ed25519 on an Ed25519 key.
    if (alg === 'ES256') verifySignature('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature, done);
    else verifySignature(null, data, key, signature, done);
  });
}

function jsonObject(encoded: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Public keys of proofs, imported once per key: a device signs every proof with the same key.
 * Keyed by the key's RFC 7638 thumbprint input (its required members), so a JWK with extra
 * members is the same key. Bounded: the oldest keys are forgotten first.
 */
/**
 * An Ed25519 public key a signature can bind to: a canonical encoding (y below p) of a point
 * outside the small subgroup. OpenSSL verifies against any point it can decode, and for a
 * small-order key (the identity, or one of order 2, 4 or 8) a signature made without any private
 * key verifies (R the identity and S zero: for every message, with the identity). A device bound
 * to such a key would hold a binding anyone who saw one of its proofs could forge, so it is
 * refused like any key that cannot be imported. (P-256 has cofactor 1: node:crypto refuses a
 * point off the curve, and the identity has no coordinates to send.)
 */
function isPrimeOrderEd25519(x: unknown): boolean {
  if (typeof x !== 'string' || !BASE64URL.test(x)) return false;
  const bytes = Buffer.from(x, 'base64url');
  if (bytes.length !== 32) return false;
  try {
    return !ed25519.Point.fromBytes(bytes).isSmallOrder();
  } catch {
    return false;
  }
}

class ProofKeys {
  private readonly keys = new Map<string, { key: KeyObject; jkt: string }>();

  constructor(private readonly capacity = 10_000) {}

  get(jwk: JWK): { key: KeyObject; jkt: string } | undefined {
    // RFC 7638 3.2: the required members, in lexicographic order, as JSON.
    const canonical =
      jwk.kty === 'EC' ? JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }) : JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
    const known = this.keys.get(canonical);
    if (known) return known;
    if (jwk.kty === 'OKP' && !isPrimeOrderEd25519(jwk.x)) return undefined;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: JSON.parse(canonical) as Record<string, string>, format: 'jwk' });
    } catch {
      return undefined;
    }
    const entry = { key, jkt: createHash('sha256').update(canonical, 'utf8').digest('base64url') };
    if (this.keys.size >= this.capacity) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(canonical, entry);
    return entry;
  }
}

/** A proof header that passed step 3, with its key (step 4's look-up). */
interface CheckedHeader {
  alg: string;
  publicKey: { key: KeyObject; jkt: string };
}

/**
 * Proof headers already checked, by their encoded text: a device signs every proof with the same
 * header (typ, alg and its public key), so its JSON is parsed, checked and its key found once.
 * Only headers that passed every header check are kept; anything else is checked afresh (and
 * refused as before). Bounded: the oldest are forgotten first.
 */
const MAX_KEPT_HEADER_LENGTH = 512;

class CheckedHeaders {
  private readonly headers = new Map<string, CheckedHeader>();

  constructor(private readonly capacity = 10_000) {}

  get(encoded: string): CheckedHeader | undefined {
    return this.headers.get(encoded);
  }

  set(encoded: string, checked: CheckedHeader): void {
    // A device's header (typ, alg, a P-256 or Ed25519 key) is about 150 to 250 characters; a
    // longer one (extra members) is checked every time rather than kept, so the map holds at most
    // capacity × MAX_KEPT_HEADER_LENGTH characters whatever proofs strangers send.
    if (encoded.length > MAX_KEPT_HEADER_LENGTH) return;
    if (this.headers.size >= this.capacity) this.headers.delete(this.headers.keys().next().value as string);
    this.headers.set(encoded, checked);
  }
}

export class DpopVerifier {
  private readonly keys = new ProofKeys();
  private readonly checkedHeaders = new CheckedHeaders();

  constructor(private readonly options: DpopOptions) {}

  /** Whether proofs must carry a server nonce (then answers hand out fresh ones). */
  get noncesRequired(): boolean {
    return this.options.requireNonce;
  }

  /** A stateless nonce: the time step it was made in, authenticated with the nonce secret. */
  newNonce(): string {
    const step = Math.floor(this.options.clock.now().getTime() / 1000 / this.options.nonceLifetimeSeconds);
    return this.nonceFor(step);
  }

  private nonceFor(step: number): string {
    const mac = createHmac('sha256', this.options.nonceSecret).update(`dpop-nonce:${step}`).digest('base64url').slice(0, 22);
    return `${step.toString(36)}.${mac}`;
  }

  private nonceIsCurrent(nonce: string): boolean {
    const [stepText] = nonce.split('.');
    const step = Number.parseInt(stepText ?? '', 36);
    if (!Number.isSafeInteger(step)) return false;
    const current = Math.floor(this.options.clock.now().getTime() / 1000 / this.options.nonceLifetimeSeconds);
    // The current and the previous step are accepted, so a nonce lives one to two lifetimes.
    return (step === current || step === current - 1) && safeEqual(nonce, this.nonceFor(step));
  }

  /** Steps 3 and 4 (the key) for a header not checked before; kept once it passed them. */
  private checkHeader(encodedHeader: string, refuse: (message: string) => never): CheckedHeader {
    const header = jsonObject(encodedHeader);
    if (!header) return refuse('the DPoP proof is not a well-formed JWT');

    // 3. Header: typ, an accepted asymmetric alg, a public jwk of the matching key type, and no
    // extension this verifier does not implement (`crit`, unencoded payloads).
    if (header.typ !== 'dpop+jwt') refuse('the DPoP proof must have typ dpop+jwt');
    const alg = header.alg;
    if (typeof alg !== 'string' || !(DPOP_ALGORITHMS as readonly string[]).includes(alg)) {
      refuse(`the DPoP proof must be signed with ${DPOP_ADVERTISED_ALGS}`);
    }
    if (header.crit !== undefined || header.b64 !== undefined) refuse('the DPoP proof uses JWS extensions this service does not accept');
    const jwk = header.jwk as JWK | undefined;
    if (!jwk || typeof jwk !== 'object' || Array.isArray(jwk)) return refuse('the DPoP proof must carry the public key as jwk');
    if (PRIVATE_JWK_MEMBERS.some((member) => member in jwk)) refuse('the DPoP proof jwk must not contain private key material');
    const keyMatchesAlg = alg === 'ES256' ? jwk.kty === 'EC' && jwk.crv === 'P-256' : jwk.kty === 'OKP' && jwk.crv === 'Ed25519';
    if (!keyMatchesAlg) refuse('the DPoP proof jwk does not match its alg');

    // 4. The key: node:crypto on a key object kept per key (a device signs every proof with the
    // same key; WebCrypto's import and verify cost several times more).
    const publicKey = this.keys.get(jwk);
    if (!publicKey) return refuse('the DPoP proof signature is invalid');
    const checked = { alg, publicKey };
    this.checkedHeaders.set(encodedHeader, checked);
    return checked;
  }

  async verify(proof: string | undefined, expected: ProofExpectations): Promise<VerifiedProof> {
    function refuse(message: string): never {
      throw new DpopError('invalid_dpop_proof', message);
    }
    // 1. Exactly one well-formed proof.
    if (proof === undefined || proof === '') return refuse('a DPoP proof is required');
    if (proof.length > MAX_PROOF_LENGTH) return refuse(`the DPoP proof is longer than ${MAX_PROOF_LENGTH} characters`);
    if (proof.includes(',')) return refuse('the DPoP header must hold exactly one proof');

    // 2. Compact JWS: three base64url parts, a JSON object header.
    const parts = proof.split('.');
    if (parts.length !== 3 || parts.some((part) => !BASE64URL.test(part))) return refuse('the DPoP proof is not a well-formed JWT');
    const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
    // 3. The header (typ, alg, jwk), checked once per distinct header: `checkHeader`.
    const { alg, publicKey } = this.checkedHeaders.get(encodedHeader) ?? this.checkHeader(encodedHeader, refuse);
    // 4. Signature by the header's key. The bound key is known before the signature is checked: another key's proof stops here.
    if (expected.boundJkt !== undefined && !sameFixedLength(publicKey.jkt, expected.boundJkt)) refuse('the DPoP proof is signed by another key');
    const signature = Buffer.from(encodedSignature, 'base64url');
    const signedBytes = Buffer.from(`${encodedHeader}.${encodedPayload}`, 'ascii');
    const valid = signature.length === 64 && (await signatureHolds(alg, signedBytes, publicKey.key, signature));
    if (!valid) return refuse('the DPoP proof signature is invalid');
    // The rule takes this for no change of type (JWTPayload's index signature); the claims below are read through it.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    const payload = jsonObject(encodedPayload) as (JWTPayload & { htm?: unknown; htu?: unknown; ath?: unknown; nonce?: unknown }) | undefined;
    if (!payload) return refuse('the DPoP proof is not a well-formed JWT');
    // Registered time claims, when present, are numbers and hold (RFC 7519 4.1).
    const nowSeconds = this.options.clock.now().getTime() / 1000;
    for (const claim of ['iat', 'exp', 'nbf'] as const) {
      if (payload[claim] !== undefined && (typeof payload[claim] !== 'number' || !Number.isFinite(payload[claim]))) refuse(`the DPoP proof ${claim} claim is not valid`);
    }
    if (payload.exp !== undefined && payload.exp <= nowSeconds) refuse('the DPoP proof exp claim is not valid');
    if (payload.nbf !== undefined && payload.nbf > nowSeconds) refuse('the DPoP proof nbf claim is not valid');

    // 5. Claims: jti, htm, htu, iat.
    const { jti, htm, htu, iat, ath, nonce } = payload;
    if (typeof jti !== 'string' || jti.length < 1 || jti.length > MAX_JTI_LENGTH) refuse(`the DPoP proof needs a jti of 1 to ${MAX_JTI_LENGTH} characters`);
    if (htm !== expected.method.toUpperCase()) refuse('the DPoP proof htm does not match the request method');
    // An unparseable request URL matches nothing (two undefineds are not a match).
    // The expected URL is normalised once per distinct URL (requestHtu already hands it over
    // normalised); a proof naming exactly it needs no parsing (normalising a normalised URL
    // changes nothing).
    const expectedHtu = normalisedOnce(expected.url);
    if (expectedHtu === undefined || typeof htu !== 'string' || (htu !== expectedHtu && normaliseHtu(htu) !== expectedHtu)) {
      refuse('the DPoP proof htu does not match the request URL');
    }
    const now = this.options.clock.now().getTime() / 1000;
    if (typeof iat !== 'number' || !Number.isFinite(iat)) return refuse('the DPoP proof needs an iat');
    if (iat > now + this.options.futureSkewSeconds) refuse('the DPoP proof was issued in the future');
    if (iat < now - this.options.windowSeconds) refuse('the DPoP proof is too old');

    // 6. Bound to the access token when one is presented.
    if (expected.accessToken !== undefined) {
      if (typeof ath !== 'string' || !sameFixedLength(ath, expected.accessTokenHash ?? sha256base64url(expected.accessToken))) {
        refuse('the DPoP proof ath does not match the access token');
      }
    }

    // 7. The key's thumbprint (compared with the bound one before the signature, in step 4).
    const jkt = publicKey.jkt;

    // 8. Server nonce, when required.
    if (this.options.requireNonce) {
      if (typeof nonce !== 'string' || !this.nonceIsCurrent(nonce)) {
        throw new DpopError('use_dpop_nonce', 'the DPoP proof must carry the current server nonce', this.newNonce());
      }
    }

    // 9. Never seen before within the window: one proof, one request.
    const replayKey = sha256base64url(`${jkt}\n${expected.method.toUpperCase()}\n${expectedHtu}\n${jti}`);
    // Remembered past the last instant the iat check still accepts the proof (iat + window,
    // inclusive): a cache entry protects only strictly before its expiry. The skew is margin for
    // replicas whose clocks differ; one more second keeps the bound strict when the skew is 0.
    const expiresAt = new Date((iat + this.options.windowSeconds + this.options.futureSkewSeconds + 1) * 1000);
    if (!(await this.options.replay.unique(replayKey, expiresAt))) refuse('the DPoP proof was already used');

    return { jkt, jti };
  }
}

/** A random nonce secret for a single replica when none is configured. */
export function randomNonceSecret(): Buffer {
  return randomBytes(32);
}
