import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small OAuth 2 provider on loopback that plays GitHub or Facebook for the Cloud sign-in:
 * an authorization endpoint that signs in the current `user` at once (or refuses, with
 * `refuse`), a token endpoint that checks the client secret, the code, its redirect URI and the
 * PKCE verifier, and the user APIs the service reads (GitHub `/user` and `/user/emails`;
 * Facebook `/me` with an `appsecret_proof`). `requests` records what was asked, by path.
 */

export interface FakeAccount {
  id: number | string;
  name?: string;
  login?: string;
  /** GitHub: the account's addresses; Facebook: the first is `email` when `primary`. */
  emails: { email: string; primary: boolean; verified: boolean }[];
}

export class FakeOAuthProvider {
  readonly clientId = `client-${randomBytes(4).toString('hex')}`;
  readonly clientSecret = randomBytes(16).toString('hex');
  readonly requests: { path: string; query: URLSearchParams; body?: URLSearchParams }[] = [];
  user: FakeAccount = { id: 1, emails: [] };
  /** The authorization endpoint answers `error=access_denied`. */
  refuse = false;
  private readonly codes = new Map<string, { redirectUri: string; challenge: string | null; user: FakeAccount }>();
  private readonly tokens = new Map<string, FakeAccount>();
  private server!: Server;
  origin!: string;

  private constructor(readonly kind: 'github' | 'facebook') {}

  static async start(kind: 'github' | 'facebook'): Promise<FakeOAuthProvider> {
    const provider = new FakeOAuthProvider(kind);
    provider.server = createServer((req, res) => void provider.handle(req, res));
    await new Promise<void>((resolve) => provider.server.listen(0, '127.0.0.1', resolve));
    provider.origin = `http://127.0.0.1:${(provider.server.address() as AddressInfo).port}`;
    return provider;
  }

  /** The service's configuration for this provider. */
  env(): Record<string, string> {
    const prefix = this.kind.toUpperCase();
    return {
      [`${prefix}_CLIENT_ID`]: this.clientId,
      [`${prefix}_CLIENT_SECRET`]: this.clientSecret,
      [`${prefix}_AUTHORIZATION_URL`]: `${this.origin}/authorize`,
      [`${prefix}_TOKEN_URL`]: `${this.origin}/token`,
      [`${prefix}_API_URL`]: `${this.origin}/api`,
    };
  }

  /** Follows the authorization URL as a browser would: the redirect back to the service. */
  async authorize(authorizationUrl: string): Promise<URL> {
    const res = await fetch(authorizationUrl, { redirect: 'manual' });
    const location = res.headers.get('location');
    if (res.status !== 302 || !location) throw new Error(`the fake ${this.kind} answered ${res.status}`);
    return new URL(location);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.origin);
    let body: URLSearchParams | undefined;
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      body = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    }
    this.requests.push({ path: url.pathname, query: url.searchParams, ...(body ? { body } : {}) });
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === '/authorize') {
      const redirectUri = url.searchParams.get('redirect_uri') ?? '';
      const back = new URL(redirectUri);
      if (url.searchParams.get('client_id') !== this.clientId) return json(400, { error: 'unknown client' });
      if (this.refuse) back.searchParams.set('error', 'access_denied');
      else {
        const code = randomBytes(12).toString('hex');
        this.codes.set(code, { redirectUri, challenge: url.searchParams.get('code_challenge'), user: this.user });
        back.searchParams.set('code', code);
      }
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.href });
      return void res.end();
    }
    if (url.pathname === '/token' && body) {
      const code = this.codes.get(body.get('code') ?? '');
      this.codes.delete(body.get('code') ?? '');
      const verifier = body.get('code_verifier') ?? '';
      const pkceOk = !code?.challenge || createHash('sha256').update(verifier).digest('base64url') === code.challenge;
      if (body.get('client_id') !== this.clientId || body.get('client_secret') !== this.clientSecret) return json(401, { error: 'invalid_client' });
      if (!code || code.redirectUri !== body.get('redirect_uri') || !pkceOk) return json(400, { error: 'invalid_grant' });
      const token = randomBytes(16).toString('hex');
      this.tokens.set(token, code.user);
      return json(200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const user = this.tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!user) return json(401, { message: 'Bad credentials' });
    if (this.kind === 'github' && url.pathname === '/api/user') return json(200, { id: user.id, login: user.login ?? `user${user.id}`, name: user.name ?? null });
    if (this.kind === 'github' && url.pathname === '/api/user/emails') return json(200, user.emails.map((entry) => ({ ...entry, visibility: null })));
    if (this.kind === 'facebook' && url.pathname === '/api/me') {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const proof = createHmac('sha256', this.clientSecret).update(token).digest('hex');
      if (url.searchParams.get('appsecret_proof') !== proof) return json(400, { error: { message: 'Invalid appsecret_proof' } });
      const primary = user.emails.find((entry) => entry.primary && entry.verified);
      return json(200, { id: String(user.id), name: user.name, ...(primary ? { email: primary.email } : {}) });
    }
    return json(404, { message: 'Not Found' });
  }
}
