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

export function createDpopKey(): DpopKey {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const full = publicKey.export({ format: 'jwk' });
  const jwk: JsonWebKey = { kty: full.kty, crv: full.crv, x: full.x, y: full.y };
  const thumbprint = b64url(createHash('sha256').update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })).digest());
  const header = b64url(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk }));
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
      const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      return `${input}.${b64url(signature)}`;
    },
  };
}
