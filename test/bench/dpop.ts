import { createHash, generateKeyPairSync, randomUUID, sign, type JsonWebKey } from 'node:crypto';

/**
 * RFC 9449 DPoP proofs, signed synchronously (node:crypto), so a scenario's `headers` factory
 * (autocannon's `setupRequest`, which cannot wait) can make a fresh proof for every request:
 *
 *   const key = createDpopKey();
 *   // enrol a device bound to key.thumbprint in `prepare`, then:
 *   headers: ({ method, url }) => ({ Host: host, Authorization: `DPoP ${token}`, DPoP: key.proof({ method, url, accessToken: token }) }),
 *   perRequest: true,
 */
export interface DpopKey {
  /** The public key as a JWK (EC P-256). */
  jwk: JsonWebKey;
  /** RFC 7638 SHA-256 thumbprint of the public key (the `jkt` a token is bound to). */
  thumbprint: string;
  proof(request: { method: string; url: string; accessToken?: string; nonce?: string }): string;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

export function createDpopKey(alg: 'ES256' | 'Ed25519' = 'ES256'): DpopKey {
  const { publicKey, privateKey } = alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const full = publicKey.export({ format: 'jwk' });
  const jwk: JsonWebKey = alg === 'ES256' ? { kty: full.kty, crv: full.crv, x: full.x, y: full.y } : { kty: full.kty, crv: full.crv, x: full.x };
  const canonical = alg === 'ES256' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  const thumbprint = b64url(createHash('sha256').update(JSON.stringify(canonical)).digest());
  const header = b64url(JSON.stringify({ typ: 'dpop+jwt', alg: alg === 'ES256' ? 'ES256' : 'EdDSA', jwk }));
  return {
    jwk,
    thumbprint,
    proof: ({ method, url, accessToken, nonce }) => {
      const target = new URL(url);
      const claims: Record<string, unknown> = {
        jti: randomUUID(),
        htm: method.toUpperCase(),
        htu: `${target.protocol}//${target.host}${target.pathname}`,
        iat: Math.floor(Date.now() / 1000),
      };
      if (accessToken) claims.ath = b64url(createHash('sha256').update(accessToken).digest());
      if (nonce) claims.nonce = nonce;
      const input = `${header}.${b64url(JSON.stringify(claims))}`;
      const signature = alg === 'ES256' ? sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }) : sign(null, Buffer.from(input), privateKey);
      return `${input}.${b64url(signature)}`;
    },
  };
}

/**
 * Proofs for one access token and one request (method + URL), signed ahead of a load phase so
 * that signing is not part of what is measured: `refill(n)` signs n proofs now, each with its own
 * `jti`; `next()` hands them out once each. A proof is single-use and the server refuses one whose
 * `iat` is older than DPOP_PROOF_WINDOW_SECONDS, so `next()` signs a fresh proof on the spot
 * (counted in `live`) when the pool is empty or its proofs are getting old (`maxAgeSeconds`).
 */
export class ProofPool {
  private pool: string[] = [];
  private index = 0;
  private signedAt = 0;
  /** Proofs handed out since the last `refill` / `resetCounts`: pre-signed and signed on the spot. */
  handedOut = 0;
  live = 0;
  /** Milliseconds the last `refill` took. */
  lastRefillMs = 0;

  constructor(
    private readonly key: DpopKey,
    private readonly request: { method: string; url: string; accessToken: string },
    private readonly maxAgeSeconds: number,
  ) {}

  refill(count: number): void {
    const started = performance.now();
    this.pool = new Array<string>(count);
    for (let i = 0; i < count; i++) this.pool[i] = this.key.proof(this.request);
    this.index = 0;
    this.signedAt = Date.now();
    this.lastRefillMs = performance.now() - started;
    this.resetCounts();
  }

  /** Forget the pre-signed proofs: every proof from now on is signed on the spot. */
  drain(): void {
    this.pool = [];
    this.index = 0;
    this.resetCounts();
  }

  resetCounts(): void {
    this.handedOut = 0;
    this.live = 0;
  }

  get remaining(): number {
    return this.pool.length - this.index;
  }

  next(): string {
    this.handedOut += 1;
    if (this.index < this.pool.length) {
      if (Date.now() - this.signedAt < this.maxAgeSeconds * 1000) return this.pool[this.index++]!;
      // Too old to be accepted for much longer: from here on, sign each one fresh.
      this.pool = [];
      this.index = 0;
    }
    this.live += 1;
    return this.key.proof(this.request);
  }
}
