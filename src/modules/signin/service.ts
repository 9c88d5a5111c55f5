import { createHash, createHmac, randomInt } from 'node:crypto';
import { sealJson, unsealJson } from '../../util/seal.js';
import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { audit } from '../../audit.js';
import type { CloudSignInConfig, IdentityProviderId, SignInClient, SignInProviderId } from '../../config.js';
import { isUniqueViolation } from '../../db/errors.js';
import { ApiError, conflict, invalidRequest } from '../../http/errors.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret, safeEqual } from '../../util/secrets.js';
import type { OrganisationService } from '../organisation/service.js';
import type { SignInMethodRecord } from './entities.js';
import { IdentityProviderError, PROVIDER_LABELS, type IdentityProvider, type ProviderIdentity } from './identity-provider.js';
import { oauthError, type CloudSessions, type SessionTokens } from './sessions.js';
import { SignInStore } from './store.js';
import { checkMailCaps, MAIL_CAP_DAY_MS } from './mail-caps.js';

/**
 * Cloud sign-in (spec 4.3): the service runs its own authorization-code flow with the person's
 * identity provider (or mails them a six-digit code), finds or creates the person, and hands
 * the client a one-time code bound to the client, its redirect URI and its PKCE challenge, which
 * the client exchanges for a session at the token endpoint.
 *
 * - Accounts are found by (provider, subject). A new provider account whose email the provider
 *   verified joins the person who already signs in with that verified address; an address the
 *   provider did not verify never joins anything (it starts a new person).
 * - A first sign-in creates the person and their personal organisation.
 * - With a link ticket the method is added to the ticket's person instead; a method that already
 *   signs in to another person is refused (`already_linked`).
 */

export const SIGN_IN_CODE_PREFIX = 'platform_sc_';
export const FLOW_STATE_PREFIX = 'platform_fs_';
export const LINK_TICKET_PREFIX = 'platform_lt_';

/** The built-in approval page is a client of this flow too, with one redirect URI of its own. */
export type FlowClient = SignInClient | 'device-page';
export const DEVICE_PAGE_CALLBACK = '/device/callback';

/** RFC 7636 4.1 and 4.2: a verifier of 43 to 128 unreserved characters; an S256 challenge of 43. */
export const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
export const MAX_STATE_LENGTH = 500;

/** What a client asked for when it started a sign-in. */
export interface ClientRequest {
  client: FlowClient;
  redirectUri: string;
  codeChallenge: string;
  state: string | undefined;
}

/** A refusal the client hears at its redirect URI (RFC 6749 4.1.2.1), never as a JSON answer. */
export class RedirectError extends Error {
  constructor(
    readonly code: 'invalid_request' | 'access_denied' | 'already_linked' | 'temporarily_unavailable' | 'server_error',
    message: string,
  ) {
    super(message);
    this.name = 'RedirectError';
  }
}

interface FlowData {
  request: ClientRequest;
  codeVerifier: string;
  nonce: string | undefined;
  linkPersonId: string | undefined;
}

const FLOW = 'platform sign-in flow v1';
const sealFlow = (data: FlowData, state: string): string => sealJson(data, state, 'sign-in flow', FLOW);
const unsealFlow = (sealed: string, state: string): FlowData | undefined => unsealJson<FlowData>(sealed, state, 'sign-in flow', FLOW);

/** Email addresses compare case-insensitively everywhere (issue 10's invitations too). */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** `already_linked` (spec 4.3, 4.4): the method signs in to another person already. */
export const alreadyLinked = (): ApiError => conflict('already_linked', 'this sign-in method already signs in to another account');

export interface CodeExchange {
  code: string;
  codeVerifier: string;
  redirectUri: string;
  clientId: string | undefined;
}

/** Whom a sign-in method belongs to after a sign-in or a link. */
export interface SignedInPerson {
  personId: string;
  methodId: string;
  /** The person was created by this sign-in. */
  created: boolean;
}

export interface SignInServiceOptions {
  config: CloudSignInConfig;
  /** `serviceOrigin` (src/http/origin.ts): PLATFORM_BASE_URL, which Cloud requires. */
  origin: string | undefined;
  providers: ReadonlyMap<IdentityProviderId, IdentityProvider>;
  organisations: OrganisationService;
  sessions: CloudSessions;
  mailer: Mailer;
  logger: Logger;
  /** The key emailed codes are stored under (HMAC-SHA-256). */
  codeKey: Buffer;
}

export class SignInService {
  private readonly store: SignInStore;
  private readonly config: CloudSignInConfig;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly options: SignInServiceOptions,
  ) {
    this.store = new SignInStore(dataSource);
    this.config = options.config;
  }

  /** The providers a person can choose, in display order: enabled ones and email. */
  providers(): { id: SignInProviderId; label: string }[] {
    return this.config.providerOrder.filter((id) => id === 'email' || this.options.providers.has(id)).map((id) => ({ id, label: PROVIDER_LABELS[id] }));
  }

  provider(id: string): IdentityProvider | undefined {
    return this.options.providers.get(id as IdentityProviderId);
  }

  /** Whether `redirectUri` is registered, exactly, for `client`. */
  isRegistered(client: unknown, redirectUri: unknown): client is FlowClient {
    if (typeof redirectUri !== 'string') return false;
    if (client === 'console' || client === 'mobile') return this.config.redirectUris[client].includes(redirectUri);
    return false;
  }

  /** The service's own origin, the start of every absolute URL sign-in builds. */
  get origin(): string {
    if (this.options.origin === undefined) throw new Error('Cloud sign-in needs PLATFORM_BASE_URL');
    return this.options.origin;
  }

  /** Where the device page's sign-ins come back. */
  get devicePageRedirectUri(): string {
    return `${this.origin}${DEVICE_PAGE_CALLBACK}`;
  }

  callbackUri(provider: IdentityProviderId): string {
    return `${this.origin}/auth/v1/callback/${provider}`;
  }

  // Link tickets -------------------------------------------------------------------------------

  async issueLinkTicket(personId: string): Promise<{ ticket: string; expiresIn: number }> {
    const now = this.clock.now();
    const ticket = newSecret(LINK_TICKET_PREFIX);
    await this.store.insertTicket(
      { id: newId('lnk'), ticketHash: hashSecret(ticket), personId, expiresAt: new Date(now.getTime() + this.config.linkTicketTtlSeconds * 1000), usedAt: null, createdAt: now },
      now,
    );
    return { ticket, expiresIn: this.config.linkTicketTtlSeconds };
  }

  /** Uses a link ticket (single use, current): the person it was issued to. */
  private async useLinkTicket(ticket: string | undefined): Promise<string | undefined> {
    if (ticket === undefined) return undefined;
    const personId = ticket.startsWith(LINK_TICKET_PREFIX) && ticket.length <= 100 ? await this.store.useTicket(hashSecret(ticket), this.clock.now()) : undefined;
    if (!personId) throw new RedirectError('invalid_request', 'the link ticket is not valid: unknown, expired or already used');
    return personId;
  }

  // Provider flows -----------------------------------------------------------------------------

  /**
   * Starts a sign-in at `providerId`: keeps the flow server-side (found by the hash of the state
   * sent to the provider, its secrets sealed under that state) and answers where to send the
   * browser. Throws RedirectError for anything the client must hear at its redirect URI.
   */
  async startProvider(providerId: string, request: ClientRequest, link: string | undefined): Promise<URL> {
    const provider = this.provider(providerId);
    if (!provider) throw new RedirectError('invalid_request', `provider must be one of the enabled providers: ${[...this.options.providers.keys()].join(', ') || 'none'}`);
    const linkPersonId = await this.useLinkTicket(link);
    const state = newSecret(FLOW_STATE_PREFIX);
    let started;
    try {
      started = await provider.start(this.callbackUri(provider.id), state);
    } catch (error) {
      if (error instanceof IdentityProviderError) throw new RedirectError('temporarily_unavailable', `${provider.label} cannot be used just now`);
      throw error;
    }
    const now = this.clock.now();
    const data: FlowData = { request, codeVerifier: started.codeVerifier, nonce: started.nonce, linkPersonId };
    await this.store.insertFlow(
      { stateHash: hashSecret(state), provider: provider.id, sealed: sealFlow(data, state), expiresAt: new Date(now.getTime() + this.config.flowTtlSeconds * 1000), createdAt: now },
      now,
    );
    return started.authorizationUrl;
  }

  /**
   * The provider's answer at our callback. Answers the client's request and either the URL to
   * send the browser back to, or undefined when no flow matches (unknown, expired, used, or
   * another provider's: nothing safe to redirect to).
   */
  async finishProvider(providerId: IdentityProviderId, callbackUrl: URL): Promise<{ request: ClientRequest; redirectTo: URL } | undefined> {
    const state = callbackUrl.searchParams.get('state');
    if (!state || !state.startsWith(FLOW_STATE_PREFIX) || state.length > 100) return undefined;
    const flow = await this.store.takeFlow(hashSecret(state), providerId);
    if (!flow || flow.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    const data = unsealFlow(flow.sealed, state);
    const provider = this.provider(providerId);
    if (!data || !provider) return undefined;
    try {
      const identity = await this.guardProvider(() => provider.finish(callbackUrl, this.callbackUri(provider.id), { state, codeVerifier: data.codeVerifier, nonce: data.nonce }));
      const person = await this.signIn(provider.id, identity, data.linkPersonId);
      return { request: data.request, redirectTo: await this.successRedirect(data.request, person) };
    } catch (error) {
      if (error instanceof RedirectError) return { request: data.request, redirectTo: errorRedirect(data.request, error, this.origin) };
      throw error;
    }
  }

  private async guardProvider<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof IdentityProviderError)) throw error;
      if (error.reason === 'refused') throw new RedirectError('access_denied', error.message);
      if (error.reason === 'unavailable') throw new RedirectError('temporarily_unavailable', error.message);
      throw new RedirectError('server_error', error.message);
    }
  }

  private async successRedirect(request: ClientRequest, person: SignedInPerson): Promise<URL> {
    const code = await this.issueCode(request, person);
    const url = new URL(request.redirectUri);
    url.searchParams.append('code', code);
    if (request.state !== undefined) url.searchParams.append('state', request.state);
    // RFC 9207: the answer names who issued it, so a client talking to several servers cannot mix them up.
    url.searchParams.append('iss', this.origin);
    return url;
  }

  // Accounts -----------------------------------------------------------------------------------

  /**
   * The person a provider account signs in as, created on first sight; with `linkPersonId` the
   * account is added to that person instead. Throws RedirectError `already_linked` when linking
   * an account that signs in to someone else.
   */
  private async signIn(provider: SignInProviderId, identity: ProviderIdentity, linkPersonId: string | undefined): Promise<SignedInPerson> {
    try {
      return await this.resolvePerson(provider, identity, linkPersonId);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'already_linked') throw new RedirectError('already_linked', error.message);
      throw error;
    }
  }

  /** The same, throwing 409 `already_linked` (emailed codes answer JSON). */
  async resolvePerson(provider: SignInProviderId, identity: ProviderIdentity, linkPersonId: string | undefined): Promise<SignedInPerson> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.dataSource.transaction((manager) => this.resolvePersonOnce(manager, provider, identity, linkPersonId));
      } catch (error) {
        // Two first sign-ins of the same account raced; the loser reads what the winner wrote.
        if (attempt < 2 && isUniqueViolation(error)) continue;
        throw error;
      }
    }
  }

  private async resolvePersonOnce(manager: EntityManager, provider: SignInProviderId, identity: ProviderIdentity, linkPersonId: string | undefined): Promise<SignedInPerson> {
    const store = this.store.withManager(manager);
    const now = this.clock.now();
    const email = identity.email !== undefined ? normaliseEmail(identity.email).slice(0, 320) : undefined;
    const verifiedEmail = identity.emailVerified ? email : undefined;
    const existing = await store.findMethod(provider, identity.subject);
    if (existing) {
      if (linkPersonId !== undefined && existing.personId !== linkPersonId) throw alreadyLinked();
      // The provider's word on the address is refreshed at every sign-in.
      await store.updateMethod(existing.id, { email: email ?? null, emailVerified: verifiedEmail !== undefined, lastUsedAt: now });
      await this.adoptEmail(manager, existing.personId, verifiedEmail);
      return { personId: existing.personId, methodId: existing.id, created: false };
    }
    if (provider === 'email' && linkPersonId !== undefined && verifiedEmail !== undefined) {
      // An address another person signs in with through a provider that verified it would sign
      // them in by emailed code too (the join rule): it is theirs, not this person's to add.
      const holder = await store.findVerifiedMethodByEmail(verifiedEmail);
      if (holder && holder.personId !== linkPersonId) throw alreadyLinked();
    }
    let personId = linkPersonId;
    let created = false;
    if (personId === undefined && verifiedEmail !== undefined) {
      // A verified address joins the person who already signs in with that verified address.
      personId = (await store.findVerifiedMethodByEmail(verifiedEmail))?.personId;
    }
    if (personId === undefined) {
      const name = identity.name?.trim() || email || `${PROVIDER_LABELS[provider]} user`;
      const account = await this.options.organisations.createPersonalAccount(manager, { name, email: verifiedEmail ?? null });
      personId = account.person.id;
      created = true;
    } else {
      await this.adoptEmail(manager, personId, verifiedEmail);
    }
    const method: SignInMethodRecord = {
      id: newId('sim'),
      personId,
      provider,
      subject: identity.subject,
      email: email ?? null,
      emailVerified: verifiedEmail !== undefined,
      createdAt: now,
      lastUsedAt: now,
    };
    await store.insertMethod(method);
    if (!created) {
      audit(this.options.logger, {
        action: 'sign_in_method.added',
        organisationId: (await this.options.organisations.membershipsOf(personId))[0]?.organisation.id ?? '',
        actor: { kind: 'cloud-session', personId },
        target: { personId, signInMethodId: method.id, provider },
      });
    }
    return { personId, methodId: method.id, created };
  }

  /** A person without an email address takes the first verified one a method brings. */
  private async adoptEmail(manager: EntityManager, personId: string, verifiedEmail: string | undefined): Promise<void> {
    if (verifiedEmail === undefined) return;
    const person = await this.options.organisations.findPerson(personId);
    if (person && person.email === null) await this.options.organisations.updatePerson(personId, { email: verifiedEmail }, manager);
  }

  // One-time codes and the token endpoint ------------------------------------------------------

  private async issueCode(request: ClientRequest, person: SignedInPerson): Promise<string> {
    const now = this.clock.now();
    const code = newSecret(SIGN_IN_CODE_PREFIX);
    await this.store.insertCode(
      {
        id: newId('sgc'),
        codeHash: hashSecret(code),
        personId: person.personId,
        client: request.client,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        signInMethodId: person.methodId,
        expiresAt: new Date(now.getTime() + this.config.signInCodeTtlSeconds * 1000),
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
   */
  async exchangeCode(input: CodeExchange, allowedClients: readonly FlowClient[]): Promise<{ tokens: SessionTokens; personId: string }> {
    const { found, now } = await this.checkCode(input, allowedClients);
    const sessionId = newId('ses');
    const tokens = await this.dataSource.transaction(async (manager) => {
      if (!(await this.store.withManager(manager).useCode(found.id, now, sessionId))) return undefined;
      return this.options.sessions.start(manager, { id: sessionId, personId: found.personId, client: found.client, signInMethodId: found.signInMethodId });
    });
    if (tokens) return { tokens, personId: found.personId };
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

  // Emailed codes ------------------------------------------------------------------------------

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
    let linkPersonId: string | undefined;
    try {
      linkPersonId = await this.useLinkTicket(link);
    } catch (error) {
      if (error instanceof RedirectError) throw invalidRequest(error.message, { field: 'body.link' });
      throw error;
    }
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - 3_600_000);
    const addressHash = hashSecret(`email:${email}`);
    const id = newId('emc');
    const digits = String(randomInt(0, 1_000_000)).padStart(6, '0');
    // Rows stay a day, for the daily cap (mail-caps.ts), which is checked before the code is made.
    await this.store.purgeEmailCodes(new Date(now.getTime() - MAIL_CAP_DAY_MS));
    await checkMailCaps(this.store, this.config, addressHash, now);
    await this.store.insertEmailCode({
      id,
      addressHash,
      codeHash: this.codeHash(id, digits),
      tries: 0,
      client: request.client,
      redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge,
      state: request.state ?? '',
      linkPersonId: linkPersonId ?? null,
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
      await this.options.mailer.send(this.codeMail(email, digits, linkPersonId !== undefined));
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
        `Sent by ${this.origin}`,
        '',
      ].join('\r\n'),
    };
  }

  /**
   * `POST /auth/v1/email/verify`: checks the address's current code (five tries, compared in
   * constant time), then answers a one-time code for the token endpoint and the client's state.
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
    const person = await this.resolvePerson('email', { subject: email, email, emailVerified: true, name: undefined }, current.linkPersonId ?? undefined);
    const request: ClientRequest = { client: current.client, redirectUri: current.redirectUri, codeChallenge: current.codeChallenge, state: current.state };
    return { code: await this.issueCode(request, person), state: current.state, personId: person.personId };
  }
}

/** The client's redirect URI with `error`, `error_description`, `state` and `iss`. */
export function errorRedirect(request: Pick<ClientRequest, 'redirectUri' | 'state'>, error: RedirectError, issuer: string): URL {
  const url = new URL(request.redirectUri);
  url.searchParams.append('error', error.code);
  url.searchParams.append('error_description', error.message);
  if (request.state !== undefined) url.searchParams.append('state', request.state);
  url.searchParams.append('iss', issuer);
  return url;
}
