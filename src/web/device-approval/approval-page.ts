import { actorOf } from '../../audit.js';
import { requestFacts } from '../../http/route.js';
import { inRequestScope } from '../../util/request-scope.js';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { cookieHeader, readCookie as readHeaderCookie } from '../../http/cookies.js';
import { isDatabaseUnavailable, isSchemaMissing, reasonOf } from '../../db/errors.js';
import { ApiError } from '../../errors.js';
import { clientErrorOf } from '../../http/errors.js';
import { requestOrigin } from '../../http/origin.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { safeEqual } from '../../util/secrets.js';
import type { OrganisationRecord } from '../../modules/organisation/entities.js';
import type { OrganisationService } from '../../modules/organisation/service.js';
import { auditDecision, USER_CODE_ADDRESS_RATE_LIMIT, USER_CODE_PERSON_RATE_LIMIT } from '../../modules/devices/approval-routes.js';
import { formatUserCode, normaliseUserCode, type Approver, type DeviceCodeService } from '../../modules/devices/device-code.js';
import { pageHtml, type PageHtml } from './page-html.js';
import { csrfTokenOf, type SignedInSession, type WebSessions } from './page-session.js';
import { isPageNotice, type PageNotice } from './notices.js';
import type { PageLook } from './look.js';
import { sameNetwork } from './network.js';
import type { Clock } from '../../util/clock.js';
import { issuerSettingsOf, SignInFailed, type ApproverSignIn } from './page-sign-in.js';
import { createHash, randomBytes } from 'node:crypto';
import { bindingForStart, flowCookie } from '../../modules/signin/flow-binding.js';
import type { SignInService } from '../../modules/signin/service.js';
import { RedirectError, type ClientRequest } from '../../modules/signin/shared.js';
import { mayApproveKind } from '../../modules/devices/device-code.js';

/**
 * The approval page at `verification_uri` (`/device`): a person signs in, sees what is asking
 * to join, and approves or denies it. Server-rendered HTML with plain forms; no script at all.
 *
 *   GET  /device[?user_code=…]  enter a code / sign in / see the device (claims the code) / what
 *                               became of it
 *   POST /device/sign-in        start sign-in at the organisation's provider (PKCE, state, nonce)
 *   GET  /device/callback       the provider's answer: a short-lived session, then back to /device
 *   POST /device/decision       approve or deny (synchronizer token + Origin check)
 *   POST /device/sign-out       end the session
 *
 * Post, redirect, get: every form a person fills in answers 303 to `/device`, which shows what
 * happened from the page session (the code it is about, a notice shown once) and the stored
 * state of the code, so a reload or Back never posts again and never mails again. Only refusals
 * of a form that no page of this site sent (CSRF, a wrong body) answer the post itself.
 *
 * These are pages, not API operations: they answer HTML, are mounted beside the route registry
 * and stay out of the OpenAPI document (which describes the JSON API; the console's JSON approval
 * operations are there). Every answer is `no-store`, framed by nobody, and under a CSP that lets
 * nothing load but the page's own hashed stylesheet.
 */

/** Each sign-in start stores a row and sends the browser to the provider. */
export const PAGE_SIGN_IN_LIMIT: RateLimitRule = { name: 'device-page-sign-in-address', by: 'address', limit: 30, windowMs: 60_000 };

export interface ApprovalPageOptions {
  deviceCodes: DeviceCodeService;
  organisations: OrganisationService;
  sessions: WebSessions;
  /** Self-hosted: the organisation's provider. */
  signIn: ApproverSignIn | undefined;
  /** Cloud (and only Cloud): the Cloud sign-in flow (any enabled provider, or an emailed code). */
  cloud?: CloudPageOptions | undefined;
  tenancy: RequestHandler;
  rateLimit: (rule: RateLimitRule) => RequestHandler;
  /** The operator's product name, logo and accent (src/web/device-approval/look.ts). */
  look: PageLook;
  /** "Asked 1 minute ago": the server's time. */
  clock: Clock;
}

export interface CloudPageOptions {
  signIn: SignInService;
  /** Emailed codes typed into the page count on the same counter as `POST /auth/v1/email/verify`. */
  codeRateLimit: RateLimitRule;
}

const COOKIE = 'platform_device';
/** `__Host-`: only ever set by this exact origin over https, for the whole origin, never a domain. */
const SECURE_COOKIE = `__Host-${COOKIE}`;

const FORM_BODY_LIMIT = '4kb';

/** A form post of a session that has ended (or never was): carries the code the form was about. */
class SignedOut extends Error {
  constructor(readonly userCode: string | undefined) {
    super('signed out');
  }
}

class PageAnswer extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super('page answer');
  }
}

const stop = (status: number, body: string): PageAnswer => new PageAnswer(status, body);

function single(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function readCookie(req: Request, name: string): string | undefined {
  return readHeaderCookie(req.headers.cookie, name);
}

function runMiddleware(handler: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    void handler(req, res, (error?: unknown) => (error ? reject(error) : resolve()));
  });
}

export function approvalPage(options: ApprovalPageOptions): Router {
  const { deviceCodes, organisations, sessions, signIn } = options;
  const { cloud } = options;
  const views = pageHtml(options.look);
  const { messagePage, entryPage, signInPage, cloudSignInPage, emailCodePage, devicePage, outcomePage } = views;
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: FORM_BODY_LIMIT, parameterLimit: 10 });

  // The trusted origin (src/http/origin.ts): the redirect URI, the same-origin checks and the
  // cookie's `__Host-`/Secure all follow it.
  const secureRequest = (req: Request): boolean => requestOrigin(req).scheme === 'https';
  const originOf = (req: Request): string => requestOrigin(req).origin;
  const cookieName = (req: Request): string => (secureRequest(req) ? SECURE_COOKIE : COOKIE);

  function setCookie(req: Request, res: Response, value: string, maxAgeSeconds: number): void {
    res.append('Set-Cookie', cookieHeader(cookieName(req), value, { maxAgeSeconds, secure: secureRequest(req), sameSite: 'Lax' }));
  }

  function clearCookie(req: Request, res: Response): void {
    setCookie(req, res, '', 0);
  }

  function send(res: Response, status: number, body: string, formTargets: readonly string[] = []): void {
    res
      .status(status)
      .set({
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Security-Policy': views.contentSecurityPolicy(formTargets),
        'Cache-Control': 'no-store',
        // Form posts carry a real Origin (the CSRF check reads it; `no-referrer` would make it
        // `null`), and no Referer ever holds more than the origin: a user code in this page's
        // address reaches neither the provider nor the logs.
        'Referrer-Policy': 'strict-origin',
        'X-Frame-Options': 'DENY',
      })
      .send(body);
  }

  /** Form posts must come from a page of this origin: Fetch Metadata, then Origin, then Referer. */
  function requireSameOrigin(req: Request): void {
    const origin = originOf(req);
    const site = req.get('sec-fetch-site');
    const sentOrigin = req.get('origin');
    const referer = req.get('referer');
    let same: boolean;
    if (site !== undefined && site !== 'same-origin') same = false;
    else if (sentOrigin !== undefined) same = sentOrigin === origin;
    else if (referer !== undefined) same = referer === origin || referer.startsWith(`${origin}/`);
    else same = false;
    if (!same) {
      throw stop(403, messagePage({ title: 'Request refused', message: 'This form was not sent from this site. Open the page again and use its buttons.', next: 'start-again' }));
    }
  }

  function requireFormBody(req: Request): Record<string, unknown> {
    if (!req.is('application/x-www-form-urlencoded')) {
      throw stop(415, messagePage({ title: 'Request refused', message: 'This address only takes the forms of the page.', next: 'start-again' }));
    }
    return (req.body ?? {}) as Record<string, unknown>;
  }

  function tenantOf(req: Request): OrganisationRecord {
    const organisation = req.context.tenant;
    if (!organisation) throw new Error('the approval page runs after tenancy');
    return organisation;
  }

  /** Self-hosted: the organisation's provider settings. */
  function requireSignIn(req: Request): { signIn: ApproverSignIn; organisation: OrganisationRecord } {
    // Self-hosted always has one; Cloud pages take the Cloud handlers below.
    if (!signIn) throw new Error('the approval page has no sign-in');
    const organisation = tenantOf(req);
    if (!issuerSettingsOf(organisation)) {
      throw stop(
        503,
        messagePage({ title: 'Sign-in is not set up', message: 'This organisation has not connected its identity provider yet. Ask an administrator.' }),
      );
    }
    return { signIn, organisation };
  }

  /** The signed-in session of the cookie, and the person as an approver (their role now). */
  async function currentSession(req: Request, organisation: OrganisationRecord) {
    const secret = readCookie(req, cookieName(req));
    if (!secret) return undefined;
    const session = await sessions.find(secret, organisation.id);
    if (!session) return undefined;
    const role = await organisations.roleOf(organisation.id, session.personId);
    // No longer a member: the session is worth nothing.
    if (!role) return undefined;
    const approver: Approver = { personId: session.personId, organisationId: organisation.id, role };
    return { secret, session, approver, csrf: csrfTokenOf(secret), signedIn: { name: session.personName, csrf: csrfTokenOf(secret) } };
  }

  /**
   * Look-ups and decisions count against the address and the person, on the same counters as
   * the console's JSON approval operations: a code is guessed once, wherever it is tried.
   */
  async function limitLookUps(req: Request, res: Response, approver: Approver, counted = true): Promise<void> {
    if (counted) await runMiddleware(options.rateLimit(USER_CODE_ADDRESS_RATE_LIMIT), req, res);
    req.context.principal = {
      kind: 'person',
      organisationId: approver.organisationId,
      personId: approver.personId,
      role: approver.role,
      deviceId: undefined,
      scopes: [],
    };
    if (counted) await runMiddleware(options.rateLimit(USER_CODE_PERSON_RATE_LIMIT), req, res);
  }

  /**
   * A code the service refuses to show: what became of it (decided, by this person or another;
   * expired; unknown or another organisation's), or not this person's to decide.
   */
  async function refusal(error: unknown, userCode: string, approver: Approver, signedIn: { name: string; csrf: string }): Promise<unknown> {
    if (error instanceof ApiError && error.status === 404) {
      const { status, body } = outcomePage(await deviceCodes.outcomeOf(userCode, approver), signedIn);
      return stop(status, body);
    }
    if (error instanceof ApiError && error.status === 403) {
      return stop(403, messagePage({ title: 'You cannot decide this request', message: `${capitalise(error.message)}.`, next: 'enter-code', signedIn }));
    }
    return error;
  }

  function codeFrom(raw: string | undefined, signedIn?: { name: string; csrf: string }): string | undefined {
    if (raw === undefined || raw.trim() === '') return undefined;
    const code = normaliseUserCode(raw);
    if (!code) {
      throw stop(400, entryPage({ error: 'That is not a device code. It has eight letters, like BCDF-GHJK.', value: raw.slice(0, 20), signedIn }));
    }
    return formatUserCode(code);
  }

  type Current = { secret: string; session: SignedInSession; approver: Approver; signedIn: { name: string; csrf: string } };

  /**
   * Looks the code up (claiming it) for the signed-in person, on the look-up counters. The session
   * remembers the code (so that a reload, or signing in again after the session ran out, comes
   * back to it) and forgets the notice it has now shown.
   */
  async function lookUpFor(req: Request, res: Response, current: Current, userCode: string) {
    // The code the session already holds was counted when it was typed: reloading it guesses nothing.
    await limitLookUps(req, res, current.approver, current.session.userCode !== userCode);
    if (current.session.userCode !== userCode || current.session.notice) {
      await sessions.remember(current.secret, current.session, { userCode, notice: undefined });
    }
    try {
      return await deviceCodes.lookUp(userCode, current.approver);
    } catch (error) {
      throw await refusal(error, userCode, current.approver, current.signedIn);
    }
  }

  /** A notice named in the address (set by a redirect of this page, when there is no session to hold it). */
  function noticeOf(req: Request): PageNotice | undefined {
    const notice = single(req.query.notice);
    return isPageNotice(notice) ? notice : undefined;
  }

  /** Back to the page, which shows what happened (post, redirect, get). */
  function seeThePage(res: Response, query: Record<string, string | undefined> = {}): void {
    const search = new URLSearchParams(Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'strict-origin' }).redirect(303, search ? `/device?${search}` : '/device');
  }

  /** A browser whose session ran out: the code it was about, so that signing in again continues with it. */
  async function lapsedCode(req: Request, organisationId: string | null): Promise<string | undefined> {
    const secret = readCookie(req, cookieName(req));
    return secret ? sessions.lapsedCode(secret, organisationId) : undefined;
  }

  // GET /device ---------------------------------------------------------------------------------
  async function show(req: Request, res: Response): Promise<void> {
    const { signIn, organisation } = requireSignIn(req);
    const current = await currentSession(req, organisation);
    const fromQuery = codeFrom(single(req.query.user_code), current?.signedIn);
    const another = single(req.query.another) !== undefined;
    if (!current) {
      const lapsed = another ? undefined : await lapsedCode(req, organisation.id);
      const userCode = fromQuery ?? lapsed;
      const notice = noticeOf(req) ?? (lapsed ? 'session-ended' : undefined);
      if (!userCode) return send(res, 200, entryPage({ notice }));
      // Nothing about a code is looked up before sign-in: the page cannot be used to probe codes.
      const formTargets = await signIn.formTargets(organisation);
      return send(res, 200, signInPage({ userCode, organisationName: organisation.name, notice }), formTargets);
    }
    const userCode = fromQuery ?? (another ? undefined : current.session.userCode);
    if (!userCode) return send(res, 200, entryPage({ signedIn: current.signedIn }));
    const device = await lookUpFor(req, res, current, userCode);
    send(
      res,
      200,
      devicePage(device, {
        csrf: current.csrf,
        signedIn: current.signedIn,
        organisationName: organisation.name,
        now: options.clock.now(),
        otherNetwork: !sameNetwork(device.requesterAddress, req.ip),
        notice: fromQuery ? undefined : current.session.notice,
      }),
    );
  }

  // POST /device/sign-in ------------------------------------------------------------------------
  async function startSignIn(req: Request, res: Response): Promise<void> {
    requireSameOrigin(req);
    const body = requireFormBody(req);
    const { signIn, organisation } = requireSignIn(req);
    const userCode = codeFrom(single(body.user_code));
    const previous = readCookie(req, cookieName(req));
    if (previous) await sessions.end(previous);
    const started = await signIn.start(organisation, `${originOf(req)}/device/callback`);
    const { secret, maxAgeSeconds } = await sessions.beginSignIn(organisation.id, started.state, { ...started.checks, userCode });
    setCookie(req, res, secret, maxAgeSeconds);
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'strict-origin' }).redirect(303, started.redirectTo.href);
  }

  // GET /device/callback ------------------------------------------------------------------------
  async function finishSignIn(req: Request, res: Response): Promise<void> {
    const { signIn, organisation } = requireSignIn(req);
    const secret = readCookie(req, cookieName(req));
    const state = single(req.query.state);
    const pending = secret && state ? await sessions.consumeSignIn(secret, organisation.id, state) : undefined;
    if (!pending) {
      throw stop(
        400,
        messagePage({
          title: 'Sign-in could not be completed',
          message: 'This sign-in was not started in this browser, took too long, or was already used. Start again.',
          next: 'start-again',
        }),
      );
    }
    clearCookie(req, res);
    const callbackUrl = new URL(req.originalUrl, originOf(req));
    const person = await signIn.finish(organisation, callbackUrl, { state: state as string, ...pending }, req);
    const session = await sessions.create(organisation.id, person.personId, { personName: person.displayName, userCode: pending.userCode });
    res.removeHeader('Set-Cookie');
    setCookie(req, res, session.secret, session.maxAgeSeconds);
    // The code travels in the session, not in the address.
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'strict-origin' }).redirect(303, '/device');
  }

  /** A form post of a signed-in session: same origin, and the session's synchronizer token. */
  async function signedInPost(req: Request) {
    requireSameOrigin(req);
    const body = requireFormBody(req);
    const current = cloud ? await currentCloudSession(req) : await currentSession(req, requireSignIn(req).organisation);
    if (!current) throw new SignedOut(single(body.user_code));
    const csrf = single(body.csrf);
    if (!csrf || !safeEqual(csrf, current.csrf)) {
      throw stop(403, messagePage({ title: 'Request refused', message: 'This form is out of date. Open the page again and use its buttons.', next: 'start-again', signedIn: current.signedIn }));
    }
    return { body, current };
  }

  // POST /device/decision -----------------------------------------------------------------------
  async function decide(req: Request, res: Response): Promise<void> {
    let posted;
    try {
      posted = await signedInPost(req);
    } catch (error) {
      // The session ran out under the page: back to sign-in, with the code, and nothing decided.
      if (!(error instanceof SignedOut)) throw error;
      const userCode = error.userCode !== undefined ? normaliseUserCode(error.userCode) : undefined;
      return seeThePage(res, { user_code: userCode ? formatUserCode(userCode) : undefined, notice: 'session-ended' });
    }
    const { body, current } = posted;
    const decision = single(body.decision);
    const userCode = codeFrom(single(body.user_code), current.signedIn);
    if ((decision !== 'approve' && decision !== 'deny') || !userCode) {
      throw stop(400, messagePage({ title: 'Request refused', message: 'Choose Approve or Deny on the page.', next: 'enter-code', signedIn: current.signedIn }));
    }
    await limitLookUps(req, res, current.approver, current.session.userCode !== userCode);
    // From here on the page shows this code, whatever happens to it.
    const again = async (notice: PageNotice | undefined) => {
      await sessions.remember(current.secret, current.session, { userCode, notice });
      seeThePage(res);
    };
    let device;
    try {
      device = await deviceCodes.lookUp(userCode, current.approver);
    } catch (error) {
      // Decided, expired or unknown: the page says which. Not this person's: said here.
      if (error instanceof ApiError && error.status === 404) return again(undefined);
      throw await refusal(error, userCode, current.approver, current.signedIn);
    }
    // The phishing cue, enforced here and not only on the page (src/web/device-approval/network.ts).
    if (decision === 'approve' && !sameNetwork(device.requesterAddress, req.ip) && single(body.confirm_own_device) !== 'yes') {
      return again('confirm-own-device');
    }
    let approver = current.approver;
    if (cloud && decision === 'approve') {
      const organisationId = single(body.organisation);
      const membership = organisationId ? await organisations.membershipIn(current.approver.personId, organisationId) : undefined;
      if (!membership) return again('choose-organisation');
      approver = { personId: current.approver.personId, organisationId: membership.organisation.id, role: membership.role };
    }
    try {
      // The page's own request: its id, address and user agent go with the audit row.
      device = await inRequestScope(requestFacts(req), () => deviceCodes.decide(userCode, approver, decision, actorOf(req.context.principal)));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return again(undefined);
      throw await refusal(error, userCode, approver, current.signedIn);
    }
    // limitLookUps named the signed-in person as the request's principal.
    auditDecision(req.log, req.context.principal, device, decision === 'approve' ? 'approved' : 'denied');
    await again(undefined);
  }

  // POST /device/sign-out -----------------------------------------------------------------------
  async function signOut(req: Request, res: Response): Promise<void> {
    let posted;
    try {
      posted = await signedInPost(req);
    } catch (error) {
      // Signed out already (the session ran out): what the person asked for.
      if (!(error instanceof SignedOut)) throw error;
      clearCookie(req, res);
      return seeThePage(res, { notice: 'signed-out' });
    }
    const { current } = posted;
    await sessions.end(current.secret);
    clearCookie(req, res);
    seeThePage(res, { notice: 'signed-out' });
  }


  // Cloud ---------------------------------------------------------------------------------------
  // The page is a client of the Cloud sign-in flow (client `device-page`, redirect URI
  // `<PLATFORM_BASE_URL>/device/callback`): the person signs in with any enabled provider or an
  // emailed code, and the page redeems the one-time code itself with its PKCE verifier. A device
  // code belongs to no organisation until approved: the person picks one of theirs where they may
  // approve this kind of device.

  function requireCloud(): CloudPageOptions {
    if (!cloud) throw new Error('Cloud page handler on a self-hosted deployment');
    return cloud;
  }

  /** The signed-in person of the cookie; they look codes up as the owner of their personal organisation. */
  async function currentCloudSession(req: Request) {
    const secret = readCookie(req, cookieName(req));
    if (!secret) return undefined;
    const session = await sessions.find(secret, null);
    if (!session) return undefined;
    const memberships = await organisations.membershipsOf(session.personId);
    const personal = memberships.find((entry) => entry.organisation.kind === 'personal');
    if (!personal) return undefined;
    const approver: Approver = { personId: session.personId, organisationId: personal.organisation.id, role: personal.role };
    const signedIn = { name: session.personName, csrf: csrfTokenOf(secret) };
    return { secret, session, approver, csrf: signedIn.csrf, signedIn, memberships };
  }

  /** Origins the sign-in forms may send the browser to: the enabled providers' sign-in pages. */
  async function providerOrigins(signInService: SignInService): Promise<string[]> {
    const origins: string[] = [];
    for (const { id } of signInService.providerFlow.providers()) {
      const provider = signInService.providerFlow.provider(id);
      if (provider) origins.push(await provider.authorizationOrigin().catch(() => ''));
    }
    return [...new Set(origins.filter(Boolean))];
  }

  async function showCloud(req: Request, res: Response): Promise<void> {
    const { signIn: signInService } = requireCloud();
    const current = await currentCloudSession(req);
    const fromQuery = codeFrom(single(req.query.user_code), current?.signedIn);
    const another = single(req.query.another) !== undefined;
    if (!current) {
      const secret = readCookie(req, cookieName(req));
      const pending = secret ? await sessions.pendingSignIn(secret) : undefined;
      const startAgain = single(req.query.start) === 'again';
      // An emailed code on its way: the page asks for it (a reload mails nothing).
      if (secret && pending?.email && !fromQuery && !startAgain && !another) {
        if (pending.notice) await sessions.updateSignIn(secret, { ...pending, notice: undefined });
        const query = new URLSearchParams({ start: 'again', ...(pending.userCode ? { user_code: pending.userCode } : {}) });
        return send(res, 200, emailCodePage({ email: pending.email, notice: pending.notice, startAgain: `/device?${query}` }));
      }
      const lapsed = another ? undefined : await lapsedCode(req, null);
      const userCode = fromQuery ?? lapsed;
      const notice = noticeOf(req) ?? (lapsed && !startAgain ? 'session-ended' : undefined);
      if (!userCode && notice !== 'bad-email') return send(res, 200, entryPage({ notice }));
      return send(res, 200, cloudSignInPage({ userCode, providers: signInService.providerFlow.providers(), notice }), await providerOrigins(signInService));
    }
    const userCode = fromQuery ?? (another ? undefined : current.session.userCode);
    if (!userCode) return send(res, 200, entryPage({ signedIn: current.signedIn }));
    const device = await lookUpFor(req, res, current, userCode);
    const choices = current.memberships
      .filter((entry) => mayApproveKind(device.kind, { personId: current.session.personId, organisationId: entry.organisation.id, role: entry.role }))
      .map((entry) => ({ id: entry.organisation.id, name: entry.organisation.kind === 'personal' ? `${entry.organisation.name} (personal)` : entry.organisation.name }));
    send(
      res,
      200,
      devicePage(device, {
        csrf: current.csrf,
        signedIn: current.signedIn,
        organisationName: 'the organisation you choose',
        choices,
        now: options.clock.now(),
        otherNetwork: !sameNetwork(device.requesterAddress, req.ip),
        notice: fromQuery ? undefined : current.session.notice,
      }),
    );
  }

  /** A new PKCE pair and state for one sign-in of the page. */
  function pageRequest(signInService: SignInService): { request: ClientRequest; codeVerifier: string; state: string } {
    const codeVerifier = randomBytes(32).toString('base64url');
    const state = randomBytes(24).toString('base64url');
    const codeChallenge = createHash('sha256').update(codeVerifier).digest('base64url');
    return { request: { client: 'device-page', redirectUri: signInService.devicePageRedirectUri, codeChallenge, state }, codeVerifier, state };
  }

  async function startCloudSignIn(req: Request, res: Response): Promise<void> {
    requireSameOrigin(req);
    const body = requireFormBody(req);
    const { signIn: signInService } = requireCloud();
    const userCode = codeFrom(single(body.user_code));
    const provider = single(body.provider) ?? '';
    const previous = readCookie(req, cookieName(req));
    if (previous) await sessions.end(previous);
    const { request, codeVerifier, state } = pageRequest(signInService);
    if (provider === 'email') {
      const email = (single(body.email) ?? '').trim();
      // The address stays out of the redirect (it would be in access logs); the code may be there.
      const badEmail = () => seeThePage(res, { user_code: userCode, notice: 'bad-email' });
      if (previous) clearCookie(req, res);
      if (!/^[^\s@]{1,64}@[^\s@]{1,255}$/.test(email)) return badEmail();
      try {
        await signInService.emailCodes.startEmail(email, request, undefined);
      } catch (error) {
        if (error instanceof ApiError && error.status === 429) throw error;
        return badEmail();
      }
      const begun = await sessions.beginSignIn(null, state, { codeVerifier, nonce: '', userCode, email });
      res.removeHeader('Set-Cookie');
      setCookie(req, res, begun.secret, begun.maxAgeSeconds);
      // The code page is a GET of /device: a reload shows it again and mails nothing.
      return seeThePage(res);
    }
    let redirectTo: URL;
    // The provider flow belongs to this browser like any other (signin/flow-binding.ts).
    const binding = bindingForStart(req.headers.cookie, signInService.origin);
    try {
      redirectTo = await signInService.providerFlow.startProvider(provider, request, undefined, binding);
    } catch (error) {
      if (error instanceof RedirectError) {
        throw stop(error.code === 'temporarily_unavailable' ? 502 : 400, messagePage({ title: 'Sign-in is not available', message: `${capitalise(error.message)}.`, next: 'start-again' }));
      }
      throw error;
    }
    const begun = await sessions.beginSignIn(null, state, { codeVerifier, nonce: '', userCode });
    setCookie(req, res, begun.secret, begun.maxAgeSeconds);
    res.append('Set-Cookie', flowCookie(signInService.origin, binding, signInService.providerFlow.flowTtlSeconds));
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'strict-origin' }).redirect(303, redirectTo.href);
  }

  /** The one-time code of a finished sign-in, redeemed by the page: a session for the person. */
  async function signedInAs(req: Request, res: Response, oneTimeCode: string, pending: { codeVerifier: string; userCode: string | undefined }): Promise<void> {
    const { signIn: signInService } = requireCloud();
    const personId = await signInService.codes.redeemForPage({ code: oneTimeCode, codeVerifier: pending.codeVerifier, redirectUri: signInService.devicePageRedirectUri });
    const person = await organisations.findPerson(personId);
    if (!person) throw stop(400, messagePage({ title: 'Sign-in could not be completed', message: 'This account no longer exists.', next: 'start-again' }));
    const session = await sessions.create(null, personId, { personName: person.name, userCode: pending.userCode });
    res.removeHeader('Set-Cookie');
    setCookie(req, res, session.secret, session.maxAgeSeconds);
    res.set({ 'Cache-Control': 'no-store', 'Referrer-Policy': 'strict-origin' }).redirect(303, '/device');
  }

  const signInLost = () =>
    stop(
      400,
      messagePage({
        title: 'Sign-in could not be completed',
        message: 'This sign-in was not started in this browser, took too long, or was already used. Start again.',
        next: 'start-again',
      }),
    );

  async function finishCloudSignIn(req: Request, res: Response): Promise<void> {
    const secret = readCookie(req, cookieName(req));
    const state = single(req.query.state);
    const pending = secret && state ? await sessions.consumeSignIn(secret, null, state) : undefined;
    if (!pending) throw signInLost();
    clearCookie(req, res);
    const error = single(req.query.error);
    const code = single(req.query.code);
    if (error !== undefined || code === undefined) {
      const cancelled = error === 'access_denied';
      throw stop(cancelled ? 403 : 502, messagePage({ title: 'Sign-in failed', message: cancelled ? 'Sign-in was cancelled or refused at the provider.' : 'The provider did not sign you in. Start again.', next: 'start-again' }));
    }
    await signedInAs(req, res, code, pending);
  }

  async function verifyCloudCode(req: Request, res: Response): Promise<void> {
    requireSameOrigin(req);
    const body = requireFormBody(req);
    const { signIn: signInService } = requireCloud();
    const secret = readCookie(req, cookieName(req));
    const pending = secret ? await sessions.pendingSignIn(secret) : undefined;
    if (!secret || !pending?.email) throw signInLost();
    const digits = (single(body.code) ?? '').replace(/\s/g, '');
    let verified;
    try {
      verified = await signInService.emailCodes.verifyEmail(pending.email, digits);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'invalid_code') {
        await sessions.updateSignIn(secret, { ...pending, notice: 'wrong-email-code' });
        return seeThePage(res);
      }
      throw error;
    }
    const consumed = await sessions.consumeSignIn(secret, null, verified.state);
    if (!consumed) throw signInLost();
    clearCookie(req, res);
    await signedInAs(req, res, verified.code, consumed);
  }

  const page =
    (handler: (req: Request, res: Response) => Promise<void>): RequestHandler =>
    (req, res, next) => {
      handler(req, res).catch(next);
    };

  router.get('/device', options.tenancy, page(cloud ? showCloud : show));
  router.post('/device/sign-in', options.rateLimit(PAGE_SIGN_IN_LIMIT), options.tenancy, form, page(cloud ? startCloudSignIn : startSignIn));
  router.get('/device/callback', options.tenancy, page(cloud ? finishCloudSignIn : finishSignIn));
  if (cloud) router.post('/device/email-code', options.rateLimit(cloud.codeRateLimit), form, page(verifyCloudCode));
  router.post('/device/decision', options.tenancy, form, page(decide));
  router.post('/device/sign-out', options.tenancy, form, page(signOut));
  // Any other method on a page's address: 405 with what it takes (RFC 9110 15.5.6).
  const PAGE_METHODS: Record<string, string> = {
    '/device': 'GET, HEAD',
    '/device/sign-in': 'POST',
    '/device/callback': 'GET, HEAD',
    '/device/decision': 'POST',
    '/device/sign-out': 'POST',
  };
  for (const [path, allow] of Object.entries(PAGE_METHODS)) {
    router.all(path, (_req: Request, res: Response) => {
      res.set('Allow', allow);
      send(res, 405, messagePage({ title: 'Request refused', message: 'This address does not take this kind of request.', next: 'start-again' }));
    });
  }
  router.use('/device', pageErrors(send, views));
  return router;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

type Send = (res: Response, status: number, body: string, formTargets?: readonly string[]) => void;

/** Everything that goes wrong under /device is a page, never the API's JSON error body. */
function pageErrors(send: Send, { messagePage }: PageHtml) {
  return (error: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(error);
    if (error instanceof PageAnswer) return send(res, error.status, error.body);
    if (error instanceof SignInFailed) {
      const title = error.status === 502 ? 'Sign-in is not available' : 'Sign-in failed';
      return send(res, error.status, messagePage({ title, message: `${capitalise(error.message)}.`, next: 'start-again' }));
    }
    // The API's refusals, and any error carrying a 4xx status (a form that cannot be read).
    const refused = clientErrorOf(error);
    if (refused) {
      if (refused.code === 'unknown_tenant') {
        return send(res, 404, messagePage({ title: 'Nothing here', message: 'No organisation is served at this address.' }));
      }
      res.set(refused.headers);
      if (refused.status === 429) {
        return send(res, 429, messagePage({ title: 'Too many attempts', message: `Too many codes were tried. ${capitalise(refused.message.replace(/^too many requests; /, ''))}.` }));
      }
      if (refused.status === 413) return send(res, 413, messagePage({ title: 'Request refused', message: 'The form was too large.', next: 'start-again' }));
      return send(res, refused.status, messagePage({ title: 'Request refused', message: `${capitalise(refused.message)}.`, next: 'start-again' }));
    }
    // The database away, or its schema older than this build (migrations pending): not a bug of
    // the page, a wait (as the API's 503 `unavailable`).
    const outage = isDatabaseUnavailable(error);
    if (outage || isSchemaMissing(error)) {
      req.log?.warn({ dependency: 'database', requestId: req.context?.requestId, ...reasonOf(error) }, outage ? 'database not reachable; page refused' : 'database schema older than this build; page refused');
      res.set('Retry-After', outage ? '1' : '5');
      return send(res, 503, messagePage({ title: 'Not available just now', message: 'The service cannot answer just now. Please try again in a moment.' }));
    }
    req.log?.error({ err: error, requestId: req.context?.requestId }, 'approval page failed');
    send(res, 500, messagePage({ title: 'Something went wrong', message: 'Something went wrong on our side. Please try again.', requestId: req.context?.requestId }));
  };
}
