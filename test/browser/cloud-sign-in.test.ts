import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import * as oauth from 'oauth4webapi';
import type { Page } from 'playwright-core';
import { audit } from '../support/axe.js';
import { browsers } from '../support/browser.js';
import { startCloud, type CloudPlatform } from '../support/cloud.js';
import { TestIdentityProvider } from '../support/idp.js';

/**
 * Cloud sign-in end to end in a real browser (headless Chromium): the whole redirect flow, from
 * a client's `GET /auth/v1/start` through the provider's login and consent pages (oidc-provider
 * playing Google) and the service's callback back to the client's redirect URI; and a person
 * approving a device on the built-in page after signing in there the same way.
 */

jest.setTimeout(60_000);

let platform: CloudPlatform;
let server: Server;
let consoleApp: Server;
let google: TestIdentityProvider;
let origin: string;
let consoleRedirect: string;

/** A loopback server that stands in for the console: its redirect URI answers a small page. */
async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; port: number }> {
  const created = createServer(handler);
  await new Promise<void>((resolve) => created.listen(0, '127.0.0.1', resolve));
  return { server: created, port: (created.address() as AddressInfo).port };
}

beforeAll(async () => {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const api = await listen((req, res) => handler(req, res));
  server = api.server;
  origin = `http://localhost:${api.port}`;
  const app = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Console</title><h1>Console</h1>');
  });
  consoleApp = app.server;
  consoleRedirect = `http://127.0.0.1:${app.port}/signed-in`;
  google = await TestIdentityProvider.start({ clientId: 'platform-cloud', interactive: { redirectUris: [`${origin}/auth/v1/callback/google`], confidential: true } });
  google.setAccount('olga', { name: 'Olga Owner', email: 'olga@example.test', email_verified: true });
  platform = await startCloud({
    env: {
      PLATFORM_BASE_URL: origin,
      AUTH_CONSOLE_REDIRECT_URIS: consoleRedirect,
      GOOGLE_CLIENT_ID: google.clientId,
      GOOGLE_CLIENT_SECRET: google.clientSecret,
      GOOGLE_ISSUER: google.issuer,
    },
  });
  handler = platform.app;
});

afterAll(async () => {
  for (const each of [server, consoleApp]) {
    each?.closeAllConnections();
    await new Promise<void>((resolve) => (each ? each.close(() => resolve()) : resolve()));
  }
  await google?.close();
  await platform?.close();
});

const { open: newBrowser, closeAll } = browsers(() => origin);
afterEach(() => closeAll());

/** At the provider: its login page, then its consent page; `landing` is where the browser ends. */
async function signInAtProvider(page: Page, login: string, landing: (url: URL) => boolean): Promise<void> {
  await page.waitForURL((url) => url.origin === google.issuer);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', 'any password');
  await Promise.all([page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached' }), page.click('button[type="submit"]')]);
  await Promise.all([page.waitForURL(landing), page.click('button[type="submit"]')]);
}

describe('Cloud sign-in in the browser', () => {
  it('the console\'s redirect flow: start, the provider\'s pages, the service\'s callback, back at the console with a code it exchanges', async () => {
    const { page } = await newBrowser();
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const start = new URL(`${origin}/auth/v1/start`);
    start.search = new URLSearchParams({ provider: 'google', client: 'console', redirect_uri: consoleRedirect, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state }).toString();
    await page.goto(start.href);
    await signInAtProvider(page, 'olga', (url) => url.href.startsWith(consoleRedirect));
    await expect(page.locator('h1').textContent()).resolves.toBe('Console');
    const as: oauth.AuthorizationServer = { issuer: origin, token_endpoint: `${origin}/auth/v1/token`, authorization_response_iss_parameter_supported: true };
    const client: oauth.Client = { client_id: 'console' };
    const params = oauth.validateAuthResponse(as, client, new URL(page.url()), state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, consoleRedirect, verifier, { [oauth.allowInsecureRequests]: true });
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
    const me = await fetch(`${origin}/cloud/v1/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ name: 'Olga Owner', email: 'olga@example.test', signInMethods: [{ provider: 'google', emailVerified: true }] });
  });

  it('links a second Google account: the flow in the owner\'s browser, the code exchanged with the owner\'s session; the same provider address opened in another browser links nothing', async () => {
    google.setAccount('lena', { name: 'Lena Linker', email: 'lena@example.test', email_verified: true });
    google.setAccount('lena-work', { name: 'Lena at work', email: 'lena@work.example.test', email_verified: true });
    google.setAccount('victor', { name: 'Victor Victim', email: 'victor@example.test', email_verified: true });
    const { page, context } = await newBrowser();
    const signIn = async (extra: Record<string, string>, login: string) => {
      // Signed out at the provider, so that it asks who signs in (the service's cookies stay).
      await context.clearCookies({ domain: new URL(google.issuer).hostname });
      const verifier = oauth.generateRandomCodeVerifier();
      const start = new URL(`${origin}/auth/v1/start`);
      start.search = new URLSearchParams({ provider: 'google', client: 'console', redirect_uri: consoleRedirect, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), state: 'st', ...extra }).toString();
      await page.goto(start.href);
      await signInAtProvider(page, login, (url) => url.href.startsWith(consoleRedirect));
      return { verifier, back: new URL(page.url()) };
    };
    const exchange = (code: string, verifier: string, bearer?: string) =>
      fetch(`${origin}/auth/v1/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: consoleRedirect }),
      });
    const first = await signIn({}, 'lena');
    const owner = (await (await exchange(first.back.searchParams.get('code')!, first.verifier)).json()) as { access_token: string };
    const ticketOf = async () =>
      ((await (await fetch(`${origin}/cloud/v1/me/sign-in-methods/link`, { method: 'POST', headers: { authorization: `Bearer ${owner.access_token}` } })).json()) as { ticket: string }).ticket;

    // Someone else's browser: the authorize address of Lena's link flow, opened by Victor.
    const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
    const started = await fetch(`${origin}/auth/v1/start?${new URLSearchParams({ provider: 'google', client: 'console', redirect_uri: consoleRedirect, code_challenge: challenge, state: 'st', link: await ticketOf() })}`, { redirect: 'manual' });
    const victim = await newBrowser();
    await victim.page.goto(started.headers.get('location')!);
    await signInAtProvider(victim.page, 'victor', (url) => url.href.startsWith(consoleRedirect));
    expect(new URL(victim.page.url()).searchParams.get('error')).toBe('access_denied');

    // Lena's own link, in her browser.
    const linked = await signIn({ link: await ticketOf() }, 'lena-work');
    expect(linked.back.searchParams.get('error')).toBeNull();
    const answer = await exchange(linked.back.searchParams.get('code')!, linked.verifier, owner.access_token);
    expect(answer.status).toBe(200);
    const me = (await (await fetch(`${origin}/cloud/v1/me`, { headers: { authorization: `Bearer ${owner.access_token}` } })).json()) as { signInMethods: { email: string }[] };
    expect(me.signInMethods.map((method) => method.email).sort()).toEqual(['lena@example.test', 'lena@work.example.test']);
  });

  it('the approval page: sign in with Google there, pick the organisation, approve; the device\'s next poll gets its tokens', async () => {
    const asked = (await (
      await fetch(`${origin}/relay/v1/device/code`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: 'ws-browser', name: 'Olga\'s laptop' }) })
    ).json()) as { device_code: string; user_code: string; verification_uri_complete: string; interval: number };
    const { page, context, errors } = await newBrowser();
    await page.goto(asked.verification_uri_complete);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to connect a device');
    await expect(page.locator('.code').textContent()).resolves.toBe(asked.user_code);
    await page.click('button:has-text("Continue with Google")');
    await signInAtProvider(page, 'olga', (url) => url.href === `${origin}/device`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Approve this device?');
    await expect(page.locator('#device-name').textContent()).resolves.toBe("Olga's laptop");
    await expect(page.locator('footer .note').textContent()).resolves.toBe('Signed in as Olga Owner');
    await expect(page.locator('#organisation option').allTextContents()).resolves.toEqual(['Olga Owner (personal)']);
    const cookies = await context.cookies(origin);
    expect(cookies.map((cookie) => ({ name: cookie.name, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, secure: cookie.secure })).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'platform_device', httpOnly: true, sameSite: 'Lax', secure: false },
      // The provider flow's browser binding: Chromium keeps a Secure cookie of http://localhost.
      { name: 'platform_flow', httpOnly: true, sameSite: 'Lax', secure: true },
    ]);
    await Promise.all([page.waitForLoadState('load'), page.click('button:has-text("Approve")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Device approved');

    platform.clock.advance(asked.interval * 1000);
    const poll = await fetch(`${origin}/relay/v1/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code: asked.device_code }) });
    expect(poll.status).toBe(200);
    const { access_token: accessToken } = (await poll.json()) as { access_token: string };
    const organisation = await fetch(`${origin}/platform/v1/organisation`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect(await organisation.json()).toMatchObject({ kind: 'personal', edition: 'free' });
    expect(errors).toEqual([]);
  });

  it('the approval page\'s Cloud sign-in and emailed-code steps pass axe-core in both schemes and sizes; a reload of the code step sends nothing', async () => {
    const asked = (await (
      await fetch(`${origin}/relay/v1/device/code`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ workspaceId: 'ws-browser', name: 'Mailed box' }) })
    ).json()) as { user_code: string; verification_uri_complete: string };
    const { page, errors } = await newBrowser();
    const findings: string[] = [];
    const check = async (state: string) => {
      const { violations, unexplained } = await audit(page, state);
      findings.push(...violations, ...unexplained);
    };
    await page.goto(asked.verification_uri_complete);
    await check('cloud-sign-in');
    await page.fill('#email', 'olga@example.test');
    await Promise.all([page.waitForEvent('load'), page.click('button:has-text("Email me a code")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Enter your code');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('code');
    await check('cloud-email-code');
    await page.keyboard.type('000000');
    await Promise.all([page.waitForEvent('load'), page.keyboard.press('Enter')]);
    await expect(page.locator('#code-error').textContent()).resolves.toContain('That code is wrong or has expired');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('code');
    await check('cloud-email-code-error');
    const posts: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST') posts.push(request.url());
    });
    await page.reload();
    await expect(page.locator('h1').textContent()).resolves.toBe('Enter your code');
    expect(posts).toEqual([]);
    expect(findings).toEqual([]);
    expect(errors).toEqual([]);
  }, 300_000);
});
