import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Page } from 'playwright-core';
import { audit } from '../support/axe.js';
import { browsers } from '../support/browser.js';
import { askForCode } from '../support/devices.js';
import { createOrganisation, serverOf, startPlatform, type TestPlatform } from '../support/platform.js';
import { TestIdentityProvider } from '../support/idp.js';

/**
 * The device-code flow end to end in a real browser (headless Chromium): a device asks for a
 * code over HTTP, a person opens `verification_uri_complete`, signs in at the organisation's
 * OpenID provider (its login and consent pages), sees the device, and approves or denies it;
 * the device's next poll gets its tokens or is refused. The browser enforces what the http
 * suite can only read: the CSP (no violation may be reported), cookie attributes, redirects.
 */

const ROLE_CLAIM = 'platform_role';

jest.setTimeout(60_000);

let platform: TestPlatform;
let server: Server;
let idp: TestIdentityProvider;
/** The platform as the browser and the device reach it: the organisation is served at `localhost`. */
let origin: string;

beforeAll(async () => {
  // TRUST_PROXY: the device's requests below say which network they come from (X-Forwarded-For).
  platform = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
  server = serverOf(platform.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  idp = await TestIdentityProvider.start({ interactive: { redirectUris: [`${origin}/device/callback`] } });
  idp.setAccount('olga', { name: 'Olga Owner', email: 'olga@example.test', [ROLE_CLAIM]: 'owner' });
  idp.setAccount('mia', { name: 'Mia Member', email: 'mia@example.test', [ROLE_CLAIM]: 'member' });
  await createOrganisation(platform, { name: 'Acme', hosts: ['localhost'], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await idp?.close();
  await platform?.close();
});

const { open: newBrowser, closeAll } = browsers(() => origin);
afterEach(() => closeAll());

/** The device: asks for a code, as a workbench does (from another network with `from`). */
const codeFor = (name: string, from?: string) =>
  askForCode(platform, { host: new URL(origin).host, ...(from ? { from } : {}), headers: { 'user-agent': 'workbench/2.0 (browser suite)' }, body: { workspaceId: 'ws-browser', name } });

async function poll(deviceCode: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${origin}/relay/v1/device/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ device_code: deviceCode }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** At the provider: its login page, then its consent page, then back to the platform. */
async function signInAtProvider(page: Page, login: string): Promise<void> {
  await page.waitForURL((url) => url.origin === idp.issuer);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', 'any password');
  await Promise.all([page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached' }), page.click('button[type="submit"]')]);
  await Promise.all([page.waitForURL(`${origin}/device`), page.click('button[type="submit"]')]);
}

describe('approving a device in the browser', () => {
  it('from verification_uri_complete: sign in at the provider, see the device, approve; the next poll gets the tokens', async () => {
    const asked = await codeFor('Olga\'s <b>workstation</b>');
    expect(asked.verification_uri).toBe(`${origin}/device`);
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');

    const { page, context, errors } = await newBrowser();
    await page.goto(asked.verification_uri_complete);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to connect a device');
    await expect(page.locator('.code').textContent()).resolves.toBe(asked.user_code);

    await page.click('button:has-text("Sign in")');
    await signInAtProvider(page, 'olga');

    // Back on the page, signed in, the code carried by the session (not the address).
    expect(page.url()).toBe(`${origin}/device`);
    await expect(page.locator('h1').textContent()).resolves.toBe('Approve this device?');
    await expect(page.locator('#device-name').textContent()).resolves.toBe('Olga\'s <b>workstation</b>');
    await expect(page.locator('.code').textContent()).resolves.toBe(asked.user_code);
    await expect(page.locator('footer .note').textContent()).resolves.toBe('Signed in as Olga Owner');
    await expect(page.locator('b').count()).resolves.toBe(0);

    const cookies = await context.cookies(origin);
    expect(cookies.map((cookie) => ({ name: cookie.name, httpOnly: cookie.httpOnly, sameSite: cookie.sameSite, path: cookie.path }))).toEqual([
      { name: 'platform_device', httpOnly: true, sameSite: 'Lax', path: '/' },
    ]);

    await Promise.all([page.waitForLoadState('load'), page.click('button:has-text("Approve")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Device approved');

    platform.clock.advance(asked.interval * 1000);
    const tokens = await poll(asked.device_code);
    expect(tokens.status).toBe(200);
    expect(tokens.body).toMatchObject({
      access_token: expect.stringMatching(/^platform_at_/),
      refresh_token: expect.stringMatching(/^platform_rt_/),
      token_type: 'Bearer',
      device_id: expect.stringMatching(/^dev_/),
    });
    // The device's token works on the API.
    const organisation = await fetch(`${origin}/platform/v1/organisation`, { headers: { authorization: `Bearer ${tokens.body.access_token as string}` } });
    expect(organisation.status).toBe(200);
    expect(((await organisation.json()) as { name: string }).name).toBe('Acme');

    expect(errors).toEqual([]);
  });

  it('from verification_uri: type the code, sign in, deny; the next poll is refused', async () => {
    const asked = await codeFor('Unexpected machine');
    const { page, errors } = await newBrowser();
    await page.goto(asked.verification_uri);
    await expect(page.locator('h1').textContent()).resolves.toBe('Connect a device');
    // As a person types it: lower case, no dash.
    await page.fill('#user_code', asked.user_code.replace('-', '').toLowerCase());
    await Promise.all([page.waitForLoadState('load'), page.click('button:has-text("Continue")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in to connect a device');
    await expect(page.locator('.code').textContent()).resolves.toBe(asked.user_code);

    await page.click('button:has-text("Sign in")');
    await signInAtProvider(page, 'mia');
    await expect(page.locator('#device-name').textContent()).resolves.toBe('Unexpected machine');

    await Promise.all([page.waitForLoadState('load'), page.click('button:has-text("Deny")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Device denied');

    const refused = await poll(asked.device_code);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('access_denied');

    // Signing out ends the session: the page asks for sign-in again.
    await Promise.all([page.waitForLoadState('load'), page.click('button:has-text("Sign out")')]);
    await expect(page.locator('h1').textContent()).resolves.toBe('Connect a device');
    await expect(page.locator('footer').count()).resolves.toBe(0);

    expect(errors).toEqual([]);
  });

  it('shows a code opened by someone else as taken, without its details', async () => {
    const asked = await codeFor('Contested box');
    const first = await newBrowser();
    await first.page.goto(asked.verification_uri_complete);
    await first.page.click('button:has-text("Sign in")');
    await signInAtProvider(first.page, 'olga');
    await expect(first.page.locator('#device-name').textContent()).resolves.toBe('Contested box');

    const second = await newBrowser();
    await second.page.goto(asked.verification_uri_complete);
    await second.page.click('button:has-text("Sign in")');
    await signInAtProvider(second.page, 'mia');
    await expect(second.page.locator('h1').textContent()).resolves.toBe('You cannot decide this request');
    await expect(second.page.content()).resolves.not.toContain('Contested box');
    expect(await audit(second.page, 'claimed-by-another')).toEqual({ violations: [], unexplained: [] });
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });
});

// Accessibility, keyboard, reload and Back ---------------------------------------------------

/** Every POST the page sends from now on. */
function postsOf(page: Page): string[] {
  const posts: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST') posts.push(request.url());
  });
  return posts;
}

const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? '');
const h1 = (page: Page) => page.locator('h1').textContent();

/** Submits with the page's own button and waits for the page the redirect shows. */
async function submit(page: Page, selector: string): Promise<void> {
  try {
    await Promise.all([page.waitForEvent('load'), page.click(selector)]);
  } catch (error) {
    throw new Error(`submitting ${selector} at ${page.url()} (${await h1(page).catch(() => "?")}): ${String(error)}`, { cause: error });
  }
}

describe('the page in every state', () => {
  it('passes axe-core in both colour schemes at 1280×800 and 390×844, with no violation and no unexplained "needs review"', async () => {
    jest.setTimeout(600_000);
    const { page, errors } = await newBrowser();
    const findings = { violations: [] as string[], unexplained: [] as string[] };
    const check = async (state: string, shown: Page = page) => {
      const { violations, unexplained } = await audit(shown, state);
      findings.violations.push(...violations);
      findings.unexplained.push(...unexplained);
    };

    await page.goto(`${origin}/device`);
    expect(await focusedId(page)).toBe('user_code');
    await check('entry');

    await page.goto(`${origin}/device?user_code=nope`);
    expect(await focusedId(page)).toBe('user_code');
    await expect(page.locator('#user_code').getAttribute('aria-invalid')).resolves.toBe('true');
    await check('entry-error');

    const asked = await codeFor('Olga\'s laptop');
    await page.goto(asked.verification_uri_complete);
    await check('sign-in');
    await page.click('button:has-text("Sign in")');
    await signInAtProvider(page, 'olga');
    await expect(h1(page)).resolves.toBe('Approve this device?');
    await check('request');
    await submit(page, 'button[value="approve"]');
    await expect(h1(page)).resolves.toBe('Device approved');
    await check('approved');

    const far = await codeFor('Build box', '198.51.100.7');
    await page.goto(`${origin}/device?user_code=${far.user_code}`);
    await expect(page.locator('#other-network').textContent()).resolves.toContain('This request comes from another network than yours.');
    await check('request-other-network');
    await submit(page, 'button[value="approve"]');
    await expect(page.locator('#confirm_own_device-error').textContent()).resolves.toContain('Nothing was approved.');
    expect(await focusedId(page)).toBe('confirm_own_device');
    await check('request-confirm-error');
    await submit(page, 'button[value="deny"]');
    await expect(h1(page)).resolves.toBe('Device denied');
    await check('denied');

    // The same two codes as another person sees them: decided by someone else, said without
    // naming who or showing the device.
    const other = await newBrowser();
    await other.page.goto(`${origin}/device?user_code=${asked.user_code}`);
    await other.page.click('button:has-text("Sign in")');
    await signInAtProvider(other.page, 'mia');
    await other.page.goto(`${origin}/device?user_code=${asked.user_code}`);
    await expect(h1(other.page)).resolves.toBe('Already approved');
    await expect(other.page.content()).resolves.not.toContain('Olga\'s laptop');
    await check('already-approved', other.page);
    await other.page.goto(`${origin}/device?user_code=${far.user_code}`);
    await expect(h1(other.page)).resolves.toBe('Already denied');
    await check('already-denied', other.page);

    await page.goto(`${origin}/device?user_code=BCDF-GHJK`);
    await expect(h1(page)).resolves.toBe('No request has this code');
    await check('unknown');

    const old = await codeFor('Old box');
    platform.clock.advance(601_000);
    try {
      await page.goto(`${origin}/device?user_code=${old.user_code}`);
      await expect(h1(page)).resolves.toBe('This code has expired');
      await check('expired');
    } finally {
      platform.clock.advance(-601_000);
    }

    // The session runs out while a request is open: signing in again continues with the code.
    const late = await codeFor('Late box');
    await page.goto(`${origin}/device?user_code=${late.user_code}`);
    platform.clock.advance(901_000);
    try {
      await page.reload();
      await expect(h1(page)).resolves.toBe('Sign in to connect a device');
      await expect(page.locator('.code').textContent()).resolves.toBe(late.user_code);
      await expect(page.locator('.notice').textContent()).resolves.toContain('Your session ended');
      await check('session-ended');
    } finally {
      platform.clock.advance(-901_000);
    }

    // With the clock back, the session is current again: sign out.
    await page.goto(`${origin}/device`);
    await expect(h1(page)).resolves.toBe('Approve this device?');
    await submit(page, 'button:has-text("Sign out")');
    await expect(page.locator('.notice').textContent()).resolves.toBe('You are signed out.');
    await check('signed-out');

    expect(findings.violations).toEqual([]);
    expect(findings.unexplained).toEqual([]);
    // The pages that say a code is wrong, unknown or expired answer 400, 404 and 410: Chromium
    // logs each status; nothing else (no CSP violation) may be reported.
    expect(errors.filter((error) => !/^Failed to load resource: the server responded with a status of 4(00|04|10) /.test(error))).toEqual([]);
  }, 600_000);
});

describe('with the keyboard only', () => {
  it('types the code, signs in, and approves without a pointer; the focus is always visible', async () => {
    const asked = await codeFor('Keyboard box');
    const { page, errors } = await newBrowser();
    await page.goto(`${origin}/device`);
    // The one field of the step has the focus: type, then Enter.
    await page.keyboard.type(asked.user_code.toLowerCase());
    await Promise.all([page.waitForURL(/user_code=/), page.keyboard.press('Enter')]);
    await expect(h1(page)).resolves.toBe('Sign in to connect a device');
    // The one button of the step has the focus.
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Sign in');
    await page.keyboard.press('Enter');
    await signInAtProvider(page, 'olga');
    await expect(h1(page)).resolves.toBe('Approve this device?');
    // Tab to Approve: the page's own focus ring shows where the focus is.
    let label = '';
    for (let step = 0; step < 10 && label !== 'Approve'; step++) {
      await page.keyboard.press('Tab');
      label = (await page.evaluate(() => document.activeElement?.textContent)) ?? '';
    }
    expect(label).toBe('Approve');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle + ' ' + getComputedStyle(document.activeElement!).outlineWidth);
    expect(outline).toBe('solid 3px');
    await Promise.all([page.waitForEvent('load'), page.keyboard.press('Enter')]);
    await expect(h1(page)).resolves.toBe('Device approved');
    expect(errors).toEqual([]);
  });
});

describe('reload and Back', () => {
  it('never post again after approve, deny or sign-out: each shows the state it left', async () => {
    const { page, errors } = await newBrowser();
    const first = await codeFor('Reloaded box');
    await page.goto(first.verification_uri_complete);
    await page.click('button:has-text("Sign in")');
    await signInAtProvider(page, 'mia');
    const posts = postsOf(page);

    await submit(page, 'button[value="approve"]');
    expect(posts).toEqual([`${origin}/device/decision`]);
    await page.reload();
    await expect(h1(page)).resolves.toBe('Device approved');
    await page.goBack();
    await page.goForward();
    await expect(h1(page)).resolves.toBe('Device approved');

    const second = await codeFor('Denied box');
    await page.goto(`${origin}/device?user_code=${second.user_code}`);
    await submit(page, 'button[value="deny"]');
    await page.reload();
    await expect(h1(page)).resolves.toBe('Device denied');
    await page.goBack();
    // Back to the request's address: what became of it, not a form to send again.
    await expect(h1(page)).resolves.toBe('Device denied');
    await page.goForward();
    await expect(h1(page)).resolves.toBe('Device denied');

    await submit(page, 'button:has-text("Sign out")');
    await page.reload();
    await expect(page.locator('.notice').textContent()).resolves.toBe('You are signed out.');
    await page.goBack();
    await page.goForward();
    expect(posts).toEqual([`${origin}/device/decision`, `${origin}/device/decision`, `${origin}/device/sign-out`]);
    expect((await poll(first.device_code)).status).toBe(200);
    expect((await poll(second.device_code)).body.error).toBe('access_denied');
    expect(errors).toEqual([]);
  });
});
