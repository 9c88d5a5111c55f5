import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Page } from 'playwright-core';
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
  platform = await startPlatform();
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

/** The device: asks for a code, as a workbench does. */
const codeFor = (name: string) =>
  askForCode(platform, { host: new URL(origin).host, headers: { 'user-agent': 'workbench/2.0 (browser suite)' }, body: { workspaceId: 'ws-browser', name } });

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
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });
});
