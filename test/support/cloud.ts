import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from '@jest/globals';
import { simpleParser } from 'mailparser';
import * as oauth from 'oauth4webapi';
import type { OrganisationRole } from '../../src/auth/principal.js';
import type { OrganisationRecord } from '../../src/modules/organisation/entities.js';
import { newId } from '../../src/util/ids.js';
import { call, startPlatform, type StartOptions, type TestPlatform } from './platform.js';
import { recordSecretsOf } from './suite-record.js';

/**
 * A Cloud deployment for tests: registered redirect URIs for the console (https, and http on a
 * loopback address) and the mobile app (a private-use scheme), mails in an outbox folder of its
 * own, and helpers that sign people in the way clients do.
 */

export const BASE_URL = 'https://platform.test';
export const CONSOLE_REDIRECT = 'https://console.platform.test/signed-in';
export const LOOPBACK_REDIRECT = 'http://127.0.0.1:53682/callback';
export const MOBILE_REDIRECT = 'com.example.platform:/signed-in';

export interface CloudPlatform extends TestPlatform {
  outbox: string;
}

export async function startCloud(options: StartOptions = {}): Promise<CloudPlatform> {
  const outbox = await mkdtemp(join(tmpdir(), 'platform-outbox-'));
  const platform = await startPlatform({
    ...options,
    env: {
      PLATFORM_DEPLOYMENT: 'cloud',
      PLATFORM_BASE_URL: BASE_URL,
      AUTH_CONSOLE_REDIRECT_URIS: `${CONSOLE_REDIRECT},${LOOPBACK_REDIRECT}`,
      AUTH_MOBILE_REDIRECT_URIS: MOBILE_REDIRECT,
      MAIL_OUTBOX_DIR: outbox,
      RATE_LIMITS_ENABLED: 'false',
      // Suites sign many people in within one minute of the test clock; the cap has its own tests (cloud-mail-caps.test.ts).
      AUTH_EMAIL_CODES_PER_MINUTE: '1000000',
      ...options.env,
    },
  });
  return {
    ...platform,
    outbox,
    close: async () => {
      await platform.close();
      await rm(outbox, { recursive: true, force: true });
    },
  };
}

export interface Mail {
  to: string;
  from: string;
  subject: string;
  text: string;
  /** The six digits of a sign-in mail. */
  digits: string | undefined;
  headers: Map<string, unknown>;
  raw: string;
}

export async function parseMail(raw: Buffer | string): Promise<Mail> {
  const parsed = await simpleParser(raw);
  const text = parsed.text ?? '';
  const to = Array.isArray(parsed.to) ? parsed.to[0]?.text : parsed.to?.text;
  return {
    to: to ?? '',
    from: parsed.from?.text ?? '',
    subject: parsed.subject ?? '',
    text,
    digits: /^ {4}(\d{6})$/m.exec(text)?.[1],
    headers: parsed.headers,
    raw: raw.toString(),
  };
}

/** Every mail of the outbox, oldest first. */
export async function outboxMails(dir: string): Promise<Mail[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.eml')).sort();
  return Promise.all(names.map(async (name) => parseMail(await readFile(join(dir, name)))));
}

/** The newest mail to `to`. */
export async function lastMailTo(dir: string, to: string): Promise<Mail> {
  const mails = (await outboxMails(dir)).filter((mail) => mail.to === to);
  const mail = mails[mails.length - 1];
  if (!mail) throw new Error(`no mail to ${to} in the outbox`);
  return mail;
}

export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

export interface SignedIn {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: string;
  personId: string;
  personalOrganisationId: string;
}

export const bearer = (token: string, organisationId?: string): Record<string, string> => ({
  Authorization: `Bearer ${token}`,
  ...(organisationId ? { 'X-Platform-Organisation': organisationId } : {}),
});

/**
 * An emailed-code sign-in up to the code the client exchanges: start as the console does (`start`
 * adds or replaces fields of the body), read the code from the outbox, verify it. Answers that
 * one-time code and the PKCE verifier that goes with it.
 */
export async function emailedSignInCode(platform: CloudPlatform, email: string, start: Record<string, unknown> = {}): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = await pkce();
  const started = await call(platform, 'post', '/auth/v1/email/start', {
    body: { email, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge, state: 'st', ...start },
  });
  expect(started.status).toBe(202);
  const mail = await lastMailTo(platform.outbox, email.toLowerCase());
  const verified = await call(platform, 'post', '/auth/v1/email/verify', { body: { email, code: mail.digits } });
  expect(verified.status).toBe(200);
  return { code: verified.body.code as string, verifier };
}

/**
 * A person signs in with an emailed code as the console does: the code as `emailedSignInCode`
 * gets it, exchanged with the PKCE verifier. Answers the tokens and who they are. With `link` (a
 * ticket) and `session` (the access token of the session that asked for it), the address is added
 * to that person instead: the exchange carries the session's token.
 */
export async function emailSignIn(platform: CloudPlatform, email: string, options: { link?: string; session?: string } = {}): Promise<SignedIn> {
  const { code, verifier } = await emailedSignInCode(platform, email, options.link ? { link: options.link } : {});
  const token = await call(platform, 'post', '/auth/v1/token', {
    headers: options.session ? bearer(options.session) : {},
    body: { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT },
  });
  expect(token.status).toBe(200);
  const me = await call(platform, 'get', '/cloud/v1/me', { headers: bearer(token.body.access_token) });
  expect(me.status).toBe(200);
  return { ...token.body, personId: me.body.id, personalOrganisationId: me.body.organisations[0].id };
}

/** A team with its people, stored through the service (tests of other modules; the teams API has its own helpers below). */
export async function createTeam(platform: TestPlatform, name: string, members: [personId: string, role: OrganisationRole][]): Promise<OrganisationRecord> {
  const team = await platform.services.organisations.create({ name, kind: 'team' });
  for (const [personId, role] of members) await platform.services.organisations.setRole(team.id, personId, role);
  return team;
}

/**
 * A Cloud session minted by the service directly (no mail, no rate limit): the person who signs
 * in with `email` (made on first sight), with `role` in each of `organisations`. For tests that
 * need a session rather than the way to one (the edge's refusals, the fuzz test).
 */
export async function mintSession(
  platform: TestPlatform,
  email: string,
  organisations: [organisationId: string, role: OrganisationRole][] = [],
): Promise<{ personId: string; access_token: string; refresh_token: string }> {
  const { personId, methodId } = await platform.services.signIn.accounts.resolvePerson('email', { subject: email, email, emailVerified: true, name: email });
  for (const [organisationId, role] of organisations) await platform.services.organisations.setRole(organisationId, personId, role);
  const tokens = await platform.dataSource.transaction((manager) =>
    platform.services.sessions.start(manager, { id: newId('ses'), personId, client: 'console', signInMethodId: methodId }),
  );
  // Handed out without an answer to record them from: no log line may hold them either.
  recordSecretsOf(tokens);
  return { personId, access_token: tokens.access_token, refresh_token: tokens.refresh_token };
}

/** A team built through the API by `owner`: its summary. */
export async function buildTeam(platform: CloudPlatform, owner: SignedIn, name: string): Promise<{ id: string; name: string; kind: string; plan: string; role: string }> {
  const res = await call(platform, 'post', '/cloud/v1/organisations', { headers: bearer(owner.access_token), body: { name } });
  expect(res.status).toBe(201);
  return res.body;
}

/** The token of an invitation link (its last path segment, or what follows `#`). */
export function tokenOf(link: string): string {
  const match = /(platform_iv_[A-Za-z0-9_-]+)$/.exec(link);
  if (!match) throw new Error(`no invitation token in ${link}`);
  return match[1]!;
}

/** `by` invites `email` to the team through the API; answers the invitation's token. */
export async function inviteTo(platform: CloudPlatform, by: SignedIn, teamId: string, email: string, role?: OrganisationRole): Promise<string> {
  const res = await call(platform, 'post', `/cloud/v1/organisations/${teamId}/invitations`, { headers: bearer(by.access_token), body: { email, ...(role ? { role } : {}) } });
  expect(res.status).toBe(201);
  return tokenOf(res.body.link);
}

/** `person` (signed in with `email`) joins the team through an invitation by `by`. */
export async function joinTeam(platform: CloudPlatform, by: SignedIn, teamId: string, person: SignedIn, email: string, role?: OrganisationRole): Promise<void> {
  const token = await inviteTo(platform, by, teamId, email, role);
  const res = await call(platform, 'post', `/cloud/v1/invitations/${token}/accept`, { headers: bearer(person.access_token) });
  expect(res.status).toBe(200);
}
