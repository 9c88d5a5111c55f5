import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Response } from 'supertest';
import { BASE_URL, createTeam, emailSignIn, lastMailTo, outboxMails, pkce, startCloud, type CloudPlatform, type SignedIn } from '../support/cloud.js';
import { FakeOAuthProvider } from '../support/oauth2-server.js';
import { PageBrowser } from '../support/cookie-jar.js';
import { askForCode } from '../support/devices.js';
import { call } from '../support/platform.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';

/**
 * The built-in approval page on Cloud (`/device`): the person signs in through the Cloud flow
 * (an enabled provider, or an emailed code), sees the device, and approves it into one of their
 * organisations where they may approve that kind of device. The browser suite does the same in
 * Chromium.
 */

let platform: CloudPlatform;
let github: FakeOAuthProvider;
let owner: SignedIn;
let member: SignedIn;
let team: OrganisationRecord;

beforeAll(async () => {
  github = await FakeOAuthProvider.start('github');
  platform = await startCloud({ env: { ...github.env(), OIDC_ALLOW_HTTP_LOOPBACK: 'true' } });
  owner = await emailSignIn(platform, 'page-owner@example.test');
  member = await emailSignIn(platform, 'page-member@example.test');
  team = await createTeam(platform, 'Page Team', [[owner.personId, 'owner'], [member.personId, 'member']]);
});
afterAll(async () => {
  await platform?.close();
  await github?.close();
});

type Browser = PageBrowser;

const newBrowser = (): Browser => new PageBrowser(platform.app);
const get = (browser: Browser, path: string) => browser.get(path);
const post = (browser: Browser, path: string, form: Record<string, string>, origin = BASE_URL) => browser.post(path, form, { Origin: origin });

const mailCount = async (to: string) => (await outboxMails(platform.outbox)).filter((mail) => mail.to === to).length;

const title = (res: Response) => /<h1>([^<]*)<\/h1>/.exec(res.text)?.[1];

const codeFor = (kind: 'workbench' | 'node' = 'workbench') => askForCode(platform, { body: { workspaceId: 'ws-page', name: `Page ${kind}`, kind } });

/** Signs the browser in with an emailed code, from the page. */
async function signInByEmail(browser: Browser, email: string, userCode: string): Promise<Response> {
  const started = await post(browser, '/device/sign-in', { provider: 'email', email, user_code: userCode });
  expect(started.status).toBe(303);
  expect(started.headers.location).toBe('/device');
  expect(title(await get(browser, '/device'))).toBe('Enter your code');
  const digits = (await lastMailTo(platform.outbox, email)).digits!;
  const done = await post(browser, '/device/email-code', { code: digits });
  expect(done.status).toBe(303);
  expect(done.headers.location).toBe('/device');
  return get(browser, '/device');
}

describe('signing in on the Cloud approval page', () => {
  it('offers every enabled provider and an emailed code, and lets the browser reach the providers only (CSP form-action)', async () => {
    const asked = await codeFor();
    const res = await get(newBrowser(), `/device?user_code=${asked.user_code}`);
    expect(res.status).toBe(200);
    expect(title(res)).toBe('Sign in to connect a device');
    expect(res.text).toContain('Continue with GitHub');
    expect(res.text).toContain('name="email"');
    expect(res.headers['content-security-policy']).toContain(`form-action 'self' ${github.origin}`);
    expect(res.text).not.toContain('Page workbench');
  });

  it('with an emailed code: a wrong code is shown again with a note, the right one signs in; then approve into a team', async () => {
    const asked = await codeFor();
    const browser = newBrowser();
    const mailsBefore = await mailCount('page-member@example.test');
    const started = await post(browser, '/device/sign-in', { provider: 'email', email: 'page-member@example.test', user_code: asked.user_code });
    // Post, redirect, get: the code page is a GET, and reloading it mails nothing.
    expect(started.status).toBe(303);
    expect(started.headers.location).toBe('/device');
    expect(browser.cookies.get('__Host-platform_device')).toMatch(/^platform_ws_/);
    const mail = await lastMailTo(platform.outbox, 'page-member@example.test');
    const digits = mail.digits!;
    for (let reload = 0; reload < 2; reload++) {
      const page = await get(browser, '/device');
      expect(title(page)).toBe('Enter your code');
      expect(page.text).toContain('<strong>page-member@example.test</strong>');
      expect(page.text).toMatch(/<input type="text" id="code" name="code"[^>]* autofocus>/);
    }
    expect((await lastMailTo(platform.outbox, 'page-member@example.test')).digits).toBe(digits);
    expect(await mailCount('page-member@example.test')).toBe(mailsBefore + 1);
    const wrong = await post(browser, '/device/email-code', { code: String((Number(digits) + 1) % 1_000_000).padStart(6, '0') });
    expect(wrong.status).toBe(303);
    expect(wrong.headers.location).toBe('/device');
    const again = await get(browser, '/device');
    expect(title(again)).toBe('Enter your code');
    expect(again.text).toContain('<p class="error" id="code-error">That code is wrong or has expired');
    expect(again.text).toContain('aria-invalid="true" aria-describedby="code-error" autofocus>');
    // Said once: a reload shows the form without the error.
    expect((await get(browser, '/device')).text).not.toContain('code-error');
    const done = await post(browser, '/device/email-code', { code: digits });
    expect(done.status).toBe(303);
    const shown = await get(browser, '/device');
    expect(title(shown)).toBe('Approve this device?');
    expect(shown.text).toContain('Page workbench');
    expect(shown.text).toContain(`<option value="${team.id}">Page Team</option>`);
    expect(shown.text).toContain(`<option value="${member.personalOrganisationId}">`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(shown.text)![1]!;
    const decided = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve', organisation: team.id });
    expect(decided.status).toBe(303);
    expect(title(await get(browser, '/device'))).toBe('Device approved');
    expect(title(await get(browser, '/device'))).toBe('Device approved');
    platform.clock.advance(asked.interval * 1000);
    const tokens = await call(platform, 'post', '/relay/v1/device/token', { body: { device_code: asked.device_code } });
    expect(tokens.status).toBe(200);
    const organisation = await call(platform, 'get', '/platform/v1/organisation', { headers: { Authorization: `Bearer ${tokens.body.access_token}` } });
    expect(organisation.body.id).toBe(team.id);
  });

  it('with a provider: the page sends the browser there, and the Cloud callback brings it back signed in', async () => {
    const asked = await codeFor();
    const browser = newBrowser();
    github.user = { id: 8080, name: 'Page Octo', emails: [{ email: 'page-owner@example.test', primary: true, verified: true }] };
    const started = await post(browser, '/device/sign-in', { provider: 'github', user_code: asked.user_code });
    expect(started.status).toBe(303);
    const back = await github.authorize(started.headers.location!);
    const callback = await get(browser, `${back.pathname}${back.search}`);
    expect(callback.status).toBe(302);
    const toPage = new URL(callback.headers.location!);
    expect(`${toPage.origin}${toPage.pathname}`).toBe(`${BASE_URL}/device/callback`);
    // The page's one-time code is for the page alone.
    const { verifier } = await pkce();
    const stolen = await call(platform, 'post', '/auth/v1/token', {
      body: { grant_type: 'authorization_code', code: toPage.searchParams.get('code'), code_verifier: verifier, redirect_uri: `${BASE_URL}/device/callback` },
    });
    expect(stolen.body.error).toBe('invalid_grant');
    const signedIn = await get(browser, `${toPage.pathname}${toPage.search}`);
    expect(signedIn.status).toBe(303);
    const shown = await get(browser, '/device');
    expect(title(shown)).toBe('Approve this device?');
    // GitHub's verified address joined the owner's account: their team is offered.
    expect(shown.text).toContain(`<option value="${team.id}">Page Team</option>`);
  });

  it('binds its provider sign-in to the browser like any other: finished in another browser, nobody is signed in there', async () => {
    const asked = await codeFor();
    const starter = newBrowser();
    const other = newBrowser();
    github.user = { id: 8181, name: 'Lured', emails: [{ email: 'lured-page@example.test', primary: true, verified: true }] };
    const started = await post(starter, '/device/sign-in', { provider: 'github', user_code: asked.user_code });
    expect(starter.cookies.get('__Host-platform_flow')).toMatch(/^platform_fb_/);
    const back = await github.authorize(started.headers.location!);
    const callback = await get(other, `${back.pathname}${back.search}`);
    const toPage = new URL(callback.headers.location!);
    expect(toPage.searchParams.get('error')).toBe('access_denied');
    expect(toPage.searchParams.get('code')).toBeNull();
    // The starter's browser cannot finish it either now: the flow is spent.
    expect((await get(starter, `${back.pathname}${back.search}`)).status).toBe(400);
    expect(title(await get(other, '/device'))).not.toBe('Approve this device?');
  });

  it("survives a forged callback with another state: the genuine one still signs in", async () => {
    const asked = await codeFor();
    const browser = newBrowser();
    github.user = { id: 8081, name: 'Page Octo', emails: [{ email: 'page-owner@example.test', primary: true, verified: true }] };
    const started = await post(browser, '/device/sign-in', { provider: 'github', user_code: asked.user_code });
    const back = await github.authorize(started.headers.location!);
    const toPage = new URL((await get(browser, `${back.pathname}${back.search}`)).headers.location!);
    const forged = new URL(toPage.href);
    forged.searchParams.set('state', 'attacker');
    forged.searchParams.set('code', 'platform_sc_attacker');
    expect((await get(browser.copy(), `${forged.pathname}${forged.search}`)).status).toBe(400);
    expect((await get(browser, `${toPage.pathname}${toPage.search}`)).status).toBe(303);
    expect(title(await get(browser, '/device'))).toBe('Approve this device?');
  });

  it('offers only organisations where the person may approve the kind: a member sees no team for a node', async () => {
    const node = await codeFor('node');
    const browser = newBrowser();
    const shown = await signInByEmail(browser, 'page-member@example.test', node.user_code);
    expect(title(shown)).toBe('Approve this device?');
    expect(shown.text).not.toContain(team.id);
    const csrf = /name="csrf" value="([^"]+)"/.exec(shown.text)![1]!;
    // Naming the team anyway is refused; an organisation that is not theirs too.
    expect((await post(browser, '/device/decision', { csrf, user_code: node.user_code, decision: 'approve', organisation: team.id })).status).toBe(403);
    const elsewhere = await post(browser, '/device/decision', { csrf, user_code: node.user_code, decision: 'approve', organisation: owner.personalOrganisationId });
    expect(elsewhere.status).toBe(303);
    const shownAgain = await get(browser, '/device');
    expect(title(shownAgain)).toBe('Approve this device?');
    expect(shownAgain.text).toContain('<p class="error" id="organisation-error">Nothing was approved. Choose one of your organisations for the device.</p>');
    expect(shownAgain.text).toContain('<select id="organisation" name="organisation" aria-invalid="true" aria-describedby="organisation-error" autofocus>');
  });

  it('refuses a form from another site, a callback it did not start, and passes on a refusal at the provider', async () => {
    const browser = newBrowser();
    expect((await post(browser, '/device/sign-in', { provider: 'email', email: 'x@example.test' }, 'https://evil.test')).status).toBe(403);
    expect((await get(browser, '/device/callback?code=platform_sc_x&state=nope')).status).toBe(400);
    expect((await post(browser, '/device/email-code', { code: '123456' })).status).toBe(400);
    const bad = await post(browser, '/device/sign-in', { provider: 'email', email: 'not-an-address' });
    expect(bad.status).toBe(303);
    expect(bad.headers.location).toBe('/device?notice=bad-email');
    const badShown = await get(browser, bad.headers.location!);
    expect(title(badShown)).toBe('Sign in to connect a device');
    expect(badShown.text).toContain('<p class="error" id="email-error">That is not an email address. Nothing was sent.</p>');
    expect(badShown.text).toMatch(/<input type="email" id="email"[^>]* aria-invalid="true" aria-describedby="email-error" autofocus>/);
    const unknown = await post(browser, '/device/sign-in', { provider: 'yahoo' });
    expect(unknown.status).toBe(400);

    github.refuse = true;
    try {
      const started = await post(browser, '/device/sign-in', { provider: 'github' });
      const back = await github.authorize(started.headers.location!);
      const callback = await get(browser, `${back.pathname}${back.search}`);
      const toPage = new URL(callback.headers.location!);
      expect(toPage.searchParams.get('error')).toBe('access_denied');
      const page = await get(browser, `${toPage.pathname}${toPage.search}`);
      expect(page.status).toBe(403);
      expect(title(page)).toBe('Sign-in failed');
    } finally {
      github.refuse = false;
    }
  });

  it('signs out', async () => {
    const asked = await codeFor();
    const browser = newBrowser();
    const shown = await signInByEmail(browser, 'page-owner@example.test', asked.user_code);
    const csrf = /name="csrf" value="([^"]+)"/.exec(shown.text)![1]!;
    const out = await post(browser, '/device/sign-out', { csrf });
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/device?notice=signed-out');
    expect(await get(browser, out.headers.location!)).toMatchObject({ status: 200, text: expect.stringContaining('You are signed out.') });
    expect(title(await get(browser, `/device?user_code=${asked.user_code}`))).toBe('Sign in to connect a device');
  });
});
