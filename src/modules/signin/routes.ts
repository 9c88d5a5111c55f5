import type { ErrorCode } from '../../error-codes.js';
import { ApiError, invalidRequest } from '../../errors.js';
import type { RateLimitRule } from '../../http/rate-limit.js';
import { defineRoute, type Reply, type RouteDefinition } from '../../http/route.js';
import { compile, describeError, type Schema } from '../../http/schema.js';
import { oauthError } from '../oauth/errors.js';
import { NO_STORE, noStoreHeader } from '../oauth/token-endpoint.js';
import type { CloudSessions } from './sessions.js';
import type { EmailStartCheck } from './email-start-check.js';
import { IDENTITY_PROVIDERS, type SignInSettings } from './settings.js';
import {
  emailChallengeSchema,
  emailStartSchema,
  emailVerifiedSchema,
  emailVerifySchema,
  providerListSchema,
  sessionTokensSchema,
  startQuerySchema,
  tokenRequestSchema,
} from './schemas.js';
import { bindingForStart, browserBindingOf, flowCookie } from './flow-binding.js';
import type { SignInService } from './service.js';
import { CODE_CHALLENGE, errorRedirect, MAX_STATE_LENGTH, normaliseEmail, RedirectError, type ClientRequest } from './shared.js';

/**
 * Cloud sign-in (spec 4.3; Cloud only). Every operation that can sign someone in is limited per
 * network address (`AUTH_RATE_LIMIT_PER_MINUTE`, the token endpoint `AUTH_TOKEN_RATE_LIMIT_PER_MINUTE`).
 */

export function signInRateLimits(config: Pick<SignInSettings, 'rateLimitPerMinute' | 'tokenRateLimitPerMinute'>) {
  const perMinute = (name: string, limit: number, code?: ErrorCode): RateLimitRule => ({ name, by: 'address', limit, windowMs: 60_000, ...(code ? { code } : {}) });
  return {
    start: perMinute('auth-start-address', config.rateLimitPerMinute),
    callback: perMinute('auth-callback-address', config.rateLimitPerMinute),
    emailStart: perMinute('auth-email-start-address', config.rateLimitPerMinute, 'slow_down'),
    emailVerify: perMinute('auth-email-verify-address', config.rateLimitPerMinute),
    token: perMinute('auth-token-address', config.tokenRateLimitPerMinute),
  };
}

const FORM_OR_JSON = ['application/json', 'application/x-www-form-urlencoded'] as const;

const REDIRECT_HEADERS = {
  Location: { description: 'Where the browser goes next.', schema: { type: 'string' } },
  'Cache-Control': { description: '`no-store`.', schema: { type: 'string' } },
} as const;

const START_HEADERS = {
  ...REDIRECT_HEADERS,
  'Set-Cookie': {
    description:
      'To the provider: the browser binding of the flow, `__Host-platform_flow` (PLATFORM_BASE_URL https; `platform_flow` otherwise), HttpOnly, Secure, ' +
      '`SameSite=Lax`, `Path=/`, for `AUTH_FLOW_TTL_SECONDS`. Only a browser that sends it back finishes the flow at the callback.',
    schema: { type: 'string' },
  },
} as const;

function redirect(to: URL | string, cookie?: string): Reply {
  // The address carries a code: no cache keeps it, no Referer repeats it.
  const headers: Record<string, string> = { Location: typeof to === 'string' ? to : to.href, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' };
  if (cookie !== undefined) headers['Set-Cookie'] = cookie;
  return { status: 302, headers };
}

const one = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Token endpoint bodies fail as OAuth errors (with `error_description`), naming the field. */
function oauthPrecheck(schema: Schema) {
  const validate = compile(schema, 'body');
  return (body: unknown): void => {
    if (validate(body)) return;
    const { field, message } = describeError('body', validate.errors?.[0]);
    throw new ApiError(400, 'invalid_request', message, { oauth: true, extra: { field } });
  };
}

export interface SignInRouteOptions {
  service: SignInService;
  sessions: CloudSessions;
  config: SignInSettings;
  /** `serviceOrigin` (src/http/origin.ts), for the documentation of the callback. */
  origin: string | undefined;
  /** A check `email/start` asks before it mails (email-start-check.ts); none by default. */
  emailStartCheck?: EmailStartCheck | undefined;
}

export function signInRoutes({ service, sessions, config, origin, emailStartCheck }: SignInRouteOptions): RouteDefinition[] {
  const limits = signInRateLimits(config);
  const { providerFlow, emailCodes, codes } = service;
  return [
    defineRoute({
      method: 'get',
      path: '/auth/v1/email/challenge',
      operationId: 'emailSignInChallenge',
      permission: 'public',
      summary: 'What email/start asks before it mails a code',
      description:
        'Off by default: `{"kind":"none"}`, and `POST /auth/v1/email/start` needs no `proof`. With the built-in proof of work ' +
        '(`AUTH_EMAIL_PROOF_OF_WORK_BITS`), a fresh challenge: find a `nonce` such that SHA-256 of `<challenge>:<email>:<nonce>` starts with `bits` zero bits, ' +
        'and send `proof: "<challenge>:<nonce>"` with the address. A deployment may wire a CAPTCHA instead (`kind` names it; its widget makes the challenge). ' +
        'Minting a challenge stores nothing (it carries its own HMAC), so it has no rate limit of its own.',
      tag: 'Cloud sign-in',
      extension: true,
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      database: false,
      schemas: {},
      responses: { 200: { description: 'The check, and its challenge if it makes one.', schema: emailChallengeSchema, headers: noStoreHeader } },
      handler: async () => ({ status: 200, body: emailStartCheck ? { kind: emailStartCheck.kind, ...(await emailStartCheck.challenge()) } : { kind: 'none' }, headers: NO_STORE }),
    }),

    defineRoute({
      method: 'get',
      path: '/auth/v1/providers',
      operationId: 'listSignInProviders',
      permission: 'public',
      summary: 'The ways to sign in',
      description: 'The identity providers this deployment has configured, and `email`, in display order: the buttons a sign-in page shows.',
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      database: false,
      schemas: {},
      responses: { 200: { description: 'Enabled providers and `email`, in display order.', schema: providerListSchema } },
      handler: () => ({ status: 200, body: { providers: providerFlow.providers() }, headers: { 'Cache-Control': 'public, max-age=300' } }),
    }),

    defineRoute({
      method: 'get',
      path: '/auth/v1/start',
      operationId: 'startSignIn',
      permission: 'public',
      summary: 'Sign in through an identity provider (authorization code with PKCE)',
      description:
        'Sends the browser to the provider. After sign-in the service sends the person to `redirect_uri` with a one-time `code` (60 seconds, single use, ' +
        'bound to the client, the redirect URI and the PKCE challenge), the `state` and `iss`; or with `error` (`invalid_request`, `access_denied`, ' +
        '`already_linked`, `temporarily_unavailable`, `server_error`), `error_description`, the `state` and `iss`. ' +
        'An unregistered `redirect_uri` (or a missing or unknown `client`) is answered 400 `invalid_request` here, as JSON; any other bad parameter ' +
        'is answered at the redirect URI. The flow belongs to the browser that opens this address: it gets a binding cookie, and the flow finishes ' +
        'only in a browser that sends it back to the callback (`access_denied` otherwise), so open it in the browser that will receive the callback. ' +
        'With `link` (a ticket from `POST /cloud/v1/me/sign-in-methods/link`, single use) the code sent back adds the provider account to the ticket\'s ' +
        'person only when exchanged with that session\'s access token (see `POST /auth/v1/token`). ' +
        `Rate limited per network address (${limits.start.limit} a minute).`,
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      rateLimits: [limits.start],
      schemas: { query: startQuerySchema },
      responses: {
        302: { description: 'To the provider (with the binding cookie), or back to `redirect_uri` with `error`.', headers: START_HEADERS },
        400: { description: '`redirect_uri` is not registered for `client`.' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ query, req }) => {
        const raw = query as Record<string, unknown>;
        const client = one(raw.client);
        const redirectUri = one(raw.redirect_uri);
        if (!service.isRegistered(client, redirectUri)) {
          throw invalidRequest('redirect_uri must be registered for the client (console or mobile), exactly', { field: 'query.redirect_uri' });
        }
        const stateValue = one(raw.state);
        const state = stateValue !== undefined && stateValue.length <= MAX_STATE_LENGTH ? stateValue : undefined;
        const back = (message: string) => redirect(errorRedirect({ redirectUri: redirectUri as string, state }, new RedirectError('invalid_request', message), service.origin));
        for (const [name, value] of Object.entries(raw)) if (Array.isArray(value)) return back(`${name} is given more than once`);
        if (stateValue !== undefined && stateValue.length > MAX_STATE_LENGTH) return back(`state must be at most ${MAX_STATE_LENGTH} characters`);
        const codeChallenge = one(raw.code_challenge);
        if (codeChallenge === undefined || !CODE_CHALLENGE.test(codeChallenge)) return back('code_challenge must be the base64url SHA-256 of the PKCE verifier (43 characters)');
        if (raw.code_challenge_method !== undefined && raw.code_challenge_method !== 'S256') return back('code_challenge_method must be S256');
        const request: ClientRequest = { client: client, redirectUri: redirectUri as string, codeChallenge, state };
        try {
          // The flow belongs to this browser (flow-binding.ts): only it can finish it at the callback.
          const binding = bindingForStart(req.headers.cookie, service.origin);
          const to = await providerFlow.startProvider(one(raw.provider) ?? '', request, one(raw.link), binding);
          return redirect(to, flowCookie(service.origin, binding, providerFlow.flowTtlSeconds));
        } catch (error) {
          if (error instanceof RedirectError) return redirect(errorRedirect(request, error, service.origin));
          throw error;
        }
      },
    }),

    defineRoute({
      method: 'get',
      path: '/auth/v1/callback/{provider}',
      operationId: 'finishSignIn',
      permission: 'public',
      summary: "The identity provider's answer",
      description:
        `Register \`${origin ?? '<PLATFORM_BASE_URL>'}/auth/v1/callback/<provider>\` as the redirect URI of this service's client at each provider. ` +
        'The provider sends the browser here; the service checks the answer (state, PKCE, for OpenID Connect the ID token and nonce), signs the person in ' +
        'and sends them on to the client\'s `redirect_uri` (see `GET /auth/v1/start`). A sign-in that was not started here, took longer than ' +
        '`AUTH_FLOW_TTL_SECONDS` or was already finished has nowhere safe to go: 400 `invalid_request`. One that reaches another browser than the one ' +
        'that opened the start (no binding cookie, or another) ends there: `error=access_denied` at the client\'s redirect URI, nothing created or changed.',
      tag: 'Cloud sign-in',
      extension: true,
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      rateLimits: [limits.callback],
      schemas: {
        params: {
          type: 'object',
          required: ['provider'],
          properties: { provider: { type: 'string', enum: [...IDENTITY_PROVIDERS], description: 'The provider answering.' } },
          additionalProperties: false,
        },
        query: {
          type: 'object',
          properties: {
            state: { description: 'The state this service sent to the provider.' },
            code: { description: "The provider's authorization code." },
            error: { description: "The provider's error, when it did not sign the person in." },
          },
          additionalProperties: true,
        },
      },
      responses: {
        302: { description: "To the client's `redirect_uri`, with `code` or `error`.", headers: REDIRECT_HEADERS },
        400: { description: 'No sign-in in progress has this state.' },
      },
      errors: { 400: ['invalid_request'] },
      handler: async ({ params, req }) => {
        // The callback URL registered with the provider (PLATFORM_BASE_URL's): only the query is the provider's.
        const query = req.originalUrl.indexOf('?');
        const callbackUrl = new URL(`${providerFlow.callbackUri(params.provider)}${query >= 0 ? req.originalUrl.slice(query) : ''}`);
        const finished = await providerFlow.finishProvider(params.provider, callbackUrl, browserBindingOf(req.headers.cookie, service.origin));
        if (!finished) throw invalidRequest('no sign-in in progress has this state: it was not started here, took too long, or was already finished; start again');
        return redirect(finished.redirectTo);
      },
    }),

    defineRoute({
      method: 'post',
      path: '/auth/v1/email/start',
      operationId: 'startEmailSignIn',
      permission: 'public',
      summary: 'Mail a six-digit sign-in code',
      description:
        'Always 202 `{}` when the request is well-formed, whether or not the address has an account. The code works 10 minutes and five tries; ' +
        'asking again replaces the previous code. At most five codes per address per hour (counted from the codes asked: a new code never resets it), ' +
        `and ${limits.emailStart.limit} requests a minute per network address: 429 \`slow_down\` with \`Retry-After\`. ` +
        'Besides, one address gets at most `AUTH_EMAIL_CODES_PER_DAY` codes a day and the whole service sends at most `AUTH_EMAIL_CODES_PER_MINUTE` a minute: ' +
        '429 `slow_down` with `Retry-After` too. With a check configured (`GET /auth/v1/email/challenge`), a missing or failing `proof` is 400 `invalid_request` ' +
        'naming `body.proof`, before anything else is done. With `link` (a link ticket) the address is added to the signed-in person instead.',
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      rateLimits: [limits.emailStart],
      schemas: { body: emailStartSchema },
      responses: {
        202: { description: 'A code was mailed if the address can receive mail.', schema: { type: 'object', description: 'Empty.', additionalProperties: false, examples: [{}] } },
        400: { description: 'Malformed, `redirect_uri` not registered for the client, or a link ticket that is not valid.' },
        429: { description: 'Too many codes for the address (an hour, a day), for the whole service this minute, or too many requests from the network address (`Retry-After`).' },
      },
      // The budget of codes per address holds whether or not rate limits by network address are on.
      errors: { 400: ['invalid_request'], 429: ['slow_down'] },
      handler: async ({ body }) => {
        if (emailStartCheck && (body.proof === undefined || !(await emailStartCheck.verify(body.proof, normaliseEmail(body.email))))) {
          throw invalidRequest(`body.proof must be a ${emailStartCheck.kind} proof that passes (GET /auth/v1/email/challenge), used once`, { field: 'body.proof' });
        }
        if (!service.isRegistered(body.client, body.redirect_uri)) {
          throw invalidRequest('redirect_uri must be registered for the client, exactly', { field: 'body.redirect_uri' });
        }
        await emailCodes.startEmail(body.email, { client: body.client, redirectUri: body.redirect_uri, codeChallenge: body.code_challenge, state: body.state }, body.link);
        return { status: 202, body: {}, headers: NO_STORE };
      },
    }),

    defineRoute({
      method: 'post',
      path: '/auth/v1/email/verify',
      operationId: 'verifyEmailSignIn',
      permission: 'public',
      summary: 'Exchange the emailed code for a one-time code',
      description:
        'Answers the one-time code to send to `POST /auth/v1/token` with the PKCE verifier and redirect URI of the start. A code allows five tries; ' +
        'a wrong or expired code is 400 `invalid_code` (ask for a new one: wrong guesses never block that). 409 `already_linked` when a link ticket ' +
        `adds an address that already signs in to another account. Rate limited per network address (${limits.emailVerify.limit} a minute).`,
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: 'public',
      rateLimits: [limits.emailVerify],
      schemas: { body: emailVerifySchema },
      responses: {
        200: { description: 'The one-time code and the state.', schema: emailVerifiedSchema, headers: noStoreHeader },
        400: { description: 'Malformed, or the code is wrong, used up or expired.' },
        409: { description: 'The address already signs in to another account.' },
      },
      errors: { 400: ['invalid_code'], 409: ['already_linked'] },
      handler: async ({ body }) => {
        const { code, state } = await emailCodes.verifyEmail(body.email, body.code);
        return { status: 200, body: { code, state }, headers: NO_STORE };
      },
    }),

    defineRoute({
      method: 'post',
      path: '/auth/v1/token',
      operationId: 'exchangeSessionToken',
      permission: { authenticated: 'exchanges a code for tokens: a link flow\'s code with the session\'s own access token, any other code without one (the code decides, RFC 6749)' },
      summary: 'Exchange a one-time code, or refresh a session',
      description:
        '`grant_type=authorization_code` with `code`, `code_verifier`, `redirect_uri` (no client authentication: the code knows its client; `client_id` ' +
        'may be sent and must then name it), or `grant_type=refresh_token` with `refresh_token` and `client_id` (required: the client the session was ' +
        'issued to; another client, or none, is `invalid_grant`). JSON or a form. Access tokens last 15 minutes, refresh tokens 30 days; the refresh token is ' +
        'replaced at every refresh. A replaced refresh token presented again ends the whole session, except within `AUTH_REFRESH_GRACE_SECONDS` ' +
        '(10 s) of its replacement, when it gets the same new pair (two tabs refreshing at once). A code used twice ends the session it started. ' +
        'A link flow\'s code (from a start or an emailed code asked with `link`) is exchanged with `Authorization: Bearer <access token>` of the session ' +
        'that asked for the link ticket: the sign-in method is then added to that person (409 `already_linked` when it signs in to another account) and ' +
        'a new session of theirs answered; exchanged without that session the code is spent for nothing (`invalid_grant`). Any other code needs no token; ' +
        'a token sent must be a valid Cloud session (401 otherwise). ' +
        `Rate limited per network address (${limits.token.limit} a minute).`,
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: ['cloud-session'],
      authOptional: true,
      rateLimits: [limits.token],
      mediaTypes: FORM_OR_JSON,
      precheck: oauthPrecheck(tokenRequestSchema),
      schemas: { body: tokenRequestSchema },
      responses: {
        200: { description: 'The session\'s tokens.', schema: sessionTokensSchema, headers: noStoreHeader },
        400: {
          description:
            'OAuth error (RFC 6749 5.2) with `error_description`: `invalid_request` (a field missing or malformed), `invalid_grant` (code or refresh token wrong, ' +
            'used, expired, issued to another client or redirect URI, PKCE verifier wrong, a refresh without its client, or a link flow\'s code without the ' +
            'session that asked for the link), `unsupported_grant_type`.',
        },
        409: { description: '`already_linked`: the link flow\'s provider account or address already signs in to another account; nothing was added.' },
      },
      errors: { 400: ['invalid_request', 'invalid_grant', 'unsupported_grant_type'], 409: ['already_linked'] },
      handler: async ({ body, principal }) => {
        const field = (name: string): string => {
          const value = (body as Record<string, unknown>)[name];
          if (typeof value !== 'string' || value === '') throw new ApiError(400, 'invalid_request', `body.${name} is required`, { oauth: true, extra: { field: `body.${name}` } });
          return value;
        };
        if (body.grant_type === 'authorization_code') {
          const exchanging = principal?.sessionId !== undefined ? { sessionId: principal.sessionId, personId: principal.personId } : undefined;
          const { tokens } = await codes.exchangeCode(
            { code: field('code'), codeVerifier: field('code_verifier'), redirectUri: field('redirect_uri'), clientId: body.client_id },
            ['console', 'mobile'],
            exchanging,
          );
          return { status: 200, body: tokens, headers: { ...NO_STORE, Pragma: 'no-cache' } };
        }
        if (body.grant_type === 'refresh_token') {
          const tokens = await sessions.refresh(field('refresh_token'), body.client_id);
          return { status: 200, body: tokens, headers: { ...NO_STORE, Pragma: 'no-cache' } };
        }
        throw oauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
      },
    }),

    defineRoute({
      method: 'post',
      path: '/auth/v1/logout',
      operationId: 'signOut',
      permission: { authenticated: 'ends the caller\'s own session' },
      summary: 'End the session',
      description: 'Every token issued in the session (access and refresh, the one presented included) stops working at once.',
      tag: 'Cloud sign-in',
      cloudOnly: true,
      tenant: false,
      auth: ['cloud-session'],
      schemas: {},
      responses: { 204: { description: 'Signed out.' } },
      handler: async ({ principal }) => {
        await sessions.end(principal.sessionId!);
        return { status: 204 };
      },
    }),
  ];
}
