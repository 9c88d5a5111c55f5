import { createPublicKey, generateKeyPair, randomBytes, randomUUID, type JsonWebKey } from 'node:crypto';
import { promisify } from 'node:util';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importJWK, SignJWT, UnsecuredJWT, type JWTPayload } from 'jose';
import Provider, {
  errors as providerErrors,
  type AccessToken,
  type Adapter,
  type AdapterPayload,
  type Configuration,
  type ResourceServer,
} from 'oidc-provider';
import type { OidcSettings } from '../../src/modules/organisation/service.js';
import { systemClock, type Clock } from '../../src/util/clock.js';
import { recordSecret } from './suite-record.js';

/**
 * A real OpenID Connect provider (node-oidc-provider) inside the test process, on a loopback
 * port, issuing RFC 9068 JWT access tokens for one API (resource indicator = audience).
 *
 * - `mint()` issues a token through the provider's own AccessToken model: the provider builds
 *   and signs the JWT with the key it publishes at its `jwks_uri`, exactly as its token endpoint
 *   would. The token endpoint itself only offers client credentials (`clientCredentialsToken()`,
 *   no person behind them), so tokens for a person (`sub`, `email`, `name`, a role claim) are
 *   minted here.
 * - `rotateKeys()` makes the provider publish and sign with a new key while it keeps serving
 *   at the same issuer and port: the platform must pick the key up without a restart.
 * - `forge` signs tokens outside the provider for the refusal cases (`alg: none`, HMAC keyed
 *   with the public key, a key the provider never published, wrong claims under its real key).
 * - `requests` counts what the provider was asked, by path, so tests can see when the platform
 *   fetched metadata or keys (and when it did not).
 * - With `interactive`, the client is a public client (PKCE, no secret) with those redirect URIs,
 *   and the provider serves its development login and consent pages (any login name signs in as
 *   the account of that name; any password): a browser signs in with the authorization code
 *   flow. `setAccount()` gives an account the claims its access tokens carry (email, name, a
 *   role claim). The token endpoint then offers no client credentials.
 */

const SIGNING_ALG = 'RS256';

/**
 * What oidc-provider says on `console.warn` that the suites expect, since they chose it: the
 * development login pages (`devInteractions`) of an interactive test provider. Printed with a
 * stack trace by jest, once per provider, they drowned the results of `npm test`. Any other
 * warning of the library still prints.
 */
export const EXPECTED_PROVIDER_WARNINGS: readonly RegExp[] = [/^oidc-provider WARNING: a quick start development-only feature devInteractions is enabled\b/];

/** Runs `build` (synchronous: the library warns while it constructs) with the expected warnings left out. */
export function withoutExpectedWarnings<T>(build: () => T): T {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && EXPECTED_PROVIDER_WARNINGS.some((expected) => expected.test(args[0] as string))) return;
    warn.apply(console, args);
  };
  try {
    return build();
  } finally {
    console.warn = warn;
  }
}
const generateKeyPairAsync = promisify(generateKeyPair);

export interface IdentityProviderOptions {
  /** Times of minted tokens come from this clock (use the platform's to keep both in step). */
  clock?: Clock;
  /** The API's resource indicator, which becomes the tokens' `aud`. */
  audience?: string;
  apiScope?: string;
  clientId?: string;
  /**
   * Browser sign-in (authorization code + PKCE) for a public client with these redirect URIs, or
   * with `confidential` for a client that authenticates with its secret (`client_secret_post`), as
   * the Cloud service is at Google and Microsoft. ID tokens carry the account's `email`,
   * `email_verified`, `xms_edov` and `name` when the scopes ask for them.
   */
  interactive?: { redirectUris: string[]; confidential?: boolean };
}

export interface MintOptions {
  sub?: string;
  /** Extra top-level claims: `email`, `name`, a role claim, `nbf`… (never overrides `iss`, `sub`, `aud`, `iat`, `exp`). */
  claims?: Record<string, unknown>;
  /** Space-separated scopes granted (default: the API scope). */
  scope?: string;
  /** `aud` of the token (default: the provider's API audience). */
  audience?: string;
  /** Seconds since the epoch (default: now by the provider's clock). */
  iat?: number;
  /** Seconds since the epoch (default: `iat` + 300). */
  exp?: number;
}

interface SigningKey {
  kid: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

async function newSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', { modulusLength: 2048 });
  const kid = `key-${randomUUID()}`;
  return {
    kid,
    privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: SIGNING_ALG, use: 'sig' },
    publicJwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: SIGNING_ALG, use: 'sig' },
  };
}

/**
 * The provider's storage, in memory and per instance. JWT access tokens are not stored at all;
 * this only replaces the library's development adapter (and its warning on every start).
 */
class ProviderStorage implements Adapter {
  private readonly entries = new Map<string, AdapterPayload>();

  async upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.entries.set(id, payload);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return this.entries.get(id);
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return [...this.entries.values()].find((payload) => payload.userCode === userCode);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return [...this.entries.values()].find((payload) => payload.uid === uid);
  }

  async consume(id: string): Promise<void> {
    const payload = this.entries.get(id);
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.entries.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, payload] of this.entries) if (payload.grantId === grantId) this.entries.delete(id);
  }
}

const epochSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

export class TestIdentityProvider {
  readonly audience: string;
  readonly apiScope: string;
  readonly clientId: string;
  readonly clientSecret = randomBytes(24).toString('base64url');
  /** Requests the provider answered, by path (`/.well-known/openid-configuration`, `/jwks`…). */
  readonly requests = new Map<string, number>();
  readonly forge: TokenForge;

  private provider!: Provider;
  private handler!: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  private server!: Server;
  private origin!: string;
  /** Newest first: the provider signs with the first key and publishes them all. */
  private keys: SigningKey[] = [];
  /** Claims a minted token should carry, handed to the provider's `extraTokenClaims`. */
  private readonly pendingClaims = new WeakMap<object, Record<string, unknown>>();
  private readonly cookieKeys = [randomBytes(32).toString('base64url')];
  private readonly clock: Clock;
  private readonly interactive: { redirectUris: string[]; confidential?: boolean } | undefined;
  /** Claims of accounts signing in interactively, by login name (= `sub`). */
  private readonly accounts = new Map<string, Record<string, unknown>>();

  private constructor(options: IdentityProviderOptions) {
    this.clock = options.clock ?? systemClock;
    this.interactive = options.interactive;
    this.audience = options.audience ?? 'https://platform-api.test';
    this.apiScope = options.apiScope ?? 'platform.api';
    this.clientId = options.clientId ?? 'workbench';
    this.forge = new TokenForge(this);
  }

  static async start(options: IdentityProviderOptions = {}): Promise<TestIdentityProvider> {
    const idp = new TestIdentityProvider(options);
    await idp.listen();
    return idp;
  }

  /** The issuer identifier, which is also where the provider answers. */
  get issuer(): string {
    return this.origin;
  }

  private async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', this.origin).pathname;
      this.requests.set(path, (this.requests.get(path) ?? 0) + 1);
      // Koa's callback answers its own errors (ctx.onerror): its promise never rejects.
      void this.handler(req, res);
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    // The issuer names the port, which is only known once listening; nothing is asked before.
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    this.keys = [await newSigningKey()];
    this.build();
  }

  /** The organisation settings that trust this provider. */
  settings(extra: { roleClaim?: string } = {}): OidcSettings {
    return { issuer: this.issuer, clientId: this.clientId, apiScope: this.apiScope, audience: this.audience, ...extra };
  }

  get currentKid(): string {
    return this.keys[0]!.kid;
  }

  /** The current signing key, private part included (for `forge`). */
  get signingKey(): SigningKey {
    return this.keys[0]!;
  }

  /** JWKS fetches the provider has answered so far. */
  get jwksFetches(): number {
    return this.requests.get('/jwks') ?? 0;
  }

  get totalRequests(): number {
    return [...this.requests.values()].reduce((sum, count) => sum + count, 0);
  }

  /**
   * Sign with a new key from now on, without a restart: same issuer, same port. The previous
   * keys stay published (a provider keeps them while tokens they signed are alive) unless
   * `retirePrevious`.
   */
  async rotateKeys(options: { retirePrevious?: boolean } = {}): Promise<string> {
    const next = await newSigningKey();
    this.keys = options.retirePrevious ? [next] : [next, ...this.keys];
    this.build();
    return next.kid;
  }

  /** Claims the access tokens of `login` carry when that account signs in interactively. */
  setAccount(login: string, claims: Record<string, unknown>): void {
    this.accounts.set(login, claims);
  }

  /**
   * Goes through the provider's development login and consent pages as a browser would, from an
   * authorization URL to the provider's redirect back to the client, and answers that redirect
   * (or the provider's error page status). `cancel` aborts at the login page instead.
   */
  async authorize(authorizationUrl: string, login: string, options: { cancel?: boolean } = {}): Promise<URL> {
    const jar = new Map<string, string>();
    let next: { url: string; method: 'GET' | 'POST'; body?: URLSearchParams } = { url: authorizationUrl, method: 'GET' };
    for (let step = 0; step < 12; step++) {
      const res = await fetch(next.url, {
        method: next.method,
        redirect: 'manual',
        headers: {
          cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
          ...(next.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        ...(next.body ? { body: next.body } : {}),
      });
      for (const cookie of res.headers.getSetCookie()) {
        const [pair] = cookie.split(';');
        const index = pair!.indexOf('=');
        jar.set(pair!.slice(0, index), pair!.slice(index + 1));
      }
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        const target = new URL(location, next.url);
        if (target.origin !== this.issuer) return target;
        next = { url: target.href, method: 'GET' };
        continue;
      }
      const page = await res.text();
      if (res.status !== 200) throw new Error(`the provider answered ${res.status}: ${page.slice(0, 500)}`);
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      if (!action || !prompt) throw new Error(`no form on the provider's page: ${page.slice(0, 500)}`);
      const submit = new URL(action.replace(/&amp;/g, '&'), next.url);
      if (prompt === 'login' && options.cancel) {
        next = { url: `${submit.href}/abort`, method: 'GET' };
      } else {
        const body = new URLSearchParams({ prompt });
        if (prompt === 'login') {
          body.set('login', login);
          body.set('password', 'any password');
        }
        next = { url: submit.href, method: 'POST', body };
      }
    }
    throw new Error('the provider kept redirecting');
  }

  /** A JWT access token, built and signed by the provider. */
  async mint(options: MintOptions = {}): Promise<string> {
    const client = await this.provider.Client.find(this.clientId);
    if (!client) throw new Error('the test client is not registered at the provider');
    const iat = options.iat ?? epochSeconds(this.clock.now());
    const token = new this.provider.AccessToken({
      client,
      accountId: options.sub ?? `person-${randomUUID()}`,
      grantId: randomUUID(),
      gty: 'authorization_code',
      scope: options.scope ?? this.apiScope,
      resourceServer: new this.provider.ResourceServer(options.audience ?? this.audience, this.resourceServer(options.audience ?? this.audience)),
      iat,
      exp: options.exp ?? iat + 300,
    });
    if (options.claims) this.pendingClaims.set(token, options.claims);
    const minted = await token.save();
    // No log line of the suite may ever hold a person's token (test/http/suite-checks.test.ts).
    recordSecret(minted);
    return minted;
  }

  /** A token from the provider's token endpoint (client credentials grant: `sub` is the client). */
  async clientCredentialsToken(): Promise<string> {
    if (this.interactive) throw new Error('an interactive provider has a public client: no client credentials');
    const res = await fetch(`${this.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: this.apiScope, resource: this.audience }),
    });
    const body = (await res.json()) as { access_token?: string };
    if (res.status !== 200 || !body.access_token) throw new Error(`the provider's token endpoint answered ${res.status}`);
    return body.access_token;
  }

  /** The claims a minted token carries, for forging look-alikes. */
  claims(overrides: JWTPayload = {}): JWTPayload {
    const iat = epochSeconds(this.clock.now());
    return {
      iss: this.issuer,
      sub: `person-${randomUUID()}`,
      aud: this.audience,
      scope: this.apiScope,
      client_id: this.clientId,
      jti: randomUUID(),
      iat,
      exp: iat + 300,
      ...overrides,
    };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  private resourceServer(audience: string): ResourceServer {
    return { audience, scope: `openid ${this.apiScope}`, accessTokenFormat: 'jwt', accessTokenTTL: 300, jwt: { sign: { alg: SIGNING_ALG } } };
  }

  /** A provider instance with the current keys; replacing it is how keys rotate in place. */
  private build(): void {
    const configuration: Configuration = {
      jwks: { keys: this.keys.map((key) => key.privateJwk) },
      cookies: { keys: this.cookieKeys },
      clients: [
        this.interactive
          ? {
              client_id: this.clientId,
              ...(this.interactive.confidential ? { client_secret: this.clientSecret, token_endpoint_auth_method: 'client_secret_post' } : { token_endpoint_auth_method: 'none' }),
              grant_types: ['authorization_code'],
              response_types: ['code'],
              redirect_uris: this.interactive.redirectUris,
            }
          : {
              client_id: this.clientId,
              client_secret: this.clientSecret,
              grant_types: ['client_credentials'],
              response_types: [],
              redirect_uris: [],
            },
      ],
      features: {
        devInteractions: { enabled: this.interactive !== undefined },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => this.audience,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== this.audience) throw new providerErrors.InvalidTarget();
            return this.resourceServer(indicator);
          },
        },
      },
      extraTokenClaims: (_ctx, token) =>
        this.pendingClaims.get(token) ?? ((token as AccessToken).gty === 'authorization_code' ? this.accounts.get((token as AccessToken).accountId) : undefined),
      // Accounts are whatever login name the development pages are given.
      findAccount: (_ctx, accountId) => ({ accountId, claims: () => ({ ...(this.accounts.get(accountId) ?? {}), sub: accountId }) }),
      claims: { openid: ['sub'], email: ['email', 'email_verified', 'xms_edov'], profile: ['name'] },
      // Scope claims go into the ID token (the Cloud service reads the person from it).
      conformIdTokenClaims: false,
      ttl: { AccessToken: 300, ClientCredentials: 300, AuthorizationCode: 60, IdToken: 300, Interaction: 600, Session: 3600, Grant: 3600 },
      adapter: ProviderStorage,
    };
    this.provider = withoutExpectedWarnings(() => new Provider(this.issuer, configuration));
    this.handler = this.provider.callback();
  }
}

/** Tokens the provider would never issue, each one way a verifier could be fooled. */
export class TokenForge {
  constructor(private readonly idp: TestIdentityProvider) {}

  /** `alg: none`: no signature at all. */
  unsigned(claims: JWTPayload = {}): string {
    return new UnsecuredJWT(this.idp.claims(claims)).encode();
  }

  /**
   * HS256 keyed with the provider's public key (its PEM text), naming the real `kid`: a verifier
   * that lets the token choose the algorithm would check this "signature" with the public key.
   */
  async hmacWithPublicKey(claims: JWTPayload = {}): Promise<string> {
    const publicPem = createPublicKey({ key: this.idp.signingKey.publicJwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    return new SignJWT(this.idp.claims(claims))
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: this.idp.currentKid })
      .sign(new TextEncoder().encode(publicPem.toString()));
  }

  /** Signed by a key the provider never published. */
  async unknownKey(claims: JWTPayload = {}): Promise<string> {
    const stranger = await newSigningKey();
    return new SignJWT(this.idp.claims(claims))
      .setProtectedHeader({ alg: SIGNING_ALG, typ: 'at+jwt', kid: stranger.kid })
      .sign(await importJWK(stranger.privateJwk as Parameters<typeof importJWK>[0], SIGNING_ALG));
  }

  /**
   * Signed with the provider's real current key but with claims it would not issue (another
   * `iss`, no `sub`…): only the claim checks stand between this token and acceptance.
   */
  async withProviderKey(claims: JWTPayload = {}, options: { omit?: readonly string[] } = {}): Promise<string> {
    const payload = this.idp.claims(claims);
    for (const claim of options.omit ?? []) delete payload[claim];
    return new SignJWT(payload)
      .setProtectedHeader({ alg: SIGNING_ALG, typ: 'at+jwt', kid: this.idp.currentKid })
      .sign(await importJWK(this.idp.signingKey.privateJwk as Parameters<typeof importJWK>[0], SIGNING_ALG));
  }
}

/** The token with some claims changed after signing: the signature no longer covers the payload. */
export function tamper(token: string, claims: JWTPayload): string {
  const [header, , signature] = token.split('.');
  const payload = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as JWTPayload;
  return [header, Buffer.from(JSON.stringify({ ...payload, ...claims })).toString('base64url'), signature].join('.');
}
