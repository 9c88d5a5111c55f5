import { EXAMPLE } from '../../http/examples.js';
import { named } from '../../http/schema.js';

/** The console's registered redirect URI, and a one-time sign-in code, in the examples. */
const EXAMPLE_CONSOLE_REDIRECT = 'https://console.platform.example/signed-in';
const EXAMPLE_SIGN_IN_CODE = 'platform_sc_Vb6nM2qW8eR4tY0uI5oP1aS7dF3gH9jK2lZ6xC4vB8n';

const PROVIDER_IDS = ['google', 'microsoft', 'github', 'facebook', 'email'] as const;

export const providerListSchema = named('SignInProviders', {
  type: 'object',
  description: 'The ways to sign in, in display order (spec 4.3).',
  required: ['providers'],
  properties: {
    providers: {
      type: 'array',
      description: 'The enabled identity providers and `email`, in the configured display order.',
      items: {
        type: 'object',
        description: 'A way to sign in.',
        required: ['id', 'label'],
        properties: {
          id: { type: 'string', enum: [...PROVIDER_IDS], description: 'The value of `provider` at `GET /auth/v1/start`, or `email` for emailed codes.' },
          label: { type: 'string', description: 'What to show on the button.' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
  examples: [{ providers: [{ id: 'google', label: 'Continue with Google' }, { id: 'github', label: 'Continue with GitHub' }, { id: 'email', label: 'Continue with email' }] }],
} as const);

/**
 * The query of `GET /auth/v1/start`. Values are checked by the handler, not by the schema: a
 * bad value with a registered `redirect_uri` is answered at the client's redirect URI
 * (RFC 6749 4.1.2.1), not with JSON.
 */
export const startQuerySchema = {
  type: 'object',
  properties: {
    provider: { description: '`google`, `microsoft`, `github` or `facebook` (one of the enabled providers; see `GET /auth/v1/providers`). Required.' },
    client: { description: '`console` or `mobile`. Required.' },
    redirect_uri: { description: 'Where the person is sent back; must be registered for the client, exactly (`AUTH_CONSOLE_REDIRECT_URIS`, `AUTH_MOBILE_REDIRECT_URIS`). Required.' },
    code_challenge: { description: 'PKCE challenge: base64url SHA-256 of the verifier, 43 characters. Required.' },
    code_challenge_method: { description: '`S256` (the default; nothing else is accepted).' },
    state: { description: 'At most 500 characters; returned unchanged.' },
    link: { description: 'A link ticket (`POST /cloud/v1/me/sign-in-methods/link`): adds this provider to the signed-in person instead of signing in.' },
  },
  additionalProperties: true,
} as const;

const email = { type: 'string', format: 'email', maxLength: 320, description: 'The email address (compared case-insensitively).' } as const;

export const emailStartSchema = named('EmailSignInStart', {
  type: 'object',
  description: 'Asks for a six-digit code by email (spec 4.3).',
  required: ['email', 'client', 'redirect_uri', 'code_challenge'],
  properties: {
    email,
    client: { type: 'string', enum: ['console', 'mobile'], description: 'The client asking.' },
    redirect_uri: { type: 'string', maxLength: 2000, description: 'A redirect URI registered for the client, exactly; the one-time code is bound to it.' },
    code_challenge: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$', description: 'PKCE challenge (base64url SHA-256 of the verifier).' },
    code_challenge_method: { type: 'string', enum: ['S256'], description: '`S256` (the default).' },
    state: { type: 'string', maxLength: 500, description: 'Returned unchanged by `POST /auth/v1/email/verify`.' },
    link: { type: 'string', maxLength: 200, description: 'A link ticket: the address is added to the signed-in person instead of signing in.' },
    proof: {
      type: 'string',
      maxLength: 2000,
      description: 'What the deployment\'s check asks for (`GET /auth/v1/email/challenge`): the solved proof of work `<challenge>:<nonce>`, or a CAPTCHA token. Ignored when no check is configured (the default).',
    },
  },
  additionalProperties: false,
  examples: [
    {
      email: EXAMPLE.email,
      client: 'console',
      redirect_uri: EXAMPLE_CONSOLE_REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'af0ifjsldkj',
    },
  ],
} as const);

export const emailChallengeSchema = named('EmailSignInChallenge', {
  type: 'object',
  description: 'What `POST /auth/v1/email/start` asks of the client before it mails a code.',
  required: ['kind'],
  properties: {
    kind: { type: 'string', description: '`none` (no check: send no proof), `proof-of-work` (the built-in check), or the name of the deployment\'s CAPTCHA.' },
    challenge: { type: 'string', description: 'Proof of work: the challenge to solve, valid `expiresIn` seconds, used once.' },
    bits: { type: 'integer', description: 'Proof of work: the leading zero bits SHA-256 of `<challenge>:<email>:<nonce>` must have (`email` lower-cased; `nonce` 1 to 64 base64url characters).' },
    expiresIn: { type: 'integer', description: 'Proof of work: seconds the challenge stays valid.' },
    algorithm: { type: 'string', description: 'Proof of work: `sha-256(challenge:email:nonce)`.' },
  },
  additionalProperties: true,
  examples: [{ kind: 'none' }, { kind: 'proof-of-work', challenge: 'c2Vj7Kq0vX3nR8tB1mW5yZ', bits: 18, expiresIn: 300, algorithm: 'sha-256(challenge:email:nonce)' }],
} as const);

export const emailVerifySchema = named('EmailSignInVerify', {
  type: 'object',
  description: 'The emailed code, for the address it was sent to.',
  required: ['email', 'code'],
  properties: {
    email,
    code: { type: 'string', maxLength: 20, description: 'The six digits of the mail.' },
  },
  additionalProperties: false,
  examples: [{ email: EXAMPLE.email, code: '381947' }],
} as const);

export const emailVerifiedSchema = named('EmailSignInVerified', {
  type: 'object',
  description: 'A one-time code for `POST /auth/v1/token`, and the state the client sent at the start.',
  required: ['code', 'state'],
  properties: {
    code: { type: 'string', description: 'One-time code (60 seconds, single use), bound to the client, redirect URI and PKCE challenge of the start.' },
    state: { type: 'string', description: 'The `state` of `POST /auth/v1/email/start` (empty when none was sent).' },
  },
  additionalProperties: false,
  examples: [{ code: EXAMPLE_SIGN_IN_CODE, state: 'af0ifjsldkj' }],
} as const);

export const tokenRequestSchema = named('SessionTokenRequest', {
  type: 'object',
  description:
    'RFC 6749 token request, as JSON or `application/x-www-form-urlencoded`. `authorization_code`: `code`, `code_verifier`, `redirect_uri`; ' +
    '`refresh_token`: `refresh_token` and `client_id` (the client the session was issued to: required). With a code, `client_id` may be sent and ' +
    'must then be the code\'s client. No client authentication (public clients, RFC 6749 2.1). Unknown parameters are ignored (RFC 6749 3.2).',
  required: ['grant_type'],
  properties: {
    grant_type: { type: 'string', maxLength: 100, description: '`authorization_code` or `refresh_token`.' },
    code: { type: 'string', maxLength: 200, description: 'The one-time code (`authorization_code`).' },
    code_verifier: { type: 'string', maxLength: 200, description: 'The PKCE verifier (`authorization_code`).' },
    redirect_uri: { type: 'string', maxLength: 2000, description: 'The redirect URI the code was issued for (`authorization_code`).' },
    refresh_token: { type: 'string', maxLength: 200, description: 'The current refresh token (`refresh_token`).' },
    client_id: { type: 'string', maxLength: 100, description: '`console` or `mobile`: required with `refresh_token`, optional with a code.' },
  },
  maxProperties: 20,
  additionalProperties: { type: 'string', maxLength: 2000, description: 'Ignored.' },
  examples: [
    {
      grant_type: 'authorization_code',
      code: EXAMPLE_SIGN_IN_CODE,
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
      redirect_uri: EXAMPLE_CONSOLE_REDIRECT,
    },
  ],
} as const);

export const sessionTokensSchema = named('SessionTokens', {
  type: 'object',
  description: 'A Cloud session\'s tokens (spec 4.3). Both are opaque; only their hashes are stored.',
  required: ['access_token', 'refresh_token', 'expires_in', 'token_type'],
  properties: {
    access_token: { type: 'string', description: 'Access token (`platform_sa_…`), sent as `Authorization: Bearer`.' },
    refresh_token: { type: 'string', description: 'Refresh token (`platform_sr_…`); replaced at every refresh.' },
    expires_in: { type: 'integer', description: 'Seconds the access token has left (900 by default).' },
    token_type: { type: 'string', enum: ['Bearer'], description: '`Bearer`.' },
  },
  additionalProperties: false,
  examples: [
    {
      access_token: 'platform_sa_Lk9jH3gF7dS1aP5oI0uY4tR8eW2qZ6xC3vB7nM1kJ5h',
      refresh_token: 'platform_sr_Wq2eR6tY0uI4oP8aS3dF7gH1jK5lZ9xC2vB6nM0qW4e',
      expires_in: 900,
      token_type: 'Bearer',
    },
  ],
} as const);
