#!/usr/bin/env node
// `npm run dev:idp`: a local OpenID Connect provider (node-oidc-provider, a devDependency) with
// one test person, to TRY a self-hosted install end to end (sign-in at /device, approving a
// workbench) without an identity provider of your own.
//
// FOR TRYING ONLY, NEVER FOR PRODUCTION: its keys are made at start and forgotten at exit, it
// keeps everything in memory, it serves plain http on loopback, and its one person's password is
// printed on the terminal.
//
//   npm run dev:idp                                   # http://127.0.0.1:4000, for http://localhost:3000
//   npm run dev:idp -- --port 4001 --platform http://localhost:8080
//
// It prints the `platform org configure …` line that connects it to the organisation served at
// localhost (the one a first self-hosted start creates). Stop it with Ctrl-C.

import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { exportJWK, generateKeyPair } from 'jose';

/** The person who signs in, and what their tokens say about them. */
export const DEV_PERSON = Object.freeze({ email: 'ada@example.test', password: 'try-it-locally', name: 'Ada Tester', role: 'owner' });
export const DEV_CLIENT_ID = 'platform-dev';
export const DEV_API_SCOPE = 'platform.api';
/** An identifier, not an address anyone fetches: the `aud` of the person tokens. */
export const DEV_AUDIENCE = 'https://platform-api.dev-idp.invalid';
export const DEV_ROLE_CLAIM = 'platform_role';

/** What oidc-provider says on every start of a development setup like this one: known, so not repeated. */
const EXPECTED_WARNINGS = [/devInteractions is enabled/, /already parsed request body detected/, /in-memory adapter is used/];

/** The development pages' forms post here; a login's password is checked before the provider sees it. */
const INTERACTION_PATH = /^\/interaction\/[^/]+(?:\/login)?$/;

/**
 * Starts the provider on 127.0.0.1:`port` (0: any free port), with a public client (PKCE, no
 * secret) whose redirect URI is the /device page of `platformOrigin`. Answers where it listens,
 * the command that connects it, and `close`.
 */
export async function startDevIdp({ port = 4000, platformOrigin = 'http://localhost:3000', host = 'localhost' } = {}) {
  const warn = console.warn;
  console.warn = (...args) => {
    if (typeof args[0] === 'string' && EXPECTED_WARNINGS.some((pattern) => pattern.test(args[0]))) return;
    warn.apply(console, args);
  };
  const { default: Provider } = await import('oidc-provider');

  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: `dev-${randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };
  const claims = { email: DEV_PERSON.email, email_verified: true, name: DEV_PERSON.name, [DEV_ROLE_CLAIM]: DEV_PERSON.role };
  const resourceServer = { audience: DEV_AUDIENCE, scope: `openid ${DEV_API_SCOPE}`, accessTokenFormat: 'jwt', accessTokenTTL: 600, jwt: { sign: { alg: 'RS256' } } };

  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    clients: [
      {
        client_id: DEV_CLIENT_ID,
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [`${new URL(platformOrigin).origin}/device/callback`],
      },
    ],
    features: {
      // The library's own login and consent pages: enough to try, and the reason this is no production provider.
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => DEV_AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => resourceServer,
      },
    },
    // Only the test person exists; the login step below lets no one else through.
    findAccount: (_ctx, accountId) => (accountId === DEV_PERSON.email ? { accountId, claims: () => ({ sub: accountId, ...claims }) } : undefined),
    extraTokenClaims: (_ctx, token) => (token.accountId === DEV_PERSON.email ? claims : undefined),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
  });
  const handle = provider.callback();

  server.on('request', (req, res) => {
    if (req.method !== 'POST' || !INTERACTION_PATH.test(new URL(req.url, issuer).pathname)) return void handle(req, res);
    // The development login form takes any password; this one takes the test person's only.
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const form = new URLSearchParams(text);
      const isLogin = form.get('prompt') === 'login' || form.has('login');
      if (isLogin && (form.get('login') !== DEV_PERSON.email || form.get('password') !== DEV_PERSON.password)) {
        res.writeHead(401, { 'content-type': 'text/html; charset=utf-8' });
        res.end(`<!doctype html><title>Wrong email or password</title><h1>Wrong email or password</h1><p>Sign in as ${DEV_PERSON.email} with the password the dev IdP printed. Go back and try again.</p>`);
        return;
      }
      // Read already: the provider takes the body from here (its "already parsed" path).
      req.body = text;
      void handle(req, res);
    });
  });

  const configure = [
    `OIDC_ALLOW_HTTP_LOOPBACK=true npx platform org configure ${host}`,
    `--issuer ${issuer}`,
    `--client-id ${DEV_CLIENT_ID}`,
    `--api-scope ${DEV_API_SCOPE}`,
    `--audience ${DEV_AUDIENCE}`,
    `--role-claim ${DEV_ROLE_CLAIM}`,
  ].join(' ');

  return {
    issuer,
    configure,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          console.warn = warn;
          resolve();
        });
      }),
  };
}

/** What the command prints: where it is, who signs in, the one line that connects it, and the warning. */
export function banner(idp, platformOrigin) {
  return [
    `Development identity provider at ${idp.issuer}: FOR TRYING ONLY, NEVER FOR PRODUCTION`,
    '(keys made at start and lost at exit, everything in memory, plain http, the password below is printed).',
    '',
    `Test person:  ${DEV_PERSON.email}   password: ${DEV_PERSON.password}   (role ${DEV_PERSON.role})`,
    '',
    'Connect it to the organisation served at localhost, then start the service with the same setting:',
    '',
    `  ${idp.configure}`,
    '  OIDC_ALLOW_HTTP_LOOPBACK=true npm start',
    '',
    `Then sign in at ${platformOrigin}/device. Ctrl-C stops this provider.`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '4000' }, platform: { type: 'string', default: 'http://localhost:3000' } } });
  const platformOrigin = new URL(values.platform).origin;
  const idp = await startDevIdp({ port: Number(values.port), platformOrigin, host: new URL(platformOrigin).hostname });
  console.log(banner(idp, platformOrigin));
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void idp.close());
}
