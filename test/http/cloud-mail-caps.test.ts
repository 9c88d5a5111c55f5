import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { EmailCodeEntity } from '../../src/modules/signin/entities.js';
import { solveProofOfWork } from '../../src/modules/signin/email-start-check.js';
import { CONSOLE_REDIRECT, outboxMails, pkce, startCloud, type CloudPlatform } from '../support/cloud.js';
import { call } from '../support/platform.js';

/**
 * Mail that cannot be turned into spam (issue 23): emailed sign-in codes are capped per address
 * per day and for the whole service per minute (429 `slow_down` with `Retry-After`), every mail
 * sent is counted in `platform_mails_sent_total{kind}`, and `POST /auth/v1/email/start` can ask a
 * proof of work first (off by default).
 */

let challenge: string;
let addressCount = 0;
const newAddress = () => `capped${++addressCount}@example.test`;

beforeAll(async () => {
  ({ challenge } = await pkce());
});

const start = (platform: CloudPlatform, email: string, extra: Record<string, unknown> = {}) =>
  call(platform, 'post', '/auth/v1/email/start', { body: { email, client: 'console', redirect_uri: CONSOLE_REDIRECT, code_challenge: challenge, ...extra } });
const mailsTo = async (platform: CloudPlatform, email: string) => (await outboxMails(platform.outbox)).filter((mail) => mail.to === email).length;

/** The value of `platform_mails_sent_total{kind}` in `/metrics`. */
async function mailsSent(platform: CloudPlatform, kind: string): Promise<number> {
  const res = await request(platform.app).get('/metrics').set('Host', '10.0.0.1:3000');
  expect(res.status).toBe(200);
  const prefix = `platform_mails_sent_total{kind="${kind}"} `;
  const line = res.text.split('\n').find((l) => l.startsWith(prefix));
  if (line === undefined) throw new Error(`no ${prefix.trim()} in /metrics`);
  return Number(line.slice(prefix.length));
}

describe('the daily cap per address (AUTH_EMAIL_CODES_PER_DAY)', () => {
  let platform: CloudPlatform;
  beforeAll(async () => {
    platform = await startCloud({ env: { AUTH_EMAIL_CODES_PER_DAY: '7', AUTH_EMAIL_CODES_PER_HOUR: '5' } });
  });
  afterAll(() => platform.close());

  it('mails at most that many codes to one address in 24 hours, then answers 429 slow_down until the first leaves the day', async () => {
    const email = newAddress();
    const first = platform.clock.now().getTime();
    for (let i = 0; i < 5; i++) {
      expect((await start(platform, email)).status).toBe(202);
      platform.clock.advance(60_000);
    }
    // The hourly budget (spec: five) is used up; two hours later two more fit in the day's seven.
    platform.clock.set(first + 2 * 3_600_000);
    expect((await start(platform, email)).status).toBe(202);
    expect((await start(platform, email)).status).toBe(202);
    platform.clock.set(first + 3 * 3_600_000);
    const refused = await start(platform, email);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('slow_down');
    expect(refused.body.message).toContain('today');
    expect(Number(refused.headers['retry-after'])).toBe(Math.ceil((first + 86_400_000 - platform.clock.now().getTime()) / 1000));
    expect(await mailsTo(platform, email)).toBe(7);
    // A refused request makes no code: it does not push the day further.
    platform.clock.set(first + 86_400_000 - 1);
    expect((await start(platform, email)).status).toBe(429);
    platform.clock.set(first + 86_400_000 + 1);
    expect((await start(platform, email)).status).toBe(202);
    expect(await mailsTo(platform, email)).toBe(8);
  });

  it('counts each address on its own', async () => {
    const other = newAddress();
    expect((await start(platform, other)).status).toBe(202);
    expect(await mailsTo(platform, other)).toBe(1);
  });

  it('keeps the rows a day for the count, and no longer', async () => {
    const email = newAddress();
    expect((await start(platform, email)).status).toBe(202);
    const hash = createHash('sha256').update(`email:${email}`).digest('hex');
    const rows = () => platform.dataSource.getRepository(EmailCodeEntity).countBy({ addressHash: hash });
    platform.clock.advance(23 * 3_600_000);
    expect((await start(platform, newAddress())).status).toBe(202);
    expect(await rows()).toBe(1);
    platform.clock.advance(2 * 3_600_000);
    expect((await start(platform, newAddress())).status).toBe(202);
    expect(await rows()).toBe(0);
  });
});

describe('the cap for the whole service per minute (AUTH_EMAIL_CODES_PER_MINUTE)', () => {
  let platform: CloudPlatform;
  beforeAll(async () => {
    platform = await startCloud({ env: { AUTH_EMAIL_CODES_PER_MINUTE: '3' } });
  });
  afterAll(() => platform.close());

  it('mails at most that many codes a minute to anyone, then answers 429 slow_down with Retry-After and mails nothing', async () => {
    const first = platform.clock.now().getTime();
    for (let i = 0; i < 3; i++) {
      expect((await start(platform, newAddress())).status).toBe(202);
      platform.clock.advance(10_000);
    }
    const email = newAddress();
    const refused = await start(platform, email);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe('slow_down');
    expect(refused.body.message).toContain('right now');
    expect(Number(refused.headers['retry-after'])).toBe(Math.ceil((first + 60_000 - platform.clock.now().getTime()) / 1000));
    expect(await mailsTo(platform, email)).toBe(0);
    // Once the first code is a minute old, one more fits.
    platform.clock.set(first + 60_001);
    expect((await start(platform, email)).status).toBe(202);
    expect((await start(platform, newAddress())).status).toBe(429);
    expect(await mailsTo(platform, email)).toBe(1);
  });
});

describe('platform_mails_sent_total{kind}', () => {
  let platform: CloudPlatform;
  beforeAll(async () => {
    platform = await startCloud();
  });
  afterAll(() => platform.close());

  it('counts every mail sent, by kind, from 0', async () => {
    expect(await mailsSent(platform, 'sign_in_code')).toBe(0);
    expect(await mailsSent(platform, 'invitation')).toBe(0);
    for (let i = 0; i < 3; i++) expect((await start(platform, newAddress())).status).toBe(202);
    expect(await mailsSent(platform, 'sign_in_code')).toBe(3);
    // A refused start sends nothing, and is not counted.
    expect((await start(platform, newAddress(), { redirect_uri: 'https://elsewhere.test/cb' })).status).toBe(400);
    expect(await mailsSent(platform, 'sign_in_code')).toBe(3);
    expect(await mailsSent(platform, 'invitation')).toBe(0);
  });
});

describe('the proof of work on email/start (AUTH_EMAIL_PROOF_OF_WORK_BITS)', () => {
  let platform: CloudPlatform;
  const bits = 8;
  beforeAll(async () => {
    platform = await startCloud({ env: { AUTH_EMAIL_PROOF_OF_WORK_BITS: String(bits) } });
  });
  afterAll(() => platform.close());

  const newChallenge = async () => {
    const res = await call(platform, 'get', '/auth/v1/email/challenge');
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toMatchObject({ kind: 'proof-of-work', bits, expiresIn: 300 });
    return res.body.challenge as string;
  };

  it('mails a code for a solved challenge, once', async () => {
    const email = newAddress();
    const puzzle = await newChallenge();
    const proof = `${puzzle}:${solveProofOfWork(puzzle, email, bits)}`;
    expect((await start(platform, email, { proof })).status).toBe(202);
    expect(await mailsTo(platform, email)).toBe(1);
    const again = await start(platform, email, { proof });
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ error: 'invalid_request', field: 'body.proof' });
    expect(await mailsTo(platform, email)).toBe(1);
  });

  it('refuses a start without a proof, or with one that does not pass, before mailing anything', async () => {
    const email = newAddress();
    const puzzle = await newChallenge();
    const nonce = solveProofOfWork(puzzle, email, bits);
    const [expires, random] = puzzle.split('.');
    const forged = `${expires}.${random}.${'A'.repeat(43)}`;
    let wrongNonce = 0;
    while (solveProofOfWork(puzzle, email, bits) === String(wrongNonce) || createHash('sha256').update(`${puzzle}:${email}:${wrongNonce}`).digest()[0] === 0) wrongNonce++;
    for (const proof of [undefined, '', `${puzzle}:${String(wrongNonce)}`, `${forged}:${solveProofOfWork(forged, email, bits)}`, `${puzzle}:${solveProofOfWork(puzzle, 'someone-else@example.test', bits)}`, `${puzzle}:${nonce}:x`]) {
      if (proof === `${puzzle}:${nonce}`) continue;
      const res = await start(platform, email, proof === undefined ? {} : { proof });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request', field: 'body.proof' });
    }
    expect(await mailsTo(platform, email)).toBe(0);
    // The address lower-cased is what the proof is for.
    expect((await start(platform, email.toUpperCase(), { proof: `${puzzle}:${nonce}` })).status).toBe(202);
  });

  it('refuses a challenge past its five minutes', async () => {
    const email = newAddress();
    const puzzle = await newChallenge();
    const proof = `${puzzle}:${solveProofOfWork(puzzle, email, bits)}`;
    platform.clock.advance(301_000);
    expect((await start(platform, email, { proof })).status).toBe(400);
    expect(await mailsTo(platform, email)).toBe(0);
  });
});

describe('without a check (the default)', () => {
  let platform: CloudPlatform;
  beforeAll(async () => {
    platform = await startCloud();
  });
  afterAll(() => platform.close());

  it('says so at GET /auth/v1/email/challenge, and email/start asks no proof', async () => {
    const res = await call(platform, 'get', '/auth/v1/email/challenge');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ kind: 'none' });
    const email = newAddress();
    expect((await start(platform, email)).status).toBe(202);
    expect((await start(platform, newAddress(), { proof: 'anything' })).status).toBe(202);
  });
});
