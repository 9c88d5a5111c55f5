import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CONSOLE_REDIRECT, pkce, startCloud, type CloudPlatform } from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * Sign-in operations are limited per network address (spec 4.3, 8): 429 with `Retry-After`;
 * `slow_down` on the emailed-code start. An IPv6 address counts per /64 (one subscriber's
 * network), an IPv4-mapped IPv6 address as its IPv4 address, and a forwarded address only when
 * TRUST_PROXY trusts the proxy that sent it.
 */

let trusting: CloudPlatform;
let direct: CloudPlatform;
let challenge: string;

beforeAll(async () => {
  const limits = { RATE_LIMITS_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '3', AUTH_TOKEN_RATE_LIMIT_PER_MINUTE: '2' };
  [trusting, direct] = await Promise.all([startCloud({ env: { ...limits, TRUST_PROXY: 'loopback' } }), startCloud({ env: limits })]);
  ({ challenge } = await pkce());
});
afterAll(async () => {
  await trusting?.close();
  await direct?.close();
});

const startQuery = () => `/auth/v1/start?${new URLSearchParams({ provider: 'github', client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge, state: 's' })}`;
let mailbox = 0;
// A new address each time: the per-address budget of codes (five an hour) stays out of the way.
const emailStart = (from: string, platform = trusting) =>
  call(platform, 'post', '/auth/v1/email/start', {
    headers: { 'X-Forwarded-For': from },
    body: { email: `limited${++mailbox}@example.test`, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge },
  });

const OPERATIONS: [string, (from: string) => ReturnType<typeof call>, number][] = [
  ['GET /auth/v1/start', (from) => call(trusting, 'get', startQuery(), { headers: { 'X-Forwarded-For': from } }), 3],
  ['GET /auth/v1/callback/{provider}', (from) => call(trusting, 'get', '/auth/v1/callback/github?state=x&code=y', { headers: { 'X-Forwarded-For': from } }), 3],
  ['POST /auth/v1/email/verify', (from) => call(trusting, 'post', '/auth/v1/email/verify', { headers: { 'X-Forwarded-For': from }, body: { email: 'a@example.test', code: '000000' } }), 3],
  ['POST /auth/v1/token', (from) => call(trusting, 'post', '/auth/v1/token', { headers: { 'X-Forwarded-For': from }, body: { grant_type: 'refresh_token', refresh_token: 'platform_sr_x' } }), 2],
];

describe('sign-in rate limits per network address', () => {
  it.each(OPERATIONS)('%s: 429 too_many_requests with Retry-After past the limit', async (_name, send, limit) => {
    const from = `198.51.100.${10 + OPERATIONS.findIndex(([name]) => name === _name)}`;
    for (let i = 0; i < limit; i++) expect((await send(from)).status).not.toBe(429);
    const refused = await send(from);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('too_many_requests');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another address is counted apart.
    expect((await send('198.51.100.200')).status).not.toBe(429);
  });

  it('POST /auth/v1/email/start answers slow_down', async () => {
    for (let i = 0; i < 3; i++) expect((await emailStart('203.0.113.50')).status).toBe(202);
    const refused = await emailStart('203.0.113.50');
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('slow_down');
    expect(refused.headers['retry-after']).toBeDefined();
  });

  it('counts an IPv6 address per /64, and an IPv4-mapped address as its IPv4 address', async () => {
    for (const from of ['2001:db8:aa:1::1', '2001:db8:aa:1:ffff:ffff:ffff:ffff', '2001:db8:aa:1::9']) expect((await emailStart(from)).status).toBe(202);
    expect((await emailStart('2001:db8:aa:1:1234::1')).body.error).toBe('slow_down');
    expect((await emailStart('2001:db8:aa:2::1')).status).toBe(202);
    for (const from of ['203.0.113.77', '::ffff:203.0.113.77', '203.0.113.77']) expect((await emailStart(from)).status).toBe(202);
    expect((await emailStart('::ffff:203.0.113.77')).body.error).toBe('slow_down');
  });

  it('believes X-Forwarded-For only from a trusted proxy: without TRUST_PROXY every caller here is the one loopback address', async () => {
    for (const from of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) expect((await emailStart(from, direct)).status).toBe(202);
    expect((await emailStart('192.0.2.4', direct)).body.error).toBe('slow_down');
  });
});
