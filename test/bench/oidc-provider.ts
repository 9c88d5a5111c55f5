import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';

/**
 * A tiny OpenID provider on loopback: a discovery document and a JWKS with one ES256 key, so the
 * platform verifies person tokens exactly as it would against a real provider. It counts what it
 * served, so the bench can show that keys were fetched once and then cached.
 */
export interface BenchProvider {
  issuer: string;
  hits: { discovery: number; jwks: number; other: number };
  mint(claims: { sub: string; audience: string; scope: string; lifetimeSeconds: number; extra?: Record<string, unknown> }): Promise<string>;
  close(): Promise<void>;
}

export async function startProvider(): Promise<BenchProvider> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const kid = 'bench-es256';
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const hits = { discovery: 0, jwks: 0, other: 0 };
  let issuer = '';

  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/.well-known/openid-configuration') {
      hits.discovery += 1;
      send(200, {
        issuer,
        jwks_uri: `${issuer}/jwks`,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
      });
    } else if (req.method === 'GET' && req.url === '/jwks') {
      hits.jwks += 1;
      send(200, { keys: [jwk] });
    } else {
      hits.other += 1;
      send(404, { error: 'not_found' });
    }
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    issuer,
    hits,
    mint: ({ sub, audience, scope, lifetimeSeconds, extra }) => sign(privateKey, kid, issuer, { sub, audience, scope, lifetimeSeconds, ...(extra ? { extra } : {}) }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function sign(
  key: CryptoKey,
  kid: string,
  issuer: string,
  claims: { sub: string; audience: string; scope: string; lifetimeSeconds: number; extra?: Record<string, unknown> },
): Promise<string> {
  return new SignJWT({ ...claims.extra, scope: claims.scope })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(claims.audience)
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(`${claims.lifetimeSeconds}s`)
    .sign(key);
}
