import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import type { OutgoingMail } from '../../src/mail/mailer.js';
import type { LinkIntent, PendingMethod, SignedInPerson } from '../../src/modules/signin/accounts.js';
import { EmailCodes } from '../../src/modules/signin/email-codes.js';
import { FakeEmailCodeStore } from '../../src/modules/signin/fake-email-code-store.js';
import type { ProviderIdentity } from '../../src/modules/signin/identity-provider.js';
import type { ClientRequest } from '../../src/modules/signin/shared.js';
import { ManualClock } from '../../src/util/clock.js';

/** The emailed-code rules (spec 4.3) with the rows in memory: mail, verify, tries, expiry, budgets. */

const config = { emailCodeTtlSeconds: 600, emailCodesPerHour: 5, emailCodesPerDay: 20, emailCodesPerMinute: 60, emailCodeTries: 5 };
const request: ClientRequest = { client: 'console', redirectUri: 'https://console.test/callback', codeChallenge: 'c'.repeat(43), state: 'the-state' };

function setUp(options: { failMail?: boolean } = {}) {
  const clock = new ManualClock();
  const store = new FakeEmailCodeStore();
  const mails: OutgoingMail[] = [];
  const resolved: { provider: string; identity: ProviderIdentity }[] = [];
  const issued: { request: ClientRequest; personId: string; link?: LinkIntent; pending?: PendingMethod }[] = [];
  const codes = new EmailCodes(clock, store, {
    config,
    origin: 'https://platform.test',
    mailer: {
      description: 'memory',
      send: async (mail) => {
        if (options.failMail) throw Object.assign(new Error('550 mailbox of someone@example.test unavailable'), { code: 'EENVELOPE', responseCode: 550 });
        mails.push(mail);
      },
    },
    logger: createLogger('silent'),
    codeKey: randomBytes(32),
    accounts: {
      useLinkTicket: async (ticket) => (ticket === undefined ? undefined : { ticketId: 'lnk_1', personId: 'psn_owner', sessionId: 'ses_1' }),
      assertLinkable: async () => null,
      resolvePerson: async (provider, identity): Promise<SignedInPerson> => {
        resolved.push({ provider, identity });
        return { personId: 'psn_1', methodId: 'sim_1', created: false };
      },
    },
    codes: {
      issueCode: async (asked, person) => {
        issued.push({ request: asked, personId: person.personId });
        return `platform_sc_${issued.length}`;
      },
      issueLinkCode: async (asked, link, pending) => {
        issued.push({ request: asked, personId: link.personId, link, pending });
        return `platform_sc_${issued.length}`;
      },
    },
  });
  const digitsOf = (mail: OutgoingMail | undefined) => /^ {4}(\d{6})$/m.exec(mail?.text ?? '')?.[1] ?? '';
  return { clock, store, mails, resolved, issued, codes, digitsOf };
}

async function refusal(work: Promise<unknown>): Promise<ApiError> {
  const error = await work.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

describe('emailed sign-in codes', () => {
  it('mails a six-digit code to the lower-cased address; the code, in any case of the address, signs in once', async () => {
    const { codes, mails, resolved, issued, digitsOf } = setUp();
    await codes.startEmail('  Person@Example.TEST ', request, undefined);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ kind: 'sign_in_code', to: 'person@example.test' });
    const digits = digitsOf(mails[0]);
    expect(mails[0]!.subject).toBe(`${digits} is your Platform sign-in code`);
    expect(mails[0]!.text).toContain('It works once, for 10 minutes.');
    expect(mails[0]!.text).toContain('Sent by https://platform.test');

    await expect(codes.verifyEmail('PERSON@example.test', digits)).resolves.toEqual({ code: 'platform_sc_1', state: 'the-state', personId: 'psn_1' });
    expect(resolved).toEqual([{ provider: 'email', identity: { subject: 'person@example.test', email: 'person@example.test', emailVerified: true, name: undefined } }]);
    expect(issued).toEqual([{ request, personId: 'psn_1' }]);
    expect((await refusal(codes.verifyEmail('person@example.test', digits))).code).toBe('invalid_code');
  });

  it('allows five tries: after four wrong codes the right one works, after five it does not', async () => {
    for (const wrong of [4, 5]) {
      const { codes, mails, digitsOf } = setUp();
      await codes.startEmail('tries@example.test', request, undefined);
      const digits = digitsOf(mails[0]);
      const other = digits === '000000' ? '000001' : '000000';
      for (let attempt = 0; attempt < wrong; attempt++) {
        const error = await refusal(codes.verifyEmail('tries@example.test', other));
        expect([error.status, error.code]).toEqual([400, 'invalid_code']);
      }
      const outcome = codes.verifyEmail('tries@example.test', digits);
      if (wrong === 4) await expect(outcome).resolves.toMatchObject({ personId: 'psn_1' });
      else expect((await refusal(outcome)).code).toBe('invalid_code');
    }
  });

  it('refuses a code past its ten minutes, and a code a newer one replaced', async () => {
    const { codes, mails, clock, digitsOf } = setUp();
    await codes.startEmail('late@example.test', request, undefined);
    clock.advance(600_000);
    expect((await refusal(codes.verifyEmail('late@example.test', digitsOf(mails[0])))).code).toBe('invalid_code');

    await codes.startEmail('late@example.test', request, undefined);
    await codes.startEmail('late@example.test', request, undefined);
    const [replaced, newest] = [digitsOf(mails[1]), digitsOf(mails[2])];
    if (replaced !== newest) expect((await refusal(codes.verifyEmail('late@example.test', replaced))).code).toBe('invalid_code');
    await expect(codes.verifyEmail('late@example.test', newest)).resolves.toMatchObject({ personId: 'psn_1' });
  });

  it('mails at most five codes per address an hour: the sixth is 429 slow_down with Retry-After, and mails nothing', async () => {
    const { codes, mails, clock, store } = setUp();
    for (let sent = 0; sent < 5; sent++) {
      await codes.startEmail('busy@example.test', request, undefined);
      clock.advance(60_000);
    }
    const error = await refusal(codes.startEmail('busy@example.test', request, undefined));
    expect([error.status, error.code]).toEqual([429, 'slow_down']);
    // The oldest of the hour was asked five minutes ago: it leaves the window in 55 minutes.
    expect(error.headers['Retry-After']).toBe(String(55 * 60));
    expect(mails).toHaveLength(5);
    // The refused code was not kept; the last one mailed is still the current one.
    expect(store.codes.filter((row) => row.spentAt === null)).toHaveLength(1);
    await codes.startEmail('other@example.test', request, undefined);
    expect(mails).toHaveLength(6);

    clock.advance(55 * 60_000);
    await codes.startEmail('busy@example.test', request, undefined);
    expect(mails).toHaveLength(7);
  });

  it('asked with a link ticket: the mail says so, and the code is a link flow’s for the ticket’s person', async () => {
    const { codes, mails, resolved, issued, digitsOf, store } = setUp();
    store.tickets.push({ id: 'lnk_1', ticketHash: 'h', personId: 'psn_owner', sessionId: 'ses_1', expiresAt: new Date(Date.UTC(2026, 0, 2)), usedAt: null, createdAt: new Date(Date.UTC(2026, 0, 1)) });
    await codes.startEmail('added@example.test', request, 'platform_lt_ticket');
    expect(mails[0]!.subject).toMatch(/^\d{6} is your Platform code to add this address$/);
    await expect(codes.verifyEmail('added@example.test', digitsOf(mails[0]))).resolves.toEqual({ code: 'platform_sc_1', state: 'the-state', personId: 'psn_owner' });
    expect(resolved).toEqual([]);
    expect(issued[0]).toMatchObject({ personId: 'psn_owner', link: { ticketId: 'lnk_1', personId: 'psn_owner', sessionId: 'ses_1' }, pending: { provider: 'email' } });
  });

  it('answers the same when the mail cannot be sent', async () => {
    const { codes, store } = setUp({ failMail: true });
    await expect(codes.startEmail('nobody@example.test', request, undefined)).resolves.toBeUndefined();
    expect(store.codes).toHaveLength(1);
  });
});
