import { createHmac, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError, invalidRequest } from '../../errors.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, safeEqual } from '../../util/secrets.js';
import type { LinkIntent, SignInAccounts } from './accounts.js';
import type { SignInCodes } from './code-exchange.js';
import type { ProviderIdentity } from './identity-provider.js';
import { checkMailCaps, MAIL_CAP_DAY_MS } from './mail-caps.js';
import type { SignInSettings } from './settings.js';
import { normaliseEmail, RedirectError, signInOrigin, type ClientRequest } from './shared.js';
import type { SignInStore } from './store.js';

/**
 * Sign-in by an emailed six-digit code (spec 4.3): `POST /auth/v1/email/start` mails it,
 * `POST /auth/v1/email/verify` checks it and answers a one-time code for the token endpoint
 * (code-exchange.ts). Codes are stored as HMACs under a key of their own.
 */

/** What emailed codes read and write: the sign-in store's email-code rows (and link tickets). */
export type EmailCodeStore = Pick<
  SignInStore,
  | 'purgeEmailCodes'
  | 'emailCodesSince'
  | 'emailCodesSentSince'
  | 'insertEmailCode'
  | 'deleteEmailCode'
  | 'spendOtherEmailCodes'
  | 'currentEmailCode'
  | 'countTry'
  | 'spendEmailCode'
  | 'findTicket'
>;

export interface EmailCodesOptions {
  config: Pick<SignInSettings, 'emailCodeTtlSeconds' | 'emailCodesPerHour' | 'emailCodesPerDay' | 'emailCodesPerMinute' | 'emailCodeTries'>;
  /** `serviceOrigin` (src/http/origin.ts): PLATFORM_BASE_URL, named in the mail. */
  origin: string | undefined;
  mailer: Mailer;
  logger: Logger;
  /** The key emailed codes are stored under (HMAC-SHA-256). */
  codeKey: Buffer;
  accounts: Pick<SignInAccounts, 'useLinkTicket' | 'assertLinkable' | 'resolvePerson'>;
  codes: Pick<SignInCodes, 'issueCode' | 'issueLinkCode'>;
}

export class EmailCodes {
  constructor(
    private readonly clock: Clock,
    private readonly store: EmailCodeStore,
    private readonly options: EmailCodesOptions,
  ) {}

  private get config() {
    return this.options.config;
  }

  private codeHash(id: string, digits: string): string {
    return createHmac('sha256', this.options.codeKey).update(`${id}:${digits}`).digest('hex');
  }

  /**
   * `POST /auth/v1/email/start`: mails a six-digit code, whether or not the address has an
   * account. At most `emailCodesPerHour` codes per address per rolling hour, counted from the
   * codes asked (a new code never resets the count; wrong guesses do not count). Each new code
   * replaces the address's earlier ones.
   */
  async startEmail(address: string, request: ClientRequest, link: string | undefined): Promise<void> {
    const email = normaliseEmail(address);
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - 3_600_000);
    const addressHash = hashSecret(`email:${email}`);
    const id = newId('emc');
    const digits = String(randomInt(0, 1_000_000)).padStart(6, '0');
    // Rows stay a day, for the daily cap (mail-caps.ts), which is checked before the code is made
    // (and before a link ticket is spent on a mail that will not be sent).
    await this.store.purgeEmailCodes(new Date(now.getTime() - MAIL_CAP_DAY_MS));
    await checkMailCaps(this.store, this.config, addressHash, now);
    let linkIntent: LinkIntent | undefined;
    try {
      linkIntent = await this.options.accounts.useLinkTicket(link);
    } catch (error) {
      if (error instanceof RedirectError) throw invalidRequest(error.message, { field: 'body.link' });
      throw error;
    }
    await this.store.insertEmailCode({
      id,
      addressHash,
      codeHash: this.codeHash(id, digits),
      tries: 0,
      client: request.client,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      state: request.state ?? '',
      linkPersonId: linkIntent?.personId ?? null,
      linkTicketId: linkIntent?.ticketId ?? null,
      expiresAt: new Date(now.getTime() + this.config.emailCodeTtlSeconds * 1000),
      createdAt: now,
      spentAt: null,
    });
    // Counted after inserting: two concurrent requests both see each other, and both are refused
    // rather than both let through past the budget.
    const recent = await this.store.emailCodesSince(addressHash, windowStart);
    if (recent.length > this.config.emailCodesPerHour) {
      await this.store.deleteEmailCode(id);
      const oldest = recent[0]!.createdAt.getTime();
      const retryAfter = Math.max(1, Math.ceil((oldest + 3_600_000 - now.getTime()) / 1000));
      throw new ApiError(429, 'slow_down', `too many codes were sent to this address; try again in ${retryAfter} seconds`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    await this.store.spendOtherEmailCodes(addressHash, id, now);
    try {
      await this.options.mailer.send(this.codeMail(email, digits, linkIntent !== undefined));
    } catch (error) {
      // The answer is the same either way (spec: 202 whether or not mail can be delivered). The
      // log names the failure, not the mail: an SMTP error message may quote the address.
      const { code, responseCode, command } = (error ?? {}) as { code?: unknown; responseCode?: unknown; command?: unknown };
      this.options.logger.error({ mailError: { code, responseCode, command } }, 'a sign-in code could not be mailed');
    }
  }

  private codeMail(to: string, digits: string, linking: boolean) {
    const minutes = Math.round(this.config.emailCodeTtlSeconds / 60);
    const purpose = linking ? 'add this email address to your Platform account' : 'sign in to Platform';
    return {
      kind: 'sign_in_code' as const,
      to,
      subject: `${digits} is your Platform ${linking ? 'code to add this address' : 'sign-in code'}`,
      text: [
        `Your code to ${purpose}:`,
        '',
        `    ${digits}`,
        '',
        `Enter it where you asked for it. It works once, for ${minutes} minutes.`,
        '',
        `If you did not ask for it, ignore this mail: nothing happens without the code. Nobody from Platform will ever ask you for it.`,
        '',
        `Sent by ${signInOrigin(this.options.origin)}`,
        '',
      ].join('\r\n'),
    };
  }

  /**
   * `POST /auth/v1/email/verify`: checks the address's current code (five tries, compared in
   * constant time), then answers a one-time code for the token endpoint and the client's state.
   * For a code asked with a link ticket, the one-time code is a link flow's (see
   * `SignInCodes.exchangeCode`): 409 `already_linked` here already when the address signs in to
   * another person.
   */
  async verifyEmail(address: string, digits: string): Promise<{ code: string; state: string; personId: string }> {
    const invalid = () => new ApiError(400, 'invalid_code', 'the code is wrong or has expired; ask for a new one if it keeps failing');
    const email = normaliseEmail(address);
    const current = await this.store.currentEmailCode(hashSecret(`email:${email}`));
    const now = this.clock.now();
    if (!current || current.expiresAt.getTime() <= now.getTime()) throw invalid();
    if (!(await this.store.countTry(current.id, this.config.emailCodeTries))) throw invalid();
    if (!/^\d{6}$/.test(digits) || !safeEqual(this.codeHash(current.id, digits), current.codeHash)) throw invalid();
    if (!(await this.store.spendEmailCode(current.id, now))) throw invalid();
    const identity: ProviderIdentity = { subject: email, email, emailVerified: true, name: undefined };
    const request: ClientRequest = { client: current.client, redirectUri: current.redirectUri, codeChallenge: current.codeChallenge, state: current.state };
    const { accounts, codes } = this.options;
    if (current.linkPersonId !== null) {
      const ticket = current.linkTicketId === null ? null : await this.store.findTicket(current.linkTicketId);
      if (!ticket || ticket.personId !== current.linkPersonId) throw invalid();
      await accounts.assertLinkable(ticket.personId, 'email', identity);
      const link: LinkIntent = { ticketId: ticket.id, personId: ticket.personId, sessionId: ticket.sessionId };
      return { code: await codes.issueLinkCode(request, link, { provider: 'email', identity }), state: current.state, personId: ticket.personId };
    }
    const person = await accounts.resolvePerson('email', identity);
    return { code: await codes.issueCode(request, person), state: current.state, personId: person.personId };
  }
}
