import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { ApiError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret, safeEqual } from '../../util/secrets.js';
import { oauthError } from '../oauth/errors.js';
import { retryingRaces, type LinkIntent, type PendingMethod, type SignedInPerson, type SignInAccounts } from './accounts.js';
import type { SignInCodeRecord } from './entities.js';
import type { CloudSessions, SessionTokens } from './sessions.js';
import type { SignInSettings } from './settings.js';
import { CODE_VERIFIER, type ClientRequest, type FlowClient } from './shared.js';
import type { SignInStore } from './store.js';

/**
 * The one-time codes a sign-in ends with, and sign-in's grant at the token endpoint
 * (`grant_type=authorization_code`, RFC 6749 4.1.3 with RFC 7636): a code is bound to the
 * client, its redirect URI and its PKCE challenge, and starts a Cloud session when exchanged.
 * The approval page redeems its own codes without a session (`redeemForPage`).
 */

export const SIGN_IN_CODE_PREFIX = 'platform_sc_';

export interface CodeExchange {
  code: string;
  codeVerifier: string;
  redirectUri: string;
  clientId: string | undefined;
}

/** The session presenting a link flow's code (its access token on the exchange), if any. */
export interface ExchangingSession {
  sessionId: string;
  personId: string;
}

export interface SignInCodesOptions {
  config: Pick<SignInSettings, 'signInCodeTtlSeconds'>;
  sessions: CloudSessions;
  accounts: SignInAccounts;
}

export class SignInCodes {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly store: SignInStore,
    private readonly options: SignInCodesOptions,
  ) {}

  async issueCode(request: ClientRequest, person: SignedInPerson): Promise<string> {
    return this.insertCode(request, person.personId, { signInMethodId: person.methodId, linkTicketId: null, pendingMethod: null });
  }

  /** A link flow's code: for the ticket's person, adding `pending` only when its owner exchanges it. */
  async issueLinkCode(request: ClientRequest, link: LinkIntent, pending: PendingMethod): Promise<string> {
    return this.insertCode(request, link.personId, { signInMethodId: null, linkTicketId: link.ticketId, pendingMethod: JSON.stringify(pending) });
  }

  private async insertCode(
    request: ClientRequest,
    personId: string,
    what: Pick<SignInCodeRecord, 'signInMethodId' | 'linkTicketId' | 'pendingMethod'>,
  ): Promise<string> {
    const now = this.clock.now();
    const code = newSecret(SIGN_IN_CODE_PREFIX);
    await this.store.insertCode(
      {
        id: newId('sgc'),
        codeHash: hashSecret(code),
        personId,
        client: request.client,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        ...what,
        expiresAt: new Date(now.getTime() + this.options.config.signInCodeTtlSeconds * 1000),
        usedAt: null,
        sessionId: null,
        createdAt: now,
      },
      now,
    );
    return code;
  }

  /**
   * `grant_type=authorization_code` (RFC 6749 4.1.3 with RFC 7636): the code knows its client;
   * `client_id`, when sent, must name it; `redirect_uri` must be the one the code was issued for;
   * the verifier must hash to the challenge. A code presented a second time ends the session the
   * first exchange started (RFC 6749 4.1.2).
   *
   * A link flow's code needs `exchanging`: the session that asked for the link ticket, shown by
   * its access token on this request. Only then is the method added (to that session's person,
   * in the same transaction that spends the code) and a new session started for them; presented
   * by anyone else (no session, another session, another person) the code is spent for nothing
   * and both accounts stay as they were.
   */
  async exchangeCode(input: CodeExchange, allowedClients: readonly FlowClient[], exchanging?: ExchangingSession): Promise<{ tokens: SessionTokens; personId: string }> {
    const { found, now } = await this.checkCode(input, allowedClients);
    if (found.linkTicketId !== null) return this.exchangeLink(found, now, exchanging);
    const sessionId = newId('ses');
    const tokens = await this.dataSource.transaction(async (manager) => {
      if (!(await this.store.withManager(manager).useCode(found.id, now, sessionId))) return undefined;
      return this.options.sessions.start(manager, { id: sessionId, personId: found.personId, client: found.client, signInMethodId: found.signInMethodId });
    });
    if (tokens) return { tokens, personId: found.personId };
    return this.secondUse(found.codeHash);
  }

  private async exchangeLink(found: SignInCodeRecord, now: Date, exchanging: ExchangingSession | undefined): Promise<{ tokens: SessionTokens; personId: string }> {
    const ticket = await this.store.findTicket(found.linkTicketId!);
    const pending = found.pendingMethod === null ? undefined : (JSON.parse(found.pendingMethod) as PendingMethod);
    const owner =
      ticket !== null &&
      pending !== undefined &&
      exchanging !== undefined &&
      ticket.personId === found.personId &&
      exchanging.personId === ticket.personId &&
      ticket.sessionId !== null &&
      exchanging.sessionId === ticket.sessionId;
    if (!owner) {
      if (!(await this.store.useCode(found.id, now, null))) return this.secondUse(found.codeHash);
      throw oauthError(
        'invalid_grant',
        'this code adds a sign-in method to an account: it is exchanged only with the access token (Authorization: Bearer) of the session that asked for the link ticket; start the link again',
      );
    }
    const sessionId = newId('ses');
    let outcome: { tokens: SessionTokens; methodId: string } | undefined;
    try {
      outcome = await retryingRaces(() =>
        this.dataSource.transaction(async (manager) => {
          if (!(await this.store.withManager(manager).useCode(found.id, now, sessionId))) return undefined;
          const linked = await this.options.accounts.attachLinked(manager, found.personId, pending);
          const tokens = await this.options.sessions.start(manager, { id: sessionId, personId: found.personId, client: found.client, signInMethodId: linked.methodId });
          return { tokens, methodId: linked.methodId };
        }),
      );
    } catch (error) {
      // Refused (already_linked): nothing was added, and the code is spent all the same.
      if (error instanceof ApiError) await this.store.useCode(found.id, now, null);
      throw error;
    }
    if (outcome) return { tokens: outcome.tokens, personId: found.personId };
    return this.secondUse(found.codeHash);
  }

  /**
   * The built-in approval page redeems its own one-time codes (client `device-page`): the same
   * checks, but no Cloud session is started (the page keeps a short browser session of its own).
   */
  async redeemForPage(input: Omit<CodeExchange, 'clientId'>): Promise<string> {
    const { found, now } = await this.checkCode({ ...input, clientId: 'device-page' }, ['device-page']);
    if (!(await this.store.useCode(found.id, now, null))) return this.secondUse(found.codeHash);
    return found.personId;
  }

  private async checkCode(input: CodeExchange, allowedClients: readonly FlowClient[]) {
    if (!CODE_VERIFIER.test(input.codeVerifier)) throw oauthError('invalid_request', 'code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~"');
    const found = input.code.startsWith(SIGN_IN_CODE_PREFIX) && input.code.length <= 100 ? await this.store.findCode(hashSecret(input.code)) : null;
    if (!found || !allowedClients.includes(found.client)) throw oauthError('invalid_grant', 'the code is not valid');
    const now = this.clock.now();
    if (found.usedAt) return this.secondUse(found.codeHash);
    if (found.expiresAt.getTime() <= now.getTime()) throw oauthError('invalid_grant', 'the code has expired; sign in again');
    if (input.clientId !== undefined && input.clientId !== found.client) throw oauthError('invalid_grant', 'the code was issued to another client');
    if (input.redirectUri !== found.redirectUri) throw oauthError('invalid_grant', 'redirect_uri is not the one the code was issued for');
    const challenge = createHash('sha256').update(input.codeVerifier, 'ascii').digest('base64url');
    if (!safeEqual(challenge, found.codeChallenge)) throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge');
    return { found, now };
  }

  /** A code presented again (or a concurrent exchange that lost): the session it started ends. */
  private async secondUse(codeHash: string): Promise<never> {
    const winner = await this.store.findCode(codeHash);
    if (winner?.sessionId) await this.options.sessions.end(winner.sessionId);
    throw oauthError('invalid_grant', 'the code was already used; the session it started has ended');
  }
}
