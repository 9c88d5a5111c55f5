import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SignInMethodEntity } from '../../src/modules/signin/entities.js';
import { newId } from '../../src/util/ids.js';
import { bearer, CONSOLE_REDIRECT, emailedSignInCode, emailSignIn, pkce, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { CookieJar } from '../support/cookie-jar.js';
import { call } from '../support/platform.js';
import { PROVIDERS, returnToCallback, StandInProviders, startSignIn, type Provider } from '../support/providers.js';

/**
 * Sign-in flows belong to whoever started them (issue 21), tried as an attacker and a victim
 * would try them: two browsers (two cookie jars), stand-in providers speaking the shapes each
 * adapter calls (oidc-provider as Google and Microsoft, a small OAuth 2 server as GitHub and
 * Facebook), every provider.
 *
 * - A provider flow finishes only in the browser that opened `/auth/v1/start` (its binding
 *   cookie): an authorize URL handed to someone else ends with `access_denied`, nothing attached,
 *   nobody created.
 * - A link takes effect only when the ticket's own session exchanges the flow's code; anyone
 *   else's exchange spends the code for nothing.
 * - One address, one account: adding a method whose verified address (or provider account)
 *   signs in to someone else is `already_linked`, on every path; the join rule follows only
 *   methods added through confirmed flows, oldest first.
 * - A refresh is bound to the session's client.
 */

let platform: CloudPlatform;
let providers: StandInProviders;
let accounts = 0;

beforeAll(async () => {
  providers = await StandInProviders.start();
  platform = await startCloud({ env: providers.env() });
});

afterAll(async () => {
  await providers?.close();
  await platform?.close();
});

/** The provider account the next sign-in at `provider` is (its subject), with a verified address. */
function accountAt(provider: Provider, email: string): string {
  const id = ++accounts;
  if (provider === 'google' || provider === 'microsoft') {
    const login = `${provider}-account-${id}`;
    (provider === 'google' ? providers.google : providers.microsoft).setAccount(login, { email, email_verified: true, name: `Account ${id}` });
    return login;
  }
  const user = { id: 70_000 + id, name: `Account ${id}`, emails: [{ email, primary: true, verified: true }] };
  if (provider === 'github') providers.github.user = user;
  else providers.facebook.user = user;
  return String(user.id);
}

interface Started {
  verifier: string;
  challenge: string;
  authorizeUrl: string;
}

async function start(browser: CookieJar, provider: Provider, extra: Record<string, string> = {}): Promise<Started> {
  const { verifier, challenge, location } = await startSignIn(platform, browser, provider, extra);
  return { verifier, challenge, authorizeUrl: location.href };
}

/** Someone signed in at the provider as `login` opens the authorize URL; the provider sends their browser to our callback. */
async function finishIn(browser: CookieJar, provider: Provider, started: Started, login: string): Promise<URL> {
  return returnToCallback(platform, browser, await providers.authorize(provider, started.authorizeUrl, login));
}

const exchange = (code: string, verifier: string, headers: Record<string, string> = {}) =>
  call(platform, 'post', '/auth/v1/token', { headers, body: { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT } });

const ticketFor = async (session: { access_token: string }) => (await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(session.access_token) })).body.ticket as string;

async function methodsOf(personId: string) {
  return platform.dataSource.getRepository(SignInMethodEntity).find({ where: { personId }, order: { createdAt: 'ASC' } });
}

function expectDenied(location: URL, error = 'access_denied'): void {
  expect(`${location.origin}${location.pathname}`).toBe(CONSOLE_REDIRECT);
  expect(location.searchParams.get('error')).toBe(error);
  expect(location.searchParams.get('state')).toBe('client-state');
  expect(location.searchParams.get('code')).toBeNull();
}

let addresses = 0;
const newAddress = (who: string) => `${who}-${++addresses}@example.test`;

describe('the flow cookie of GET /auth/v1/start', () => {
  it('is HttpOnly, Secure, SameSite=Lax, Path=/, __Host- on an https base URL, and lasts the flow', async () => {
    const browser = new CookieJar();
    const { challenge } = await pkce();
    const res = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams({ provider: 'github', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge })}`);
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!;
    expect(cookie).toMatch(/^__Host-platform_flow=platform_fb_[A-Za-z0-9_-]{43}; /);
    expect(cookie.split('; ').slice(1).sort()).toEqual(['HttpOnly', 'Max-Age=600', 'Path=/', 'SameSite=Lax', 'Secure']);
    // The flow keeps only the cookie's hash.
    browser.store(res.headers['set-cookie']);
    const secret = browser.get('__Host-platform_flow')!;
    const rows = (await platform.dataSource.query('SELECT browser_hash FROM sign_in_flows')) as { browser_hash: string }[];
    expect(JSON.stringify(rows)).not.toContain(secret);
    // A browser that holds one keeps it (two tabs, two sign-ins, both finish).
    const again = await call(platform, 'get', `/auth/v1/start?${new URLSearchParams({ provider: 'github', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge })}`, { headers: browser.headers() });
    expect(([] as string[]).concat(again.headers['set-cookie'] ?? [])[0]).toContain(`__Host-platform_flow=${secret};`);
  });

  it('is named platform_flow (still Secure and HttpOnly) when the base URL is http', async () => {
    const plain = await startCloud({ env: { PLATFORM_BASE_URL: 'http://localhost:8080', ...providers.github.env() } });
    try {
      const { challenge } = await pkce();
      const res = await call(plain, 'get', `/auth/v1/start?${new URLSearchParams({ provider: 'github', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge })}`);
      const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!;
      expect(cookie).toMatch(/^platform_flow=platform_fb_/);
      expect(cookie).toContain('; Secure');
      expect(cookie).toContain('; HttpOnly');
    } finally {
      await plain.close();
    }
  });
});

describe.each(PROVIDERS)('%s: a flow handed to someone else', (provider) => {
  it('a link flow finished in the victim\'s browser attaches nothing: access_denied, both accounts as they were', async () => {
    const attacker = await emailSignIn(platform, newAddress('attacker'));
    const victimAddress = newAddress('victim');
    const victimLogin = accountAt(provider, victimAddress);
    const attackerBrowser = new CookieJar();
    const victimBrowser = new CookieJar();
    // The attacker starts a link with their own ticket and keeps the provider's address…
    const started = await start(attackerBrowser, provider, { link: await ticketFor(attacker) });
    // …which the victim, signed in at the provider, opens in their own browser.
    expectDenied(await finishIn(victimBrowser, provider, started, victimLogin));
    expect((await methodsOf(attacker.personId)).map((method) => method.provider)).toEqual(['email']);
    // The victim's provider account signs the victim in, to an account of their own…
    accountAt(provider, victimAddress);
    const own = await start(victimBrowser, provider);
    const back = await finishIn(victimBrowser, provider, own, victimLogin);
    const tokens = await exchange(back.searchParams.get('code')!, own.verifier);
    const victim = (await call(platform, 'get', '/cloud/v1/me', { headers: bearer(tokens.body.access_token) })).body;
    expect(victim.id).not.toBe(attacker.personId);
    // …and so does the victim's first emailed code (the verified-address rule finds nothing slipped in).
    expect((await emailSignIn(platform, victimAddress)).personId).toBe(victim.id);
  });

  it('a sign-in flow finished in someone else\'s browser creates nobody and signs nobody in', async () => {
    const victimLogin = accountAt(provider, newAddress('lured'));
    const before = Number(((await platform.dataSource.query('SELECT COUNT(*) AS n FROM people')) as { n: number | string }[])[0]!.n);
    const started = await start(new CookieJar(), provider);
    expectDenied(await finishIn(new CookieJar(), provider, started, victimLogin));
    expect(Number(((await platform.dataSource.query('SELECT COUNT(*) AS n FROM people')) as { n: number | string }[])[0]!.n)).toBe(before);
  });

  it('the legitimate link still works: the owner\'s browser, then the owner\'s session at the token endpoint', async () => {
    const owner = await emailSignIn(platform, newAddress('owner'));
    const login = accountAt(provider, newAddress(`owner-at-${provider}`));
    const browser = new CookieJar();
    const started = await start(browser, provider, { link: await ticketFor(owner) });
    const back = await finishIn(browser, provider, started, login);
    expect(back.searchParams.get('error')).toBeNull();
    // Nothing is attached where the flow ends.
    expect(await methodsOf(owner.personId)).toHaveLength(1);
    const token = await exchange(back.searchParams.get('code')!, started.verifier, bearer(owner.access_token));
    expect(token.status).toBe(200);
    const me = (await call(platform, 'get', '/cloud/v1/me', { headers: bearer(token.body.access_token) })).body;
    expect(me.id).toBe(owner.personId);
    expect(me.signInMethods.map((method: { provider: string }) => method.provider).sort()).toEqual(['email', provider].sort());
  });
});

describe('the callback', () => {
  it('refuses a flow whose browser sends no binding cookie, and spends it: the provider\'s code is never redeemed', async () => {
    accountAt('github', newAddress('nocookie'));
    const browser = new CookieJar();
    const started = await start(browser, 'github');
    const back = await providers.github.authorize(started.authorizeUrl);
    const tokenCalls = providers.github.requests.filter((entry) => entry.path === '/token').length;
    const bare = await call(platform, 'get', `${back.pathname}${back.search}`);
    expectDenied(new URL(bare.headers.location!));
    expect(providers.github.requests.filter((entry) => entry.path === '/token')).toHaveLength(tokenCalls);
    // The flow is gone: not even its own browser finishes it now.
    const late = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: browser.headers() });
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_request');
  });

  it('refuses a flow whose browser sends another binding (its own, from a sign-in of its own)', async () => {
    accountAt('github', newAddress('othercookie'));
    const mine = new CookieJar();
    const theirs = new CookieJar();
    await start(theirs, 'github');
    const started = await start(mine, 'github');
    expect(theirs.get('__Host-platform_flow')).not.toBe(mine.get('__Host-platform_flow'));
    const back = await providers.github.authorize(started.authorizeUrl);
    const res = await call(platform, 'get', `${back.pathname}${back.search}`, { headers: theirs.headers() });
    expectDenied(new URL(res.headers.location!));
  });
});

describe('a link flow\'s code at POST /auth/v1/token', () => {
  async function linkCode(owner: SignedIn) {
    accountAt('github', newAddress('linkcode'));
    const browser = new CookieJar();
    const started = await start(browser, 'github', { link: await ticketFor(owner) });
    const back = await finishIn(browser, 'github', started, 'github');
    return { code: back.searchParams.get('code')!, verifier: started.verifier };
  }

  const presenters: [string, (owner: SignedIn & { email: string }) => Promise<Record<string, string>>][] = [
    ['no token at all', async () => ({})],
    ['another person\'s session', async () => bearer((await emailSignIn(platform, newAddress('other'))).access_token)],
    ['another session of the same person', async (owner) => bearer((await emailSignIn(platform, owner.email)).access_token)],
  ];
  it.each(presenters)('is spent for nothing when exchanged with %s: invalid_grant, nothing added', async (_case, headersOf) => {
    const address = newAddress('ticket-owner');
    const owner = { ...(await emailSignIn(platform, address)), email: address };
    const { code, verifier } = await linkCode(owner);
    const headers = await headersOf(owner);
    const refused = await exchange(code, verifier, headers);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect(refused.body.error_description).toContain('session that asked for the link ticket');
    expect((await methodsOf(owner.personId)).map((method) => method.provider)).toEqual(['email']);
    // Spent: not even the owner's session can use it now.
    expect((await exchange(code, verifier, bearer(owner.access_token))).body.error).toBe('invalid_grant');
    expect(await methodsOf(owner.personId)).toHaveLength(1);
  });

  it('needs a live session: after sign-out the code adds nothing', async () => {
    const owner = await emailSignIn(platform, newAddress('signed-out'));
    const { code, verifier } = await linkCode(owner);
    expect((await call(platform, 'post', '/auth/v1/logout', { headers: bearer(owner.access_token) })).status).toBe(204);
    const refused = await exchange(code, verifier, bearer(owner.access_token));
    expect(refused.status).toBe(401);
    expect(await methodsOf(owner.personId)).toHaveLength(1);
  });

  it('resolves the token like any Cloud session request: an X-Platform-Organisation the person is not in is 404, the code untouched', async () => {
    const owner = await emailSignIn(platform, newAddress('header'));
    const stranger = await emailSignIn(platform, newAddress('header-stranger'));
    const { code, verifier } = await linkCode(owner);
    const refused = await exchange(code, verifier, bearer(owner.access_token, stranger.personalOrganisationId));
    expect(refused.status).toBe(404);
    expect(refused.body.error).toBe('not_found');
    expect((await exchange(code, verifier, bearer(owner.access_token))).status).toBe(200);
  });

  it('refuses a malformed or unknown token on any exchange with 401, before the code is looked at', async () => {
    const owner = await emailSignIn(platform, newAddress('badtoken'));
    const { code, verifier } = await linkCode(owner);
    expect((await exchange(code, verifier, { Authorization: 'Bearer platform_sa_forged' })).status).toBe(401);
    // The code was not touched: its owner still links with it.
    expect((await exchange(code, verifier, bearer(owner.access_token))).status).toBe(200);
  });
});

describe('one address, one account', () => {
  it.each(PROVIDERS)('%s: a link whose verified address another person signs in with is already_linked, in the browser and at the exchange', async (provider) => {
    const holderAddress = newAddress('holder');
    const holder = await emailSignIn(platform, holderAddress);
    const owner = await emailSignIn(platform, newAddress('grabber'));
    const login = accountAt(provider, holderAddress);
    const browser = new CookieJar();
    const started = await start(browser, provider, { link: await ticketFor(owner) });
    expectDenied(await finishIn(browser, provider, started, login), 'already_linked');
    expect(await methodsOf(owner.personId)).toHaveLength(1);
    expect(await methodsOf(holder.personId)).toHaveLength(1);
  });

  it('decides again at the exchange: an address taken between the callback and the exchange is 409 already_linked, nothing added', async () => {
    const address = newAddress('raced');
    const owner = await emailSignIn(platform, newAddress('racer'));
    const login = accountAt('github', address);
    const browser = new CookieJar();
    const started = await start(browser, 'github', { link: await ticketFor(owner) });
    const back = await finishIn(browser, 'github', started, login);
    expect(back.searchParams.get('code')).toMatch(/^platform_sc_/);
    await emailSignIn(platform, address);
    const refused = await exchange(back.searchParams.get('code')!, started.verifier, bearer(owner.access_token));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('already_linked');
    expect(await methodsOf(owner.personId)).toHaveLength(1);
    expect((await exchange(back.searchParams.get('code')!, started.verifier, bearer(owner.access_token))).body.error).toBe('invalid_grant');
  });

  it('an emailed-code link answers a code that only the ticket\'s session turns into a method', async () => {
    const owner = await emailSignIn(platform, newAddress('mail-owner'));
    const added = newAddress('added');
    const { code, verifier } = await emailedSignInCode(platform, added, { link: await ticketFor(owner) });
    // Someone who got hold of the code and verifier, without the owner's session: nothing.
    expect(await methodsOf(owner.personId)).toHaveLength(1);
    const stolen = await exchange(code, verifier);
    expect(stolen.body.error).toBe('invalid_grant');
    expect(await methodsOf(owner.personId)).toHaveLength(1);
    // The address signs nobody in to the owner's account: it is a new person's.
    expect((await emailSignIn(platform, added)).personId).not.toBe(owner.personId);
  });

  it('joins a new sign-in by verified address only to a method added through a confirmed flow, oldest first, never to one of unknown origin', async () => {
    const address = newAddress('anchored');
    const first = await emailSignIn(platform, address);
    // A method that vouches for the address but was never confirmed (as one slipped in before flows were bound).
    const slipped = await emailSignIn(platform, newAddress('slipper'));
    const now = platform.clock.now();
    await platform.dataSource.getRepository(SignInMethodEntity).insert({
      id: newId('sim'), personId: slipped.personId, provider: 'github', subject: 'gh-slipped', email: address, emailVerified: true, confirmedEmail: null, createdAt: new Date(now.getTime() - 86_400_000), lastUsedAt: now,
    });
    const login = accountAt('google', address);
    const browser = new CookieJar();
    const started = await start(browser, 'google');
    const back = await finishIn(browser, 'google', started, login);
    const tokens = await exchange(back.searchParams.get('code')!, started.verifier);
    const me = (await call(platform, 'get', '/cloud/v1/me', { headers: bearer(tokens.body.access_token) })).body;
    expect(me.id).toBe(first.personId);
    // And so every time, whatever was added later.
    expect((await emailSignIn(platform, address)).personId).toBe(first.personId);
  });
});

describe('refresh is bound to the session\'s client', () => {
  it.each([
    ['without client_id', {}],
    ['with another client', { client_id: 'mobile' }],
    ['with an unknown client', { client_id: 'desktop' }],
  ])('refuses a console session\'s refresh %s: invalid_grant, the token still good for its own client', async (_case, extra) => {
    const session = await emailSignIn(platform, newAddress('refresher'));
    const refused = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: session.refresh_token, ...extra } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect(refused.body.error_description).toEqual(expect.any(String));
    const own = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: session.refresh_token, client_id: 'console' } });
    expect(own.status).toBe(200);
  });
});
