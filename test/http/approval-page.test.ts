import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request, { type Response } from 'supertest';
import { CookieJar, PageBrowser } from '../support/cookie-jar.js';
import { askForCode, pollForTokens, type AskedCode } from '../support/devices.js';
import { createOrganisation, startPlatform, type TestPlatform } from '../support/platform.js';
import { TestIdentityProvider } from '../support/idp.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { DeviceAuthorizationEntity } from '../../src/modules/devices/entities.js';
import { WebSessionEntity } from '../../src/web/device-approval/page-session.js';
import { MembershipEntity, PersonIdentityEntity } from '../../src/modules/organisation/entities.js';
import { hashSecret } from '../../src/util/secrets.js';

/**
 * The approval page at `verification_uri`, through the real app and a real OpenID provider
 * (its development login and consent pages, driven without a browser; the browser suite does
 * the same in Chromium). What a person sees, and every refusal: CSP, CSRF, session, claim rules,
 * escaping.
 */

const HOST = 'acme.test';
const ORIGIN = `http://${HOST}`;
const ROLE_CLAIM = 'platform_role';

let platform: TestPlatform;
let idp: TestIdentityProvider;
let organisation: OrganisationRecord;
let partner: OrganisationRecord;
let partnerIdp: TestIdentityProvider;
const partnerHost = 'partner.test';

/** Every secret seen in this file (cookies, codes, tokens), to prove none reached the logs. */
const secrets: string[] = [];

beforeAll(async () => {
  platform = await startPlatform({ env: { RATE_LIMITS_ENABLED: 'false', TRUST_PROXY: 'loopback' } });
  [idp, partnerIdp] = await Promise.all([
    TestIdentityProvider.start({ interactive: { redirectUris: [`${ORIGIN}/device/callback`] } }),
    TestIdentityProvider.start({ interactive: { redirectUris: [`http://${partnerHost}/device/callback`] } }),
  ]);
  organisation = await createOrganisation(platform, { name: 'Acme & <Sons>', hosts: [HOST], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
  partner = await createOrganisation(platform, { name: 'Partner', hosts: [partnerHost], oidc: partnerIdp.settings() });
  idp.setAccount('olga', { name: 'Olga Owner', email: 'olga@acme.test', [ROLE_CLAIM]: 'owner' });
  idp.setAccount('mia', { name: 'Mia Member', email: 'mia@acme.test', [ROLE_CLAIM]: 'member' });
  idp.setAccount('max', { name: 'Max Member', [ROLE_CLAIM]: 'member' });
});

afterAll(async () => {
  await Promise.all([idp?.close(), partnerIdp?.close()]);
  await platform?.close();
});

// Helpers ------------------------------------------------------------------------------------

type Browser = PageBrowser;

const newBrowser = (host = HOST): Browser => new PageBrowser(platform.app, host);
/** The page session's secret in a browser's cookie, if it holds one. */
const sessionOf = (browser: Browser) => browser.cookies.get('platform_device');
/** A browser at `host` that holds the session cookie `secret` (a copied or stolen cookie). */
const holding = (secret: string | undefined, host = HOST): Browser => new PageBrowser(platform.app, host, new CookieJar().store(secret ? `platform_device=${secret}` : undefined));

function remember(browser: Browser, res: Response): Response {
  secrets.push(...browser.cookies.values());
  return res;
}

const get = async (browser: Browser, path: string, headers: Record<string, string> = {}) => remember(browser, await browser.get(path, headers));

const post = async (browser: Browser, path: string, form: Record<string, string>, headers: Record<string, string> = { Origin: `http://${browser.host}` }) =>
  remember(browser, await browser.post(path, form, headers));

async function codeFor(body: Record<string, unknown> = {}, options: { host?: string; userAgent?: string; address?: string } = {}): Promise<AskedCode> {
  const asked = await askForCode(platform, {
    host: options.host ?? HOST,
    ...(options.address ? { from: options.address } : {}),
    headers: { 'User-Agent': options.userAgent ?? 'workbench/1.4 (linux)' },
    body: { workspaceId: 'ws-main', name: 'Build box', ...body },
  });
  secrets.push(asked.device_code, asked.user_code, asked.user_code.replace('-', ''));
  return asked;
}

const poll = (deviceCode: string, host = HOST) => pollForTokens(platform, deviceCode, { host });

/** "Sign in" on the page, through the provider's pages, back to the callback; answers where the callback sent the browser. */
async function signIn(browser: Browser, login: string, userCode?: string, provider = idp): Promise<Response> {
  const start = await post(browser, '/device/sign-in', userCode ? { user_code: userCode } : {});
  expect(start.status).toBe(303);
  const back = await provider.authorize(start.headers.location!, login);
  // `state` is no secret (it travels in the browser's address bar both ways); the code is one.
  secrets.push(back.searchParams.get('code') ?? '');
  expect(back.origin).toBe(`http://${browser.host}`);
  return get(browser, `${back.pathname}${back.search}`);
}

function csrfOf(res: Response): string {
  const token = /name="csrf" value="([^"]+)"/.exec(res.text)?.[1];
  if (!token) throw new Error(`no CSRF token on the page:\n${res.text}`);
  return token;
}

function expectPage(res: Response, status: number, title: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.text).toMatch(new RegExp(`<h1>${title.source}</h1>`));
}

// ---------------------------------------------------------------------------------------------

describe('the page itself', () => {
  it('asks for the code, under a strict CSP that lets only its own hashed stylesheet in', async () => {
    const res = await get(newBrowser(), '/device');
    expectPage(res, 200, /Connect a device/);
    expect(res.text).toContain('<form method="get" action="/device">');
    const style = /<style>([\s\S]*?)<\/style>/.exec(res.text)![1]!;
    const hash = createHash('sha256').update(style, 'utf8').digest('base64');
    expect(res.headers['content-security-policy']).toBe(
      `default-src 'none'; style-src 'sha256-${hash}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    expect(res.text).not.toMatch(/<script|\son\w+=|javascript:/i);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('strict-origin');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it("carries the operator's product name, logo and accent, and lets that logo in only", async () => {
    const branded = await startPlatform({ env: { PAGE_PRODUCT_NAME: 'Acme <Devices>', PAGE_LOGO_URL: 'data:image/png;base64,iVBORw0KGgo=', PAGE_ACCENT: '#0B5D1E' } });
    try {
      await createOrganisation(branded, { name: 'Branded', hosts: ['branded.test'], oidc: idp.settings() });
      const res = await request(branded.app).get('/device').set('Host', 'branded.test');
      expect(res.status).toBe(200);
      expect(res.text).toContain('<title>Connect a device · Acme &lt;Devices&gt;</title>');
      expect(res.text).toContain('<header><img src="data:image/png;base64,iVBORw0KGgo=" alt=""><span class="product">Acme &lt;Devices&gt;</span></header>');
      expect(res.text).toContain('--accent: #0b5d1e;');
      expect(res.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[^']+'; img-src data:; form-action 'self';/);
    } finally {
      await branded.close();
    }
    // Without settings: "Platform", no image, and no img-src.
    const plain = await get(newBrowser(), '/device');
    expect(plain.text).toContain('<title>Connect a device · Platform</title>');
    expect(plain.text).not.toContain('<img');
  });

  it('is not in the OpenAPI document: it is HTML, not an API operation', () => {
    const paths = Object.keys((platform.openapi as { paths: Record<string, unknown> }).paths);
    expect(paths.filter((path) => path.startsWith('/device'))).toEqual([]);
  });

  it('tells a mistyped code apart, escaping what was typed', async () => {
    const res = await get(newBrowser(), '/device?user_code=%22%3E%3Cscript%3Ex');
    expectPage(res, 400, /Connect a device/);
    expect(res.text).toContain('That is not a device code');
    expect(res.text).toContain('value="&quot;&gt;&lt;script&gt;x"');
    expect(res.text).not.toContain('<script');
  });

  it('offers sign-in for a code without looking the code up, and lets the form go to the provider only', async () => {
    const asked = await codeFor();
    const res = await get(newBrowser(), `/device?user_code=${asked.user_code}`);
    expectPage(res, 200, /Sign in to connect a device/);
    expect(res.text).toContain(asked.user_code);
    expect(res.text).toContain('Acme &amp; &lt;Sons&gt;');
    expect(res.text).not.toContain('Build box');
    expect(res.headers['content-security-policy']).toContain(`form-action 'self' ${idp.issuer};`);
    const stored = await platform.dataSource.getRepository(DeviceAuthorizationEntity).findOneByOrFail({ userCodeHash: hashSecret(asked.user_code.replace('-', '')) });
    expect(stored.claimedBy).toBeNull();
  });

  it('answers an unknown host with a page, not the API error body', async () => {
    const res = await get(newBrowser('nobody.test'), '/device');
    expectPage(res, 404, /Nothing here/);
  });

  it('explains when the organisation has no identity provider yet', async () => {
    await createOrganisation(platform, { name: 'Bare', hosts: ['bare.test'] });
    const res = await get(newBrowser('bare.test'), '/device?user_code=BCDF-GHJK');
    expectPage(res, 503, /Sign-in is not set up/);
    expect(res.text).not.toContain('action="/device/sign-in"');
  });
});

describe('starting sign-in', () => {
  it('sends the browser to the provider with PKCE S256, state and nonce, and keeps the rest server-side', async () => {
    const browser = newBrowser();
    const asked = await codeFor();
    const res = await post(browser, '/device/sign-in', { user_code: asked.user_code });
    expect(res.status).toBe(303);
    const target = new URL(res.headers.location!);
    expect(`${target.origin}${target.pathname}`).toBe(`${idp.issuer}/auth`);
    const query = Object.fromEntries(target.searchParams);
    expect(query).toEqual({
      client_id: idp.clientId,
      redirect_uri: `${ORIGIN}/device/callback`,
      response_type: 'code',
      scope: `openid ${idp.apiScope}`,
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge_method: 'S256',
      state: expect.stringMatching(/^[A-Za-z0-9_-]{22,}$/),
      nonce: expect.stringMatching(/^[A-Za-z0-9_-]{22,}$/),
      resource: idp.audience,
    });
    expect(target.href).not.toContain(asked.user_code);
    expect(target.href).not.toContain(asked.user_code.replace('-', ''));

    const cookie = ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]!;
    expect(cookie).toMatch(/^platform_device=platform_ws_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=4200; HttpOnly; SameSite=Lax$/);
    const secret = sessionOf(browser)!;
    const rows = await platform.dataSource.getRepository(WebSessionEntity).findBy({ idHash: hashSecret(secret) });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ stage: 'signing_in', organisationId: organisation.id, stateHash: hashSecret(query.state!) });
    // The row holds no secret in the clear: not the cookie, the code being approved, nor the nonce.
    const stored = JSON.stringify(rows);
    for (const value of [secret, asked.user_code, asked.user_code.replace('-', ''), query.nonce!]) expect(stored).not.toContain(value);
  });

  it('uses a __Host- cookie marked Secure over https', async () => {
    const res = await post(newBrowser(), '/device/sign-in', {}, { Origin: `https://${HOST}`, 'X-Forwarded-Proto': 'https' });
    expect(res.status).toBe(303);
    expect(new URL(res.headers.location!).searchParams.get('redirect_uri')).toBe(`https://${HOST}/device/callback`);
    expect(([] as string[]).concat(res.headers['set-cookie'] ?? [])[0]).toMatch(
      /^__Host-platform_device=platform_ws_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=4200; HttpOnly; SameSite=Lax; Secure$/,
    );
  });

  it.each([
    ['without Origin or Referer', {}],
    ['from another origin', { Origin: 'http://evil.test' }],
    ['with Origin null', { Origin: 'null' }],
    ['from another site by Fetch Metadata', { 'Sec-Fetch-Site': 'cross-site', Origin: ORIGIN }],
    ['with a Referer of another origin', { Referer: 'http://evil.test/device' }],
    ['with a Referer that only starts like this origin', { Referer: `${ORIGIN}.evil.test/` }],
  ])('refuses a post %s (CSRF), storing nothing', async (_case, headers) => {
    const before = await platform.dataSource.getRepository(WebSessionEntity).count();
    const res = await post(newBrowser(), '/device/sign-in', {}, headers);
    expectPage(res, 403, /Request refused/);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(await platform.dataSource.getRepository(WebSessionEntity).count()).toBe(before);
  });

  it('accepts a same-origin Referer when a browser sends no Origin', async () => {
    const res = await post(newBrowser(), '/device/sign-in', {}, { Referer: `${ORIGIN}/` });
    expect(res.status).toBe(303);
  });

  it('takes only the page form, not JSON', async () => {
    const res = await request(platform.app).post('/device/sign-in').set('Host', HOST).set('Origin', ORIGIN).send({ user_code: 'BCDF-GHJK' });
    expectPage(res, 415, /Request refused/);
  });
});

describe('the provider\'s answer', () => {
  it('signs the person in through the person-token rules, with a new session id, and returns to the code', async () => {
    const asked = await codeFor({ name: 'Olga\'s laptop' });
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', { user_code: asked.user_code });
    const signingIn = sessionOf(browser)!;
    const back = await idp.authorize(start.headers.location!, 'olga');
    expect(`${back.origin}${back.pathname}`).toBe(`${ORIGIN}/device/callback`);
    secrets.push(back.searchParams.get('code')!);

    const res = await get(browser, `${back.pathname}${back.search}`);
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/device');
    expect(sessionOf(browser)).toBeDefined();
    expect(sessionOf(browser)).not.toBe(signingIn);
    expect(([] as string[]).concat(res.headers['set-cookie'] ?? []).at(-1)).toMatch(/; Max-Age=4500; HttpOnly; SameSite=Lax$/);

    // The person exists as a person token would have made them, with the role claim's role.
    const identity = await platform.dataSource.getRepository(PersonIdentityEntity).findOneByOrFail({ issuer: idp.issuer, subject: 'olga' });
    expect(await platform.dataSource.getRepository(MembershipEntity).findOneByOrFail({ organisationId: organisation.id, personId: identity.personId })).toMatchObject({ role: 'owner' });
    const session = await platform.dataSource.getRepository(WebSessionEntity).findOneByOrFail({ idHash: hashSecret(sessionOf(browser)!) });
    expect(session).toMatchObject({ stage: 'signed_in', personId: identity.personId, stateHash: null });

    // The code came along in the session, not in the address.
    const page = await get(browser, '/device');
    expectPage(page, 200, /Approve this device\?/);
    expect(page.text).toContain('Olga&#39;s laptop');
    expect(page.text).toContain('Signed in as Olga Owner');
  });

  it('is single use: the same answer again is refused', async () => {
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'olga');
    const signingIn = sessionOf(browser);
    expect((await get(browser, `${back.pathname}${back.search}`)).status).toBe(303);
    const replay = await get(holding(signingIn), `${back.pathname}${back.search}`);
    expectPage(replay, 400, /Sign-in could not be completed/);
  });

  it("refuses an answer with another state without touching the sign-in: an attacker's callback first, then the genuine one works", async () => {
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'olga');
    const state = back.searchParams.get('state')!;
    // Any site can send the victim's browser (and its cookie) to the callback with a state of its choosing.
    for (const forged of [`${state}x`, 'attacker-state', '']) {
      const attack = new URL(back.href);
      attack.searchParams.set('state', forged);
      attack.searchParams.set('code', 'attacker-code');
      expectPage(await get(browser.copy(), `${attack.pathname}${attack.search}`), 400, /Sign-in could not be completed/);
    }
    const pending = await platform.dataSource.getRepository(WebSessionEntity).findBy({ stage: 'signing_in', stateHash: hashSecret(state) });
    expect(pending).toHaveLength(1);
    const signingIn = sessionOf(browser);
    const genuine = await get(browser, `${back.pathname}${back.search}`);
    expect(genuine.status).toBe(303);
    expect(genuine.headers.location).toBe('/device');
    expectPage(await get(browser, '/device'), 200, /Connect a device/);
    expect((await get(browser, '/device')).text).toContain('Signed in as');
    // Spent: the same answer again is refused.
    expectPage(await get(holding(signingIn), `${back.pathname}${back.search}`), 400, /Sign-in could not be completed/);
  });

  it('refuses an answer arriving in another browser (login CSRF)', async () => {
    const attacker = newBrowser();
    const start = await post(attacker, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'max');
    const victim = newBrowser();
    expectPage(await get(victim, `${back.pathname}${back.search}`), 400, /Sign-in could not be completed/);
    expect(sessionOf(victim)).toBeUndefined();
    const other = newBrowser();
    await post(other, '/device/sign-in', {});
    expectPage(await get(other, `${back.pathname}${back.search}`), 400, /Sign-in could not be completed/);
  });

  it('refuses a sign-in that took longer than ten minutes', async () => {
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'olga');
    platform.clock.advance(601_000);
    try {
      expectPage(await get(browser, `${back.pathname}${back.search}`), 400, /Sign-in could not be completed/);
    } finally {
      platform.clock.advance(-601_000);
    }
  });

  it('says so when the person cancels at the provider', async () => {
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'olga', { cancel: true });
    expect(back.searchParams.get('error')).toBe('access_denied');
    const res = await get(browser, `${back.pathname}${back.search}`);
    expectPage(res, 403, /Sign-in failed/);
    expect(res.text).toContain('cancelled or refused at your identity provider');
    expect(sessionOf(browser)).toBeUndefined();
  });

  it('refuses a code that was tampered with at the provider\'s exchange', async () => {
    const browser = newBrowser();
    const start = await post(browser, '/device/sign-in', {});
    const back = await idp.authorize(start.headers.location!, 'olga');
    back.searchParams.set('code', `${back.searchParams.get('code')}x`);
    const res = await get(browser, `${back.pathname}${back.search}`);
    expectPage(res, 400, /Sign-in failed/);
    expect(sessionOf(browser)).toBeUndefined();
  });

  it("signs in only at the organisation of the host: another organisation's sign-in does not carry over", async () => {
    const browser = newBrowser(partnerHost);
    expect((await signIn(browser, 'olga', undefined, partnerIdp)).status).toBe(303);
    const row = await platform.dataSource.getRepository(WebSessionEntity).findOneByOrFail({ idHash: hashSecret(sessionOf(browser)!) });
    expect(row.organisationId).toBe(partner.id);
    expectPage(await get(browser, '/device'), 200, /Connect a device/);
    // The partner session's cookie means nothing at Acme's host.
    const res = await get(browser.copy(HOST), '/device?user_code=BCDF-GHJK');
    expectPage(res, 200, /Sign in to connect a device/);
  });
});

describe('the device page', () => {
  it('shows what is asking to join, every value escaped', async () => {
    const asked = await codeFor(
      { name: '<script>alert("name")</script>', workspaceId: '<img src=x onerror=alert(1)>', dpop_jkt: 'A'.repeat(43) },
      { userAgent: '"><svg onload=alert(2)>' },
    );
    const browser = newBrowser();
    await signIn(browser, 'mia', asked.user_code);
    const res = await get(browser, '/device');
    expectPage(res, 200, /Approve this device\?/);
    expect(res.text).toContain('&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;');
    expect(res.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(res.text).toContain('&quot;&gt;&lt;svg onload=alert(2)&gt;');
    expect(res.text).not.toMatch(/<script|<img|<svg/i);
    expect(res.text).toContain('Workbench');
    expect(res.text).toContain('<dt>Tied to the device</dt><dd>Yes: its access works only on this device, even if copied elsewhere</dd>');
    expect(res.text).toMatch(/<dt>Asked from<\/dt><dd id="device-address">[^<]*127\.0\.0\.1<\/dd>/);
    // What the device says about itself is labelled as such.
    const given = '<span class="given">as given by the device</span>';
    expect(res.text).toContain(`<dt>Device name ${given}</dt><dd id="device-name">&lt;script&gt;`);
    expect(res.text).toContain(`<dt>Workspace ${given}</dt><dd id="device-workspace">&lt;img`);
    expect(res.text).toContain(`<dt>Software ${given}</dt><dd>&quot;&gt;`);
    // Times relative to the server's clock, the exact time (UTC) in the title.
    expect(res.text).toMatch(/<dt>Asked<\/dt><dd><time datetime="[0-9T:.-]+Z" title="[0-9 :-]+ UTC">just now<\/time><\/dd>/);
    expect(res.text).toMatch(/<dt>Code expires<\/dt><dd><time datetime="[0-9T:.-]+Z" title="[0-9 :-]+ UTC">in 10 minutes<\/time><\/dd>/);
    // One form: the organisation (Cloud) and the confirmation above Approve and Deny, side by side.
    expect(res.text).toMatch(/<div class="actions">\n<button type="submit" name="decision" value="approve" class="primary">Approve<\/button>\n<button type="submit" name="decision" value="deny">Deny<\/button>\n<\/div>/);
    // Same network as the approver: no extra confirmation.
    expect(res.text).not.toContain('confirm_own_device');
    expect(res.text).toContain(asked.user_code);
    expect(res.headers['content-security-policy']).toMatch(/form-action 'self'; /);
  });

  it('claims the code: another person of the organisation only learns that it is taken', async () => {
    const asked = await codeFor({ name: 'Claimed box' });
    const first = newBrowser();
    await signIn(first, 'mia', asked.user_code);
    expect((await get(first, '/device')).status).toBe(200);

    const second = newBrowser();
    await signIn(second, 'max');
    const res = await get(second, `/device?user_code=${asked.user_code}`);
    expectPage(res, 403, /You cannot decide this request/);
    expect(res.text).toContain('Another person has opened this code');
    expect(res.text).not.toContain('Claimed box');
    expect(res.text).not.toContain('action="/device/decision"');
  });

  it.each([
    ['unknown', 404, /No request has this code/, async () => 'BCDF-GHJK'],
    ["another organisation's (as unknown)", 404, /No request has this code/, async () => (await codeFor({ name: 'Partner box' }, { host: partnerHost })).user_code],
    ['expired', 410, /This code has expired/, async () => {
      const asked = await codeFor({ name: 'Old box' });
      platform.clock.advance(601_000);
      return asked.user_code;
    }],
    ['approved by another person', 409, /Already approved/, async () => {
      const asked = await codeFor({ name: 'Decided box' });
      const other = newBrowser();
      await signIn(other, 'max', asked.user_code);
      const page = await get(other, '/device');
      expect((await post(other, '/device/decision', { csrf: csrfOf(page), user_code: asked.user_code, decision: 'approve' })).status).toBe(303);
      return asked.user_code;
    }],
    ['denied by another person', 409, /Already denied/, async () => {
      const asked = await codeFor({ name: 'Decided box' });
      const other = newBrowser();
      await signIn(other, 'max', asked.user_code);
      const page = await get(other, '/device');
      expect((await post(other, '/device/decision', { csrf: csrfOf(page), user_code: asked.user_code, decision: 'deny' })).status).toBe(303);
      return asked.user_code;
    }],
  ])('says what became of a code that is %s, and nothing of its details', async (_case, status, title, code) => {
    const browser = newBrowser();
    await signIn(browser, 'olga');
    const userCode = await code();
    try {
      const res = await get(browser, `/device?user_code=${userCode}`);
      expectPage(res, status, title);
      expect(res.text).not.toMatch(/(Partner|Old|Decided) box/);
      expect(res.text).not.toContain('<dl>');
      expect(res.text).toContain('href="/device?another=1"');
      // Reloading says the same.
      expectPage(await get(browser, '/device'), status, title);
    } finally {
      platform.clock.set(Date.now());
    }
  });

  it('refuses a node to a member before claiming it, so an owner can still approve it', async () => {
    const asked = await codeFor({ name: 'Rack node', kind: 'node' });
    const member = newBrowser();
    await signIn(member, 'mia', asked.user_code);
    const res = await get(member, '/device');
    expectPage(res, 403, /You cannot decide this request/);
    expect(res.text).toContain('Only owners and admins may approve a node');

    const owner = newBrowser();
    await signIn(owner, 'olga', asked.user_code);
    const page = await get(owner, '/device');
    expectPage(page, 200, /Approve this device\?/);
    expect(page.text).toContain('Node (headless machine)');
  });
});

describe('deciding', () => {
  async function openDevice(login: string, body: Record<string, unknown> = {}) {
    const asked = await codeFor(body);
    const browser = newBrowser();
    await signIn(browser, login, asked.user_code);
    const page = await get(browser, '/device');
    expectPage(page, 200, /Approve this device\?/);
    return { asked, browser, csrf: csrfOf(page) };
  }

  it('approves: the device\'s next poll gets its tokens, and the page says so', async () => {
    const { asked, browser, csrf } = await openDevice('olga', { name: 'Approved box' });
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
    const res = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' });
    // Post, redirect, get: the answer to the post is a redirect to the page that shows the state.
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/device');
    // The decision's audit row (docs/api/audit-trail.md) names the page's request that made it.
    const [row] = await platform.dataSource.query<Record<string, unknown>[]>('SELECT action, actor_kind, target, request_id, source_address FROM audit_log ORDER BY row_id DESC LIMIT 1');
    expect(row).toMatchObject({ action: 'device.approved', actor_kind: 'person', request_id: res.headers['x-request-id'], source_address: expect.any(String) });
    expect(JSON.parse(row!.target as string)).toEqual({ kind: 'workbench', name: 'Approved box' });
    const shown = await get(browser, '/device');
    expectPage(shown, 200, /Device approved/);
    expect(shown.text).toContain('You approved <strong>Approved box</strong>');
    expect(shown.text).toContain('class="outcome approved"');
    // A reload shows the same, never an error.
    expectPage(await get(browser, '/device'), 200, /Device approved/);
    platform.clock.advance(5_000);
    const tokens = await poll(asked.device_code);
    expect(tokens.status).toBe(200);
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', device_id: expect.stringMatching(/^dev_/) });
    secrets.push(tokens.body.access_token, tokens.body.refresh_token);
    // Redeemed, and past its expiry: still shown as approved, by this person.
    platform.clock.advance(601_000);
    try {
      expectPage(await get(browser, '/device'), 200, /Device approved/);
    } finally {
      platform.clock.advance(-601_000);
    }
    // Posting the same form again (Back, then resubmit) decides nothing more and shows the same.
    const again = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'deny' });
    expect(again.status).toBe(303);
    expectPage(await get(browser, '/device'), 200, /Device approved/);
    // Another code: the page asks for it.
    expectPage(await get(browser, '/device?another=1'), 200, /Connect a device/);
  });

  it('denies: the device is told access_denied', async () => {
    const { asked, browser, csrf } = await openDevice('mia', { name: 'Denied box' });
    const res = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'deny' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/device');
    const shown = await get(browser, '/device');
    expectPage(shown, 200, /Device denied/);
    expect(shown.text).toContain('You denied <strong>Denied box</strong>');
    expect(shown.text).toContain('class="outcome denied"');
    expectPage(await get(browser, '/device'), 200, /Device denied/);
    const answer = await poll(asked.device_code);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe('access_denied');
  });

  it.each([
    ['without a token', (): Record<string, string> => ({ decision: 'approve' })],
    ['with a wrong token', (csrf: string): Record<string, string> => ({ decision: 'approve', csrf: `${csrf.slice(0, -2)}xx` })],
  ])('refuses a decision %s (CSRF), deciding nothing', async (_case, form) => {
    const { asked, browser, csrf } = await openDevice('olga');
    const res = await post(browser, '/device/decision', { ...form(csrf), user_code: asked.user_code });
    expectPage(res, 403, /Request refused/);
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });

  it("refuses another session's token, even for a code that person opened", async () => {
    const { asked, browser } = await openDevice('olga');
    const other = newBrowser();
    await signIn(other, 'max');
    const otherCsrf = csrfOf(await get(other, '/device'));
    const res = await post(browser, '/device/decision', { csrf: otherCsrf, user_code: asked.user_code, decision: 'approve' });
    expectPage(res, 403, /Request refused/);
  });

  it('refuses a decision from another origin even with the right token', async () => {
    const { asked, browser, csrf } = await openDevice('olga');
    const res = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' }, { Origin: 'http://evil.test' });
    expectPage(res, 403, /Request refused/);
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });

  it('needs a session: without one, or once it has ended after fifteen minutes, nothing is decided, and the code is kept', async () => {
    const { asked, browser, csrf } = await openDevice('olga');
    const stranger = newBrowser();
    const refused = await post(stranger, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' });
    expect(refused.status).toBe(303);
    expect(refused.headers.location).toBe(`/device?user_code=${asked.user_code}&notice=session-ended`);

    platform.clock.advance(901_000);
    try {
      // Reloading the device page after the session ran out: sign in again, with the same code.
      const lapsed = await get(browser, '/device');
      expectPage(lapsed, 200, /Sign in to connect a device/);
      expect(lapsed.text).toContain('Your session ended, so nothing was decided.');
      expect(lapsed.text).toContain(`<p class="code">${asked.user_code}</p>`);
      expect(lapsed.text).toContain(`<input type="hidden" name="user_code" value="${asked.user_code}">`);
      const posted = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' });
      expect(posted.status).toBe(303);
      const shown = await get(browser, posted.headers.location!);
      expectPage(shown, 200, /Sign in to connect a device/);
      expect(shown.text).toContain('Your session ended');
      expect(shown.text).toContain(asked.user_code);
    } finally {
      platform.clock.advance(-901_000);
    }
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });

  it('refuses a decision for a code the person did not open when another has it', async () => {
    const { asked } = await openDevice('mia');
    const other = newBrowser();
    await signIn(other, 'max');
    const csrf = csrfOf(await get(other, '/device'));
    const res = await post(other, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' });
    expectPage(res, 403, /You cannot decide this request/);
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });

  it('refuses a decision that is neither approve nor deny', async () => {
    const { asked, browser, csrf } = await openDevice('olga');
    expectPage(await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'maybe' }), 400, /Request refused/);
  });

  it('ends the session on sign-out', async () => {
    const { asked, browser, csrf } = await openDevice('olga');
    const secret = sessionOf(browser)!;
    const res = await post(browser, '/device/sign-out', { csrf });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/device?notice=signed-out');
    expect(sessionOf(browser)).toBeUndefined();
    const shown = await get(browser, res.headers.location!);
    expectPage(shown, 200, /Connect a device/);
    expect(shown.text).toContain('<p class="notice" role="status">You are signed out.</p>');
    expect(await platform.dataSource.getRepository(WebSessionEntity).countBy({ idHash: hashSecret(secret) })).toBe(0);
    const again = await post(holding(secret), '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' });
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(`/device?user_code=${asked.user_code}&notice=session-ended`);
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
  });
});

describe('a request from another network', () => {
  /** The device asks from 198.51.100.7; the person approves from `approverAddress`. */
  async function openFrom(approverAddress: string) {
    const asked = await codeFor({ name: 'Far box' }, { address: '198.51.100.7' });
    const browser = newBrowser();
    const at = { 'X-Forwarded-For': approverAddress };
    const start = await post(browser, '/device/sign-in', { user_code: asked.user_code }, { Origin: ORIGIN, ...at });
    const back = await idp.authorize(start.headers.location!, 'olga');
    secrets.push(back.searchParams.get('code') ?? '');
    await get(browser, `${back.pathname}${back.search}`, at);
    const page = await get(browser, '/device', at);
    expectPage(page, 200, /Approve this device\?/);
    return { asked, browser, at, page, csrf: csrfOf(page) };
  }

  it('from the same /24 asks nothing more', async () => {
    const { page } = await openFrom('198.51.100.200');
    expect(page.text).not.toContain('another network');
    expect(page.text).not.toContain('confirm_own_device');
  });

  it('says so before the buttons, and approving needs the explicit confirmation, checked by the server', async () => {
    const { asked, browser, at, page, csrf } = await openFrom('203.0.113.9');
    expect(page.text).toContain('<strong>This request comes from another network than yours.</strong> The device asked from 198.51.100.7');
    expect(page.text.indexOf('id="other-network"')).toBeLessThan(page.text.indexOf('value="approve"'));
    expect(page.text).toMatch(/<input type="checkbox" id="confirm_own_device" name="confirm_own_device" value="yes"><label for="confirm_own_device">I started this on my own device just now<\/label>/);

    // Approve without the box ticked: nothing is approved; the page says why, at the box.
    const refused = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve' }, { Origin: ORIGIN, ...at });
    expect(refused.status).toBe(303);
    expect(refused.headers.location).toBe('/device');
    expect((await poll(asked.device_code)).body.error).toBe('authorization_pending');
    const shown = await get(browser, '/device', at);
    expectPage(shown, 200, /Approve this device\?/);
    expect(shown.text).toContain('<p class="error" id="confirm_own_device-error">Nothing was approved. This request comes from another network than yours');
    expect(shown.text).toContain('name="confirm_own_device" value="yes" aria-invalid="true" aria-describedby="confirm_own_device-error" autofocus>');
    // Shown once: a reload shows the request without the error.
    expect((await get(browser, '/device', at)).text).not.toContain('confirm_own_device-error');

    // With the box ticked: approved.
    const approved = await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'approve', confirm_own_device: 'yes' }, { Origin: ORIGIN, ...at });
    expect(approved.status).toBe(303);
    expectPage(await get(browser, '/device', at), 200, /Device approved/);
  });

  it('lets the person deny without the confirmation', async () => {
    const { asked, browser, at, csrf } = await openFrom('2001:db8::1');
    expect((await post(browser, '/device/decision', { csrf, user_code: asked.user_code, decision: 'deny' }, { Origin: ORIGIN, ...at })).status).toBe(303);
    expectPage(await get(browser, '/device', at), 200, /Device denied/);
  });
});

describe('rate limits', () => {
  it('count look-ups per person on the counter the JSON approval API uses, answering a page', async () => {
    const limited = await startPlatform({ env: { TRUST_PROXY: 'loopback' } });
    const saved = platform;
    try {
      await createOrganisation(limited, { name: 'Limited', hosts: [HOST], oidc: idp.settings({ roleClaim: ROLE_CLAIM }) });
      platform = limited;
      const browser = newBrowser();
      await signIn(browser, 'olga');
      const statuses: number[] = [];
      // A new code each time (guesses), from a new address each time: only the per-person counter can stop these.
      const guess = (attempt: number) => `BCDF-GH${'JKLMNPQRSTV'[attempt % 11]}${'WXZ'[Math.floor(attempt / 11)]}`;
      for (let attempt = 0; attempt < 11; attempt++) {
        statuses.push((await get(browser, `/device?user_code=${guess(attempt)}`, { 'X-Forwarded-For': `203.0.113.${attempt + 1}` })).status);
      }
      expect(statuses.slice(0, 10)).toEqual(Array(10).fill(404));
      expect(statuses[10]).toBe(429);
      const refused = await get(browser, `/device?user_code=${guess(12)}`, { 'X-Forwarded-For': '203.0.113.99' });
      expectPage(refused, 429, /Too many attempts/);
      expect(refused.headers['retry-after']).toBe('60');
    } finally {
      platform = saved;
      await limited.close();
    }
  });
});

describe('logs', () => {
  it('hold none of the cookies, codes or tokens of this file', () => {
    const written = JSON.stringify(platform.logs);
    const seen = secrets.filter((secret) => secret.length >= 8);
    expect(seen.length).toBeGreaterThan(30);
    for (const secret of seen) expect(written).not.toContain(secret);
    // The provider's answer is logged with its code (and state) replaced.
    expect(written).toContain('/device/callback?code=[REDACTED]&state=[REDACTED]&iss=');
    expect(written).toContain('/device?user_code=[REDACTED]');
  });
});
