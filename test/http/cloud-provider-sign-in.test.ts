import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignInMethodEntity } from '../../src/modules/signin/entities.js';
import {
  BASE_URL,
  bearer,
  CONSOLE_REDIRECT,
  emailSignIn,
  MOBILE_REDIRECT,
  pkce,
  startCloud,
  type CloudPlatform,
} from '../support/cloud.js';
import { CookieJar } from '../support/cookie-jar.js';
import { call } from '../support/platform.js';
import { returnToCallback, StandInProviders, startSignIn, type Provider } from '../support/providers.js';

/**
 * Sign-in through identity providers (spec 4.3 `GET /auth/v1/start`): the service's own
 * authorization-code flow with each provider through its callback, the person matched by
 * (provider, subject), and the client sent back to its redirect URI with a one-time code.
 * `oidc-provider` on loopback plays Google and Microsoft; a small OAuth 2 server plays GitHub and
 * Facebook.
 */

let platform: CloudPlatform;
let providers: StandInProviders;

beforeAll(async () => {
  providers = await StandInProviders.start();
  platform = await startCloud({ env: { ...providers.env(), AUTH_PROVIDER_ORDER: 'github,email,google' } });
});

afterAll(async () => {
  await providers?.close();
  await platform?.close();
});

interface Started {
  verifier: string;
  challenge: string;
  location: URL;
  /** The browser that opened the start (its cookies). */
  browser: CookieJar;
}

async function startAt(provider: string, extra: Record<string, string> = {}, browser = new CookieJar()): Promise<Started> {
  return { ...(await startSignIn(platform, browser, provider, extra)), browser };
}

/** Through the provider (as `login` for the OpenID providers) and back through our callback, in `browser` (the one that started, unless told). */
async function throughProvider(provider: Provider, started: Started, login = 'someone', browser = started.browser): Promise<URL> {
  const back = await providers.authorize(provider, started.location.href, login);
  expect(`${back.origin}${back.pathname}`).toBe(`${BASE_URL}/auth/v1/callback/${provider}`);
  return returnToCallback(platform, browser, back);
}

async function exchange(code: string, verifier: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) {
  return call(platform, 'post', '/auth/v1/token', { headers, body: { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT, ...extra } });
}

/** A whole sign-in: the person it signed in, and their tokens. */
async function signIn(provider: Provider, login?: string, extra: Record<string, string> = {}) {
  const started = await startAt(provider, extra);
  const back = await throughProvider(provider, started, login);
  expect(back.searchParams.get('error')).toBeNull();
  const token = await exchange(back.searchParams.get('code')!, started.verifier);
  expect(token.status).toBe(200);
  const me = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(token.body.access_token) });
  return { tokens: token.body, me: me.body };
}

/** A link of `provider` by its owner: the ticket, the flow in the owner's browser, the code exchanged with the owner's session. */
async function link(provider: Provider, owner: { access_token: string }, login?: string) {
  const ticket = (await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) })).body.ticket as string;
  const started = await startAt(provider, { link: ticket });
  const back = await throughProvider(provider, started, login);
  return { ticket, started, back, token: back.searchParams.get('code') ? await exchange(back.searchParams.get('code')!, started.verifier, {}, bearer(owner.access_token)) : undefined };
}

function expectRedirectError(location: URL, error: string, state: string | null = 'client-state'): void {
  expect(`${location.origin}${location.pathname}`).toBe(CONSOLE_REDIRECT);
  expect(location.searchParams.get('error')).toBe(error);
  expect(location.searchParams.get('error_description')).toEqual(expect.any(String));
  expect(location.searchParams.get('state')).toBe(state);
  expect(location.searchParams.get('iss')).toBe(BASE_URL);
  expect(location.searchParams.get('code')).toBeNull();
}

describe('GET /auth/v1/providers', () => {
  it('lists the enabled providers and email in the configured order, with labels', async () => {
    const res = await call(platform, 'get', '/auth/v1/providers');
    expect(res.status).toBe(200);
    expect(res.body.providers).toEqual([
      { id: 'github', label: 'GitHub' },
      { id: 'email', label: 'Email' },
      { id: 'google', label: 'Google' },
      { id: 'microsoft', label: 'Microsoft' },
      { id: 'facebook', label: 'Facebook' },
    ]);
  });

  it('lists only email when no provider is configured', async () => {
    const bare = await startCloud();
    try {
      expect((await call(bare, 'get', '/auth/v1/providers')).body.providers).toEqual([{ id: 'email', label: 'Email' }]);
      // A provider that is not enabled is refused at the client's redirect URI.
      const { challenge } = await pkce();
      const res = await call(bare, 'get', `/auth/v1/start?${new URLSearchParams({ provider: 'google', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge, state: 'client-state' })}`);
      expectRedirectError(new URL(res.headers.location!), 'invalid_request');
    } finally {
      await bare.close();
    }
  });
});

describe('GET /auth/v1/start: the request', () => {
  const base = async () => ({ provider: 'google', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: (await pkce()).challenge, state: 'client-state' });

  it.each([
    ['an unregistered redirect_uri', { redirect_uri: 'https://evil.test/signed-in' }],
    ['a redirect_uri that only starts like a registered one', { redirect_uri: `${CONSOLE_REDIRECT}/../x` }],
    ['a redirect_uri of the other client', { client: 'mobile' }],
    ['no client', { client: undefined }],
    ['no redirect_uri', { redirect_uri: undefined }],
  ])('answers %s with 400 invalid_request as JSON, never a redirect', async (_case, change) => {
    const query = { ...(await base()), ...change } as Record<string, string | undefined>;
    const res = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined))}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field: 'query.redirect_uri' });
    expect(res.headers.location).toBeUndefined();
  });

  it.each([
    ['no provider', { provider: undefined }],
    ['an unknown provider', { provider: 'yahoo' }],
    ['email, which has its own operations', { provider: 'email' }],
    ['no code_challenge', { code_challenge: undefined }],
    ['a code_challenge that is not 43 base64url characters', { code_challenge: 'abc' }],
    ['the plain PKCE method', { code_challenge_method: 'plain' }],
    ['a link ticket that was never issued', { link: 'platform_lt_nope' }],
  ])('sends %s back to the redirect URI with error=invalid_request and the state', async (_case, change) => {
    const query = { ...(await base()), ...change } as Record<string, string | undefined>;
    const res = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined))}`);
    expect(res.status).toBe(302);
    expectRedirectError(new URL(res.headers.location!), 'invalid_request');
  });

  it('refuses a state over 500 characters (without echoing it) and a parameter given twice', async () => {
    const query = new URLSearchParams({ ...(await base()), state: 'x'.repeat(501) });
    const long = await call(platform, 'get', `/auth/v1/start?${query}`);
    expectRedirectError(new URL(long.headers.location!), 'invalid_request', null);
    const twice = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams(await base())}&provider=github`);
    expectRedirectError(new URL(twice.headers.location!), 'invalid_request');
  });

  it('accepts a state of exactly 500 characters and returns it unchanged', async () => {
    const state = `${'é&=?#'.repeat(99)}12345`;
    expect(state).toHaveLength(500);
    const started = await startAt('github', { state });
    const back = await throughProvider('github', started);
    expect(back.searchParams.get('state')).toBe(state);
    expect(back.searchParams.get('code')).toMatch(/^platform_sc_/);
  });

  it('sends the browser to the provider with PKCE S256, a state of its own and its callback on PLATFORM_BASE_URL', async () => {
    const started = await startAt('google');
    expect(started.location.origin).toBe(providers.google.issuer);
    const params = started.location.searchParams;
    expect(params.get('redirect_uri')).toBe(`${BASE_URL}/auth/v1/callback/google`);
    expect(params.get('code_challenge_method')).toBe('S256');
    expect(params.get('code_challenge')).not.toBe(started.challenge);
    expect(params.get('state')).toMatch(/^platform_fs_/);
    expect(params.get('nonce')).toEqual(expect.any(String));
    expect(params.get('scope')).toBe('openid email profile');
    expect(params.get('client_id')).toBe('platform-cloud');
  });

  it('serves the mobile app at its private-use redirect URI', async () => {
    const { verifier, challenge } = await pkce();
    const query = new URLSearchParams({ provider: 'github', client: 'mobile', redirect_uri: MOBILE_REDIRECT, code_challenge: challenge, state: 'm' });
    const res = await call(platform, 'get', `/auth/v1/start?${query}`);
    const browser = new CookieJar().store(res.headers['set-cookie']);
    const back = await providers.github.authorize(res.headers.location!);
    const done = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: browser.headers() });
    const location = new URL(done.headers.location!);
    expect(location.protocol).toBe('com.example.platform:');
    const token = await call(platform, 'post', '/auth/v1/token', {
      body: { grant_type: 'authorization_code', code: location.searchParams.get('code'), code_verifier: verifier, redirect_uri: MOBILE_REDIRECT, client_id: 'mobile' },
    });
    expect(token.status).toBe(200);
  });
});

describe('OpenID Connect providers (Google, Microsoft)', () => {
  it('first sign-in creates the person and their personal organisation; the next finds them by provider and subject', async () => {
    providers.google.setAccount('grace', { email: 'grace@example.test', email_verified: true, name: 'Grace Hopper' });
    const first = await signIn('google', 'grace');
    expect(first.me).toMatchObject({
      name: 'Grace Hopper',
      email: 'grace@example.test',
      organisations: [{ kind: 'personal', plan: 'free', role: 'owner', name: 'Grace Hopper' }],
      signInMethods: [{ provider: 'google', email: 'grace@example.test', emailVerified: true }],
    });
    platform.clock.advance(60_000);
    providers.google.setAccount('grace', { email: 'grace@new.example.test', email_verified: true, name: 'Grace B. Hopper' });
    const second = await signIn('google', 'grace');
    expect(second.me.id).toBe(first.me.id);
    expect(second.me.signInMethods).toHaveLength(1);
    expect(second.me.signInMethods[0].email).toBe('grace@new.example.test');
    expect(Date.parse(second.me.signInMethods[0].lastUsedAt)).toBeGreaterThan(Date.parse(first.me.signInMethods[0].lastUsedAt));
    const stored = await platform.dataSource.getRepository(SignInMethodEntity).findOneByOrFail({ provider: 'google', subject: 'grace' });
    expect(stored.personId).toBe(first.me.id);
  });

  it('joins a verified address to the person who already signs in with it', async () => {
    const byEmail = await emailSignIn(platform, 'ada@example.test');
    providers.google.setAccount('ada-google', { email: 'Ada@Example.test', email_verified: true, name: 'Ada' });
    const viaGoogle = await signIn('google', 'ada-google');
    expect(viaGoogle.me.id).toBe(byEmail.personId);
    expect(viaGoogle.me.signInMethods.map((method: { provider: string }) => method.provider).sort()).toEqual(['email', 'google']);
  });

  it('never joins an address the provider did not verify: Microsoft without email_verified or xms_edov is a new person', async () => {
    const byEmail = await emailSignIn(platform, 'victim@example.test');
    providers.microsoft.setAccount('mallory', { email: 'victim@example.test', name: 'Mallory' });
    const attacker = await signIn('microsoft', 'mallory');
    expect(attacker.me.id).not.toBe(byEmail.personId);
    expect(attacker.me.email).toBeNull();
    expect(attacker.me.signInMethods).toEqual([expect.objectContaining({ provider: 'microsoft', email: 'victim@example.test', emailVerified: false })]);
    // Google's email_verified=false is refused the same way.
    providers.google.setAccount('mallory2', { email: 'victim@example.test', email_verified: false });
    expect((await signIn('google', 'mallory2')).me.id).not.toBe(byEmail.personId);
    // Microsoft's verified-domain claim does count.
    providers.microsoft.setAccount('vic', { email: 'victim@example.test', xms_edov: true, name: 'Vic' });
    expect((await signIn('microsoft', 'vic')).me.id).toBe(byEmail.personId);
  });

  it('passes a refusal at the provider back to the client as access_denied with its state', async () => {
    const started = await startAt('google');
    const back = await providers.google.authorize(started.location.href, 'x', { cancel: true });
    const res = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: started.browser.headers() });
    expectRedirectError(new URL(res.headers.location!), 'access_denied');
  });

  it('sends temporarily_unavailable when the provider cannot be reached', async () => {
    const unreachable = await startCloud({ env: { GOOGLE_CLIENT_ID: 'x', GOOGLE_CLIENT_SECRET: 'y', GOOGLE_ISSUER: 'http://127.0.0.1:1', OIDC_HTTP_TIMEOUT_MS: '1000' } });
    try {
      const query = new URLSearchParams({ provider: 'google', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: (await pkce()).challenge, state: 'client-state' });
      const res = await call(unreachable, 'get', `/auth/v1/start?${query}`);
      expectRedirectError(new URL(res.headers.location!), 'temporarily_unavailable');
    } finally {
      await unreachable.close();
    }
  });
});

describe('OAuth 2 providers (GitHub, Facebook)', () => {
  it('GitHub: the numeric id names the account, and only the primary verified address counts', async () => {
    providers.github.user = { id: 4242, login: 'octo', name: 'Octo Cat', emails: [{ email: 'octo@work.test', primary: false, verified: true }, { email: 'octo@home.test', primary: true, verified: true }] };
    const first = await signIn('github');
    expect(first.me.signInMethods).toEqual([expect.objectContaining({ provider: 'github', email: 'octo@home.test', emailVerified: true })]);
    expect(first.me.name).toBe('Octo Cat');
    // The token endpoint got the client secret and the PKCE verifier.
    const tokenRequest = providers.github.requests.filter((entry) => entry.path === '/token').at(-1)!;
    expect(tokenRequest.body?.get('client_secret')).toBe(providers.github.clientSecret);
    expect(tokenRequest.body?.get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    // An unverified primary address is no address at all.
    providers.github.user = { id: 5151, login: 'nomail', emails: [{ email: 'octo@home.test', primary: true, verified: false }] };
    const unverified = await signIn('github');
    expect(unverified.me.id).not.toBe(first.me.id);
    expect(unverified.me.email).toBeNull();
    expect(unverified.me.name).toBe('nomail');
    expect(unverified.me.signInMethods[0]).toMatchObject({ email: null, emailVerified: false });
  });

  it('Facebook: /me with an appsecret_proof names the account', async () => {
    providers.facebook.user = { id: '10001', name: 'Fay Book', emails: [{ email: 'fay@example.test', primary: true, verified: true }] };
    const first = await signIn('facebook');
    expect(first.me).toMatchObject({ name: 'Fay Book', email: 'fay@example.test', signInMethods: [{ provider: 'facebook', emailVerified: true }] });
    expect((await signIn('facebook')).me.id).toBe(first.me.id);
  });

  it('passes a refusal back as access_denied', async () => {
    providers.github.refuse = true;
    try {
      const started = await startAt('github');
      expectRedirectError(await throughProvider('github', started), 'access_denied');
    } finally {
      providers.github.refuse = false;
    }
  });
});

describe('the callback', () => {
  it('refuses an answer for a sign-in it did not start, one it already finished, and one of another provider, with 400 invalid_request', async () => {
    expect((await call(platform, 'get', '/auth/v1/callback/github?code=x&state=platform_fs_unknown')).body.error).toBe('invalid_request');
    expect((await call(platform, 'get', '/auth/v1/callback/github?code=x')).status).toBe(400);
    providers.github.user = { id: 777, emails: [] };
    const started = await startAt('github');
    const back = await providers.github.authorize(started.location.href);
    // Another provider's callback cannot finish it (a mix-up), and does not use it up.
    const mixedUp = await call(platform, 'get', `/auth/v1/callback/facebook${back.search}`, { headers: started.browser.headers() });
    expect(mixedUp.status).toBe(400);
    expect((await call(platform, 'get', `${back.pathname}${back.search}`, { headers: started.browser.headers() })).status).toBe(302);
    const replayed = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: started.browser.headers() });
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe('invalid_request');
  });

  it('refuses an answer that comes after AUTH_FLOW_TTL_SECONDS (10 minutes)', async () => {
    const started = await startAt('github');
    const back = await providers.github.authorize(started.location.href);
    platform.clock.advance(600_000);
    expect((await call(platform, 'get', `${back.pathname}${back.search}`, { headers: started.browser.headers() })).status).toBe(400);
  });

  it('sends the provider\'s code nowhere but to the provider: a forged code fails there and the client hears server_error', async () => {
    const started = await startAt('github');
    const back = await providers.github.authorize(started.location.href);
    back.searchParams.set('code', 'forged');
    const res = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: started.browser.headers() });
    expectRedirectError(new URL(res.headers.location!), 'server_error');
  });
});

describe('linking a provider with a link ticket', () => {
  it('adds the provider to the owner when the owner\'s session exchanges the code, and refuses one that signs in to someone else with already_linked', async () => {
    const owner = await emailSignIn(platform, 'linker@example.test');
    providers.github.user = { id: 9001, name: 'Linker', emails: [{ email: 'linker@github.test', primary: true, verified: true }] };
    const linked = await link('github', owner);
    expect(linked.back.searchParams.get('error')).toBeNull();
    expect(linked.token!.status).toBe(200);
    const me = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(linked.token!.body.access_token) });
    expect(me.body.id).toBe(owner.personId);
    expect(me.body.signInMethods.map((method: { provider: string }) => method.provider).sort()).toEqual(['email', 'github']);
    // From now on GitHub signs the owner in.
    expect((await signIn('github')).me.id).toBe(owner.personId);

    // An account that already signs in to another person cannot be linked: told in the browser already.
    providers.github.user = { id: 4242, emails: [] };
    const second = (await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) })).body.ticket as string;
    const started = await startAt('github', { link: second });
    expectRedirectError(await throughProvider('github', started), 'already_linked');
    // The ticket starts one flow, whatever becomes of it.
    const reused = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams({ provider: 'github', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: started.challenge, state: 'client-state', link: second })}`);
    expectRedirectError(new URL(reused.headers.location!), 'invalid_request');
    // Tickets, one-time codes and states travel in addresses; the request log shows none of them.
    const logs = JSON.stringify(platform.logs);
    expect(logs).toContain('link=[REDACTED]');
    for (const secret of [linked.ticket, second, started.location.searchParams.get('state')!]) expect(logs).not.toContain(secret);
  });
});

describe('the one-time code at POST /auth/v1/token', () => {
  async function freshCode() {
    providers.github.user = { id: 31337, emails: [] };
    const started = await startAt('github');
    const back = await throughProvider('github', started);
    return { code: back.searchParams.get('code')!, verifier: started.verifier };
  }

  it('works for 60 seconds', async () => {
    const late = await freshCode();
    platform.clock.advance(60_000);
    const res = await exchange(late.code, late.verifier);
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: 'the code has expired; sign in again' });
    const onTime = await freshCode();
    platform.clock.advance(59_000);
    expect((await exchange(onTime.code, onTime.verifier)).status).toBe(200);
  });

  it('works once: a second use is invalid_grant and ends the session the first one started', async () => {
    const { code, verifier } = await freshCode();
    const first = await exchange(code, verifier);
    expect(first.status).toBe(200);
    const second = await exchange(code, verifier);
    expect(second.body.error).toBe('invalid_grant');
    expect((await call(platform, 'get', '/cloud/v1/me', { headers: bearer(first.body.access_token) })).status).toBe(401);
    const refresh = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: 'console' } });
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it.each([
    ['another redirect_uri', { redirect_uri: `${BASE_URL}/other` }, 'invalid_grant'],
    ['another client', { client_id: 'mobile' }, 'invalid_grant'],
    ['an unknown client_id', { client_id: 'desktop' }, 'invalid_grant'],
    ['a malformed code_verifier', { code_verifier: 'short' }, 'invalid_request'],
  ])('refuses %s', async (_case, change, error) => {
    const { code, verifier } = await freshCode();
    const res = await exchange(code, verifier, change);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
    expect(res.body.error_description).toEqual(expect.any(String));
    // None of these used the code up.
    expect((await exchange(code, verifier)).status).toBe(200);
  });

  it('refuses a code that was never issued', async () => {
    const { verifier } = await pkce();
    expect((await exchange('platform_sc_nope', verifier)).body.error).toBe('invalid_grant');
    expect((await exchange('not even a code', verifier)).body.error).toBe('invalid_grant');
  });
});
