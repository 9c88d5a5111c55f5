import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import express, { type NextFunction, type Request, type Response } from 'express';
import { auth } from 'express-oauth2-jwt-bearer';
import { watchParent } from './child.js';

/**
 * The peers: what a user could put in front of their data instead of the platform, each answering
 * the same policy document at GET /policy/v1 (BENCH_POLICY_FILE, the platform's own answer).
 *
 * - `PEER=jwt`: Express with express-oauth2-jwt-bearer (ES256 JWT access tokens from the bench's
 *   OpenID provider, JWKS fetched once and cached by the library), its DPoP support on (Bearer and
 *   DPoP accepted; a DPoP token carries `cnf.jkt`). The library checks a proof's signature, `htm`,
 *   `htu`, `iat` and `ath` but keeps no record of proofs: single use is the application's part,
 *   here an in-memory replay cache of `jti`s, each kept until its proof is too old to be accepted
 *   (its `iat` + the library's iatOffset), as its documentation describes.
 * - `PEER=opaque`: Express with an opaque-token lookup: SHA-256 of the token, one prepared SELECT on
 *   an indexed column (better-sqlite3, in memory), expiry and revocation checked. Its tokens come in
 *   BENCH_OPAQUE_TOKENS (JSON: `[{ token, revoked }]`).
 */
const policy = Buffer.from(readFileSync(process.env.BENCH_POLICY_FILE!, 'utf8'));
const app = express();
app.disable('x-powered-by');
app.set('etag', false);

const answer = (_req: Request, res: Response) => {
  res.status(200).set('Content-Type', 'application/json; charset=utf-8').end(policy);
};

if (process.env.PEER === 'jwt') {
  const IAT_OFFSET = 300; // the library's default acceptance window for a proof's iat, seconds
  app.use(
    auth({
      issuer: process.env.BENCH_ISSUER!,
      jwksUri: `${process.env.BENCH_ISSUER!}/jwks`,
      audience: process.env.BENCH_AUDIENCE!,
      tokenSigningAlg: 'ES256',
      dpop: { enabled: true, required: false, iatOffset: IAT_OFFSET },
    }),
  );
  const seen = new Map<string, number>();
  let sweptAt = Date.now();
  app.use((req: Request, res: Response, next: NextFunction) => {
    const proof = req.headers.dpop;
    if (typeof proof !== 'string') return next();
    const payload = JSON.parse(Buffer.from(proof.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti?: string; iat?: number };
    const now = Date.now();
    if (now - sweptAt > 10_000) {
      for (const [jti, until] of seen) if (until <= now) seen.delete(jti);
      sweptAt = now;
    }
    if (!payload.jti || seen.has(payload.jti)) {
      res.status(401).set('WWW-Authenticate', 'DPoP error="invalid_dpop_proof"').json({ error: 'invalid_dpop_proof' });
      return;
    }
    seen.set(payload.jti, ((payload.iat ?? 0) + IAT_OFFSET) * 1000);
    next();
  });
  app.get('/policy/v1', answer);
} else {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE tokens (token_hash TEXT NOT NULL, device_id TEXT NOT NULL, expires_at INTEGER NOT NULL, revoked INTEGER NOT NULL)');
  db.exec('CREATE UNIQUE INDEX tokens_hash ON tokens (token_hash)');
  const insert = db.prepare('INSERT INTO tokens VALUES (?, ?, ?, ?)');
  const tokens = JSON.parse(process.env.BENCH_OPAQUE_TOKENS ?? '[]') as { token: string; revoked: boolean }[];
  tokens.forEach(({ token, revoked }, index) => insert.run(createHash('sha256').update(token).digest('hex'), `dev_${index}`, Date.now() + 3_600_000, revoked ? 1 : 0));
  const find = db.prepare('SELECT device_id, expires_at, revoked FROM tokens WHERE token_hash = ?');
  app.get('/policy/v1', (req: Request, res: Response) => {
    const match = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/.exec(req.headers.authorization ?? '');
    const row = match ? (find.get(createHash('sha256').update(match[1]!).digest('hex')) as { device_id: string; expires_at: number; revoked: number } | undefined) : undefined;
    if (!row || row.revoked || row.expires_at <= Date.now()) {
      res.status(401).set('WWW-Authenticate', 'Bearer error="invalid_token"').json({ error: 'unauthorized' });
      return;
    }
    answer(req, res);
  });
}
app.use((error: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
  res.status(error.status ?? 500).json({ error: error.name });
});

const server = app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1', (error?: Error) => {
  if (error) {
    process.stderr.write(`peer server: ${error.message}\n`);
    process.exit(1);
  }
});
watchParent(() => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
