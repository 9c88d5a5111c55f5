import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EmailCodeEntity } from '../../src/modules/signin/entities.js';
import { MembershipEntity, OrganisationEntity } from '../../src/modules/organisation/entities.js';
import {
  bearer,
  CONSOLE_REDIRECT,
  emailSignIn,
  lastMailTo,
  MOBILE_REDIRECT,
  outboxMails,
  pkce,
  startCloud,
  type CloudPlatform,
} from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * Emailed six-digit codes (spec 4.3, 3, 8): `POST /auth/v1/email/start` and `/verify`, with mails
 * read from the outbox as a person would read them.
 */

let platform: CloudPlatform;
let challenge: string;
let verifier: string;
let addressCount = 0;
const newAddress = () => `person${++addressCount}@example.test`;

beforeAll(async () => {
  platform = await startCloud();
  ({ challenge, verifier } = await pkce());
});
afterAll(() => platform.close());

const startBody = (email: string, extra: Record<string, unknown> = {}) => ({
  email,
  client: 'console',
  redirect_uri: CONSOLE_REDIRECT,
  code_challenge: challenge,
  state: 'console-state',
  ...extra,
});

const start = (email: string, extra: Record<string, unknown> = {}) => call(platform, 'post', '/auth/v1/email/start', { body: startBody(email, extra) });
const verify = (email: string, code: unknown) => call(platform, 'post', '/auth/v1/email/verify', { body: { email, code } });
const wrongDigits = (digits: string) => String((Number(digits) + 1) % 1_000_000).padStart(6, '0');

async function codeFor(email: string): Promise<string> {
  expect((await start(email)).status).toBe(202);
  return (await lastMailTo(platform.outbox, email)).digits!;
}

describe('POST /auth/v1/email/start', () => {
  it('answers 202 {} for an address nobody uses, and mails a six-digit code that says what it is for', async () => {
    const email = newAddress();
    const res = await start(email);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({});
    expect(res.headers['cache-control']).toBe('no-store');
    const mail = await lastMailTo(platform.outbox, email);
    expect(mail.digits).toMatch(/^\d{6}$/);
    expect(mail.from).toMatch(/^"?Platform"? <no-reply@platform\.test>$/);
    expect(mail.subject).toBe(`${mail.digits} is your Platform sign-in code`);
    expect(mail.text).toContain('Your code to sign in to Platform:');
    expect(mail.text).toContain('It works once, for 10 minutes.');
    expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
    // An RFC 5322 message: CRLF line ends, the headers a mail needs, a plain-text body.
    expect(mail.raw).toMatch(/\r\nMessage-ID: <[^>]+>\r\n/);
    expect(mail.raw).toMatch(/\r\nDate: /);
    expect(mail.raw).toMatch(/\r\nContent-Type: text\/plain; charset=utf-8\r\n/);
    expect(mail.raw).not.toMatch(/[^\r]\n/);
  });

  it('compares addresses case-insensitively: the mail goes to the lower-cased address and any case verifies', async () => {
    const res = await start('Mixed.Case@Example.TEST');
    expect(res.status).toBe(202);
    const mail = await lastMailTo(platform.outbox, 'mixed.case@example.test');
    const verified = await verify('MIXED.case@example.test', mail.digits);
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({ code: expect.stringMatching(/^platform_sc_/), state: 'console-state' });
  });

  it.each([
    ['an unregistered redirect_uri', { redirect_uri: 'https://evil.test/callback' }, 'body.redirect_uri'],
    ["a redirect_uri registered for the other client", { client: 'mobile', redirect_uri: CONSOLE_REDIRECT }, 'body.redirect_uri'],
    ['an unknown client', { client: 'desktop' }, 'body.client'],
    ['a malformed email', { email: 'not-an-address' }, 'body.email'],
    ['a code_challenge that is not S256-shaped', { code_challenge: 'short' }, 'body.code_challenge'],
    ['the plain PKCE method', { code_challenge_method: 'plain' }, 'body.code_challenge_method'],
    ['a state over 500 characters', { state: 'x'.repeat(501) }, 'body.state'],
    ['an unknown field', { password: 'x' }, 'body.password'],
    ['a link ticket that was never issued', { link: 'platform_lt_forged' }, 'body.link'],
  ])('refuses %s: 400 invalid_request, and mails nothing', async (_case, extra, field) => {
    const email = newAddress();
    const res = await start(email, extra);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_request', field });
    expect((await outboxMails(platform.outbox)).some((mail) => mail.to === email)).toBe(false);
  });

  it('accepts the mobile app with its private-use redirect URI', async () => {
    const res = await start(newAddress(), { client: 'mobile', redirect_uri: MOBILE_REDIRECT });
    expect(res.status).toBe(202);
  });

  it('mails at most five codes per address per hour: the sixth is 429 slow_down with Retry-After, and the budget comes back an hour after the first', async () => {
    const email = newAddress();
    const first = platform.clock.now().getTime();
    for (let i = 0; i < 5; i++) {
      expect((await start(email)).status).toBe(202);
      platform.clock.advance(60_000);
    }
    const refused = await start(email);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('slow_down');
    expect(Number(refused.headers['retry-after'])).toBe(Math.ceil((first + 3_600_000 - platform.clock.now().getTime()) / 1000));
    expect((await outboxMails(platform.outbox)).filter((mail) => mail.to === email)).toHaveLength(5);
    // Refused requests do not use the budget up further, and a new code never resets it.
    platform.clock.set(first + 3_600_000 - 1);
    expect((await start(email)).status).toBe(429);
    platform.clock.set(first + 3_600_000 + 1);
    expect((await start(email)).status).toBe(202);
    expect((await start(email)).status).toBe(429);
  });

  it('keeps codes only as keyed hashes, and never the address', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    const rows = await platform.dataSource.getRepository(EmailCodeEntity).find();
    const text = JSON.stringify(rows);
    expect(text).not.toContain(email);
    expect(text).not.toContain(`"${digits}"`);
    // Not a plain hash of the digits (a million candidates would undo it in a moment).
    expect(text).not.toContain(createHash('sha256').update(digits).digest('hex'));
    expect(rows.every((row) => /^[0-9a-f]{64}$/.test(row.codeHash))).toBe(true);
  });
});

describe('POST /auth/v1/email/verify', () => {
  it('answers a one-time code and the state; the first sign-in creates the person and their personal organisation', async () => {
    const email = newAddress();
    const signedIn = await emailSignIn(platform, email);
    expect(signedIn.token_type).toBe('Bearer');
    const me = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(signedIn.access_token) });
    expect(me.body).toMatchObject({
      name: email,
      email,
      organisations: [{ name: email, kind: 'personal', plan: 'free', role: 'owner' }],
      signInMethods: [{ provider: 'email', email, emailVerified: true }],
    });
    const organisation = await platform.dataSource.getRepository(OrganisationEntity).findOneByOrFail({ id: signedIn.personalOrganisationId });
    expect(organisation).toMatchObject({ kind: 'personal', plan: 'free' });
    expect(await platform.dataSource.getRepository(MembershipEntity).findBy({ organisationId: organisation.id })).toEqual([
      expect.objectContaining({ personId: signedIn.personId, role: 'owner' }),
    ]);
    // Signing in again is the same person, not a new one.
    const again = await emailSignIn(platform, email.toUpperCase());
    expect(again.personId).toBe(signedIn.personId);
  });

  it('refuses a wrong code with 400 invalid_code, and the right one still works', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    const wrong = await verify(email, wrongDigits(digits));
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_code');
    expect((await verify(email, digits)).status).toBe(200);
  });

  it('allows five tries per code: after five wrong ones even the right code is refused, yet the owner gets a fresh code that works', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    for (let i = 0; i < 5; i++) expect((await verify(email, wrongDigits(digits))).body.error).toBe('invalid_code');
    expect((await verify(email, digits)).body.error).toBe('invalid_code');
    const fresh = await codeFor(email);
    expect((await verify(email, fresh)).status).toBe(200);
  });

  it('works once', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    expect((await verify(email, digits)).status).toBe(200);
    expect((await verify(email, digits)).body.error).toBe('invalid_code');
  });

  it('works 10 minutes', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    platform.clock.advance(600_000);
    expect((await verify(email, digits)).body.error).toBe('invalid_code');
    const fresh = await codeFor(email);
    platform.clock.advance(599_000);
    expect((await verify(email, fresh)).status).toBe(200);
  });

  it('takes only the newest code of an address: asking again replaces the earlier one', async () => {
    const email = newAddress();
    const first = await codeFor(email);
    const second = await codeFor(email);
    if (first !== second) expect((await verify(email, first)).body.error).toBe('invalid_code');
    expect((await verify(email, second)).status).toBe(200);
  });

  it('refuses a code for an address that never asked for one, and malformed requests', async () => {
    expect((await verify(newAddress(), '123456')).body.error).toBe('invalid_code');
    expect((await verify(newAddress(), '12345')).body.error).toBe('invalid_code');
    const malformed = await call(platform, 'post', '/auth/v1/email/verify', { body: { email: newAddress() } });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'invalid_request', field: 'body.code' });
    expect((await verify('nope', '123456')).body.error).toBe('invalid_request');
  });

  it('binds the one-time code to the PKCE challenge and redirect URI of the start', async () => {
    const email = newAddress();
    const digits = await codeFor(email);
    const { body } = await verify(email, digits);
    const other = await pkce();
    const wrongVerifier = await call(platform, 'post', '/auth/v1/token', {
      body: { grant_type: 'authorization_code', code: body.code, code_verifier: other.verifier, redirect_uri: CONSOLE_REDIRECT },
    });
    expect(wrongVerifier.body.error).toBe('invalid_grant');
    const ok = await call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'authorization_code', code: body.code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT } });
    // The first failed exchange did not use the code up.
    expect(ok.status).toBe(200);
  });
});

describe('adding an address with a link ticket', () => {
  it('adds the address to the signed-in person; the ticket works once; the mail says what the code is for', async () => {
    const owner = await emailSignIn(platform, newAddress());
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) });
    expect(ticket.status).toBe(200);
    expect(ticket.body).toEqual({ ticket: expect.stringMatching(/^platform_lt_/), expiresIn: 300 });
    const second = newAddress();
    platform.clock.advance(1000);
    expect((await start(second, { link: ticket.body.ticket })).status).toBe(202);
    const mail = await lastMailTo(platform.outbox, second);
    expect(mail.text).toContain('Your code to add this email address to your Platform account:');
    const verified = await verify(second, mail.digits);
    expect(verified.status).toBe(200);
    // Nothing is added until the owner's session exchanges the code.
    const before = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(owner.access_token) });
    expect(before.body.signInMethods).toHaveLength(1);
    // Single use.
    const again = await start(newAddress(), { link: ticket.body.ticket });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_request', field: 'body.link' });
    // Exchanged with the owner's session, the code adds the address and answers a session of the owner's.
    const token = await call(platform, 'post', '/auth/v1/token', {
      headers: bearer(owner.access_token),
      body: { grant_type: 'authorization_code', code: verified.body.code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT },
    });
    expect(token.status).toBe(200);
    const viaSecond = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(token.body.access_token) });
    expect(viaSecond.body.id).toBe(owner.personId);
    expect(viaSecond.body.signInMethods.map((method: { email: string }) => method.email)).toEqual([expect.any(String), second]);
    // And the address signs the owner in from now on.
    expect((await emailSignIn(platform, second)).personId).toBe(owner.personId);
  });

  it('expires after five minutes', async () => {
    const owner = await emailSignIn(platform, newAddress());
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) });
    platform.clock.advance(300_000);
    expect((await start(newAddress(), { link: ticket.body.ticket })).body.error).toBe('invalid_request');
  });

  it('refuses an address that already signs in to another account: 409 already_linked', async () => {
    const taken = newAddress();
    const other = await emailSignIn(platform, taken);
    const owner = await emailSignIn(platform, newAddress());
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) });
    expect((await start(taken, { link: ticket.body.ticket })).status).toBe(202);
    const refused = await verify(taken, (await lastMailTo(platform.outbox, taken)).digits);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('already_linked');
    const me = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(owner.access_token) });
    expect(me.body.signInMethods).toHaveLength(1);
    const theirs = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(other.access_token) });
    expect(theirs.body.signInMethods).toHaveLength(1);
  });
});

describe('an address another person signs in with through a provider', () => {
  it('cannot be added to someone else: 409 already_linked', async () => {
    const address = newAddress();
    const holder = await platform.services.signIn.accounts.resolvePerson('github', { subject: `gh-${address}`, email: address, emailVerified: true, name: 'Holder' });
    const owner = await emailSignIn(platform, newAddress());
    const ticket = await call(platform, 'post', '/cloud/v1/me/sign-in-methods/link', { headers: bearer(owner.access_token) });
    expect((await start(address, { link: ticket.body.ticket })).status).toBe(202);
    const refused = await verify(address, (await lastMailTo(platform.outbox, address)).digits);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('already_linked');
    // Signing in by emailed code with that address is still the holder.
    expect((await emailSignIn(platform, address)).personId).toBe(holder.personId);
  });
});

describe('the outbox', () => {
  it('holds one readable .eml file per mail, readable by its owner only', async () => {
    const names = (await readdir(platform.outbox)).filter((name) => name.endsWith('.eml'));
    expect(names.length).toBeGreaterThan(10);
    const { mode } = await import('node:fs/promises').then((fs) => fs.stat(join(platform.outbox, names[0]!)));
    expect(mode & 0o077).toBe(0);
    expect(await readFile(join(platform.outbox, names[0]!), 'utf8')).toMatch(/^Auto-Submitted: auto-generated\r\n/);
  });
});
