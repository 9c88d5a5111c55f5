import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as oauth from 'oauth4webapi';
import request from 'supertest';
import { SessionTokenEntity } from '../../src/modules/signin/entities.js';
import { hashSecret } from '../../src/util/secrets.js';
import { bearer, CONSOLE_REDIRECT, emailedSignInCode, emailSignIn, MOBILE_REDIRECT, startCloud, type CloudPlatform } from '../support/cloud.js';
import { FakeOAuthProvider } from '../support/oauth2-server.js';
import { CookieJar } from '../support/cookie-jar.js';
import { call } from '../support/platform.js';

/**
 * Cloud sessions (spec 4.3, 5, 8): the code exchange and refreshes driven by oauth4webapi exactly
 * as the console and the mobile app would drive them, against the service listening on loopback;
 * rotation, the replay rule and its grace, concurrent refreshes, lifetimes and sign-out. This file
 * runs on SQLite and again on MariaDB (npm run test:services).
 */

let platform: CloudPlatform;
let server: Server;
let origin: string;
let github: FakeOAuthProvider;
let as: oauth.AuthorizationServer;
const allowHttp = { [oauth.allowInsecureRequests]: true };
const secrets: string[] = [];

beforeAll(async () => {
  github = await FakeOAuthProvider.start('github');
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  platform = await startCloud({ env: { PLATFORM_BASE_URL: origin, ...github.env(), OIDC_ALLOW_HTTP_LOOPBACK: 'true' } });
  handler = platform.app;
  as = {
    issuer: origin,
    authorization_endpoint: `${origin}/auth/v1/start`,
    token_endpoint: `${origin}/auth/v1/token`,
    authorization_response_iss_parameter_supported: true,
    code_challenge_methods_supported: ['S256'],
  };
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await github?.close();
  await platform?.close();
});

/** A client's whole sign-in with GitHub, as oauth4webapi drives it: the token answer. */
async function clientSignIn(clientId: 'console' | 'mobile', account = 1): Promise<oauth.TokenEndpointResponse> {
  const client: oauth.Client = { client_id: clientId };
  const redirectUri = clientId === 'console' ? CONSOLE_REDIRECT : MOBILE_REDIRECT;
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const start = new URL(as.authorization_endpoint!);
  for (const [name, value] of Object.entries({
    provider: 'github',
    client: clientId,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  })) start.searchParams.set(name, value);
  github.user = { id: account, name: `Account ${account}`, emails: [] };
  const toProvider = await fetch(start, { redirect: 'manual' });
  const browser = new CookieJar().store(toProvider.headers.getSetCookie());
  const back = await github.authorize(toProvider.headers.get('location')!);
  const toClient = await fetch(back, { redirect: 'manual', headers: browser.headers() });
  const params = oauth.validateAuthResponse(as, client, new URL(toClient.headers.get('location')!), state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, allowHttp);
  const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
  secrets.push(tokens.access_token, tokens.refresh_token!);
  return tokens;
}

async function clientRefresh(clientId: 'console' | 'mobile', refreshToken: string): Promise<oauth.TokenEndpointResponse> {
  const client: oauth.Client = { client_id: clientId };
  const response = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, allowHttp);
  const tokens = await oauth.processRefreshTokenResponse(as, client, response);
  secrets.push(tokens.access_token, tokens.refresh_token!);
  return tokens;
}

const refresh = (refreshToken: string) => call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'console' } });
const me = (accessToken: string) => call(platform, 'get', '/cloud/v1/me', { headers: bearer(accessToken) });

describe('the code exchange and refresh, as clients drive them (oauth4webapi)', () => {
  it.each(['console', 'mobile'] as const)('%s: exchanges the code, calls the API, refreshes (rotating), and the old refresh token is spent', async (clientId) => {
    const tokens = await clientSignIn(clientId, clientId === 'console' ? 11 : 12);
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 900 });
    expect(tokens.access_token).toMatch(/^platform_sa_[A-Za-z0-9_-]{43}$/);
    expect(tokens.refresh_token).toMatch(/^platform_sr_[A-Za-z0-9_-]{43}$/);
    expect((await me(tokens.access_token)).status).toBe(200);
    platform.clock.advance(60_000);
    const next = await clientRefresh(clientId, tokens.refresh_token!);
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(next.access_token).not.toBe(tokens.access_token);
    expect((await me(next.access_token)).body.name).toBe(`Account ${clientId === 'console' ? 11 : 12}`);
    // Another client may not refresh the session.
    const other = clientId === 'console' ? 'mobile' : 'console';
    await expect(clientRefresh(other, next.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('answers with no-store and refuses a text/plain body with 415', async () => {
    const tokens = await clientSignIn('console', 13);
    const res = await refresh(tokens.refresh_token!);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const text = await call(platform, 'post', '/auth/v1/token', { raw: { type: 'text/plain', data: `grant_type=refresh_token&refresh_token=${res.body.refresh_token}` } });
    expect(text.status).toBe(415);
  });
});

describe('lifetimes', () => {
  it('access tokens last 15 minutes; the refresh token still gets a new pair', async () => {
    const session = await emailSignIn(platform, 'life@example.test');
    platform.clock.advance(899_000);
    expect((await me(session.access_token)).status).toBe(200);
    platform.clock.advance(1_000);
    const expired = await me(session.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers['www-authenticate']).toContain('error="invalid_token"');
    const renewed = await refresh(session.refresh_token);
    expect(renewed.status).toBe(200);
    expect((await me(renewed.body.access_token)).status).toBe(200);
  });

  it('refresh tokens last 30 days', async () => {
    const session = await emailSignIn(platform, 'month@example.test');
    platform.clock.advance(30 * 86_400_000);
    expect((await refresh(session.refresh_token)).body).toMatchObject({ error: 'invalid_grant', error_description: 'the refresh token has expired; sign in again' });
  });
});

describe('rotation and replay', () => {
  it('a replaced refresh token presented again after the grace ends the whole session', async () => {
    const session = await emailSignIn(platform, 'replay@example.test');
    const other = await emailSignIn(platform, 'replay@example.test');
    const next = await refresh(session.refresh_token);
    expect(next.status).toBe(200);
    platform.clock.advance(10_000);
    const replay = await refresh(session.refresh_token);
    expect(replay.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('already used') });
    // Every token of that session stops; the person's other session does not.
    expect((await me(next.body.access_token)).status).toBe(401);
    expect((await me(session.access_token)).status).toBe(401);
    expect((await refresh(next.body.refresh_token)).body.error).toBe('invalid_grant');
    expect((await me(other.access_token)).status).toBe(200);
  });

  it('within the grace, the just-replaced token gets the same new pair (with what is left of its lifetime)', async () => {
    const session = await emailSignIn(platform, 'grace@example.test');
    const first = await refresh(session.refresh_token);
    platform.clock.advance(4_000);
    const again = await refresh(session.refresh_token);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ...first.body, expires_in: 896 });
    expect((await me(again.body.access_token)).status).toBe(200);
  });

  it('the grace ends once the new pair has been used: the old token then ends the session', async () => {
    const session = await emailSignIn(platform, 'moved-on@example.test');
    const first = await refresh(session.refresh_token);
    const second = await refresh(first.body.refresh_token);
    expect(second.status).toBe(200);
    const stale = await refresh(session.refresh_token);
    expect(stale.body.error).toBe('invalid_grant');
    expect((await me(second.body.access_token)).status).toBe(401);
  });

  it('two concurrent refreshes of one token both succeed, with the same new pair; the session goes on', async () => {
    const session = await emailSignIn(platform, 'tabs@example.test');
    const answers = await Promise.all([refresh(session.refresh_token), refresh(session.refresh_token), refresh(session.refresh_token)]);
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(new Set(answers.map((answer) => answer.body.refresh_token)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.body.access_token)).size).toBe(1);
    const next = await refresh(answers[0]!.body.refresh_token);
    expect(next.status).toBe(200);
    // One new pair was issued, not three: the session holds its first refresh token, that pair's and the next.
    const tokens = platform.dataSource.getRepository(SessionTokenEntity);
    const { sessionId } = await tokens.findOneByOrFail({ tokenHash: hashSecret(session.access_token) });
    expect(await tokens.countBy({ sessionId, kind: 'refresh' })).toBe(3);
  });

  it('with AUTH_REFRESH_GRACE_SECONDS=0 a concurrent refresh ends the session', async () => {
    const strict = await startCloud({ env: { AUTH_REFRESH_GRACE_SECONDS: '0' } });
    try {
      const session = await emailSignIn(strict, 'strict@example.test');
      const answers = await Promise.all([1, 2].map(() => call(strict, 'post', '/auth/v1/token', { body: { grant_type: 'refresh_token', refresh_token: session.refresh_token, client_id: 'console' } })));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
      const winner = answers.find((answer) => answer.status === 200)!;
      expect((await call(strict, 'get', '/cloud/v1/me', { headers: bearer(winner.body.access_token) })).status).toBe(401);
    } finally {
      await strict.close();
    }
  });
});

describe('a one-time code exchanged twice at once', () => {
  it('gives tokens to one exchange only, and the other ends the session the first started', async () => {
    const { code, verifier } = await emailedSignInCode(platform, 'twice@example.test');
    const exchange = () => call(platform, 'post', '/auth/v1/token', { body: { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CONSOLE_REDIRECT } });
    const answers = await Promise.all([exchange(), exchange()]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
    expect(answers.find((answer) => answer.status === 400)!.body.error).toBe('invalid_grant');
    const issued = answers.find((answer) => answer.status === 200)!.body;
    expect((await me(issued.access_token)).status).toBe(401);
    expect((await refresh(issued.refresh_token)).body.error).toBe('invalid_grant');
  });
});

describe('the token endpoint refuses', () => {
  it.each([
    ['an unknown grant_type', { grant_type: 'password', username: 'a', password: 'b' }, 'unsupported_grant_type'],
    ['the device-code grant', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'x' }, 'unsupported_grant_type'],
    ['no grant_type', { refresh_token: 'platform_sr_x' }, 'invalid_request'],
    ['a refresh grant without refresh_token', { grant_type: 'refresh_token' }, 'invalid_request'],
    ['a code grant without code_verifier', { grant_type: 'authorization_code', code: 'platform_sc_x', redirect_uri: CONSOLE_REDIRECT }, 'invalid_request'],
    ['a code grant without redirect_uri', { grant_type: 'authorization_code', code: 'platform_sc_x', code_verifier: 'a'.repeat(43) }, 'invalid_request'],
    ['a field of the wrong type', { grant_type: 'refresh_token', refresh_token: 42 }, 'invalid_request'],
    ['a refresh token never issued', { grant_type: 'refresh_token', refresh_token: 'platform_sr_forged' }, 'invalid_grant'],
    ['a device refresh token', { grant_type: 'refresh_token', refresh_token: 'platform_rt_x' }, 'invalid_grant'],
  ])('%s, with an OAuth error body', async (_case, body, error) => {
    const res = await call(platform, 'post', '/auth/v1/token', { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
    expect(res.body.error_description).toEqual(expect.any(String));
  });

  it('an access token presented as a refresh token', async () => {
    const session = await emailSignIn(platform, 'mixup@example.test');
    expect((await refresh(session.access_token)).body.error).toBe('invalid_grant');
  });

  it('takes forms as well as JSON', async () => {
    const session = await emailSignIn(platform, 'form@example.test');
    const res = await request(platform.app).post('/auth/v1/token').type('form').send({ grant_type: 'refresh_token', refresh_token: session.refresh_token, client_id: 'console' });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('Bearer');
  });
});

describe('POST /auth/v1/logout', () => {
  it('ends the session: its access and refresh tokens stop at once; other sessions go on', async () => {
    const session = await emailSignIn(platform, 'leaver@example.test');
    const other = await emailSignIn(platform, 'leaver@example.test');
    const renewed = await refresh(session.refresh_token);
    const res = await call(platform, 'post', '/auth/v1/logout', { headers: bearer(renewed.body.access_token) });
    expect(res.status).toBe(204);
    expect((await me(renewed.body.access_token)).status).toBe(401);
    expect((await me(session.access_token)).status).toBe(401);
    expect((await refresh(renewed.body.refresh_token)).body.error).toBe('invalid_grant');
    // The grace copy of the pair went with it.
    expect((await refresh(session.refresh_token)).body.error).toBe('invalid_grant');
    expect((await me(other.access_token)).status).toBe(200);
    expect((await call(platform, 'post', '/auth/v1/logout', { headers: bearer(renewed.body.access_token) })).status).toBe(401);
  });

  it('needs a Cloud session', async () => {
    expect((await call(platform, 'post', '/auth/v1/logout')).status).toBe(401);
    expect((await call(platform, 'post', '/auth/v1/logout', { headers: bearer('platform_at_device') })).status).toBe(401);
    expect((await call(platform, 'post', '/auth/v1/logout', { headers: bearer('platform_sr_refresh') })).status).toBe(401);
  });
});

describe('storage and logs', () => {
  it('keeps only hashes of session tokens, and writes no token to the logs', async () => {
    const rows = JSON.stringify(await platform.dataSource.getRepository(SessionTokenEntity).find());
    const logs = JSON.stringify(platform.logs);
    expect(secrets.length).toBeGreaterThan(5);
    for (const secret of secrets) {
      expect(rows).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
  });
});
