import { createHash, createHmac, randomInt } from 'node:crypto';
import { sealJson, unsealJson } from '../../util/seal.js';
import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { audit } from '../../audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import { ApiError, conflict, invalidRequest } from '../../errors.js';
import type { Mailer } from '../../mail/mailer.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret, safeEqual } from '../../util/secrets.js';
import type { OrganisationService } from '../organisation/service.js';
import type { SignInCodeRecord, SignInMethodRecord } from './entities.js';
import { bindingHash, sameBrowser } from './flow-binding.js';
import type { IdentityProviderId, SignInClient, SignInProviderId, SignInSettings } from './settings.js';
import { IdentityProviderError, PROVIDER_LABELS, type IdentityProvider, type ProviderIdentity } from '../../identity/identity-provider.js';
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
 *   verified joins the person whose confirmed method stands for that address (the oldest, if
 *   ever several); an address the provider did not verify never joins anything.
 * - A first sign-in creates the person and their personal organisation.
 * - Every flow belongs to whoever started it: a provider flow to the browser that opened the
 *   start (flow-binding.ts); a link to the session that asked for the ticket. A link flow
 *   attaches nothing where it ends: its one-time code adds the method only when exchanged at the
 *   token endpoint with that session's access token. One address (verified) and one provider
 *   account sign in to one person: adding a method that would make a second is `already_linked`.
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

/** A link in flight: the ticket that started it and the person (and session) it belongs to. */
export interface LinkIntent {
  ticketId: string;
  personId: string;
  sessionId: string | null;
}

interface FlowData {
  request: ClientRequest;
  codeVerifier: string;
  nonce: string | undefined;
  link: LinkIntent | undefined;
}

/** What a link flow's code adds when its owner exchanges it. */
interface PendingMethod {
  provider: SignInProviderId;
  identity: ProviderIdentity;
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

/** The session presenting a link flow's code (its access token on the exchange), if any. */
export interface ExchangingSession {
  sessionId: string;
  personId: string;
}

/** Whom a sign-in method belongs to after a sign-in or a link. */
export interface SignedInPerson {
  personId: string;
  methodId: string;
  /** The person was created by this sign-in. */
  created: boolean;
}

export interface SignInServiceOptions {
  config: SignInSettings;
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
  private readonly config: SignInSettings;

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

  /** A ticket for the person's session (`sessionId`): only that session completes the link. */
  async issueLinkTicket(personId: string, sessionId: string): Promise<{ ticket: string; expiresIn: number }> {
    const now = this.clock.now();
    const ticket = newSecret(LINK_TICKET_PREFIX);
    await this.store.insertTicket(
      {
        id: newId('lnk'),
        ticketHash: hashSecret(ticket),
        personId,
        sessionId,
        expiresAt: new Date(now.getTime() + this.config.linkTicketTtlSeconds * 1000),
        usedAt: null,
        createdAt: now,
      },
      now,
    );
    return { ticket, expiresIn: this.config.linkTicketTtlSeconds };
  }

  /**
   * Uses a link ticket (single use, current): it starts one flow, whatever becomes of it. The
   * link takes effect only when that flow's code is exchanged with the ticket's session; a flow
   * that fails leaves the ticket spent for nothing.
   */
  private async useLinkTicket(ticket: string | undefined): Promise<LinkIntent | undefined> {
    if (ticket === undefined) return undefined;
    const used = ticket.startsWith(LINK_TICKET_PREFIX) && ticket.length <= 100 ? await this.store.useTicket(hashSecret(ticket), this.clock.now()) : undefined;
    if (!used) throw new RedirectError('invalid_request', 'the link ticket is not valid: unknown, expired or already used');
    return { ticketId: used.id, personId: used.personId, sessionId: used.sessionId };
  }

  // Provider flows -----------------------------------------------------------------------------

  /** How long a flow (and the browser binding cookie that goes with it) lasts. */
  get flowTtlSeconds(): number {
    return this.config.flowTtlSeconds;
  }

  /**
   * Starts a sign-in at `providerId`: keeps the flow server-side (found by the hash of the state
   * sent to the provider, its secrets sealed under that state, bound to the hash of `browser`,
   * the binding cookie the caller sets) and answers where to send the browser. Throws
   * RedirectError for anything the client must hear at its redirect URI.
   */
  async startProvider(providerId: string, request: ClientRequest, link: string | undefined, browser: string): Promise<URL> {
    const provider = this.provider(providerId);
    if (!provider) throw new RedirectError('invalid_request', `provider must be one of the enabled providers: ${[...this.options.providers.keys()].join(', ') || 'none'}`);
    const linkIntent = await this.useLinkTicket(link);
    const state = newSecret(FLOW_STATE_PREFIX);
    let started;
    try {
      started = await provider.start(this.callbackUri(provider.id), state);
    } catch (error) {
      if (error instanceof IdentityProviderError) throw new RedirectError('temporarily_unavailable', `${provider.label} cannot be used just now`);
      throw error;
    }
    const now = this.clock.now();
    const data: FlowData = { request, codeVerifier: started.codeVerifier, nonce: started.nonce, link: linkIntent };
    await this.store.insertFlow(
      {
        stateHash: hashSecret(state),
        provider: provider.id,
        sealed: sealFlow(data, state),
        browserHash: bindingHash(browser),
        expiresAt: new Date(now.getTime() + this.config.flowTtlSeconds * 1000),
        createdAt: now,
      },
      now,
    );
    return started.authorizationUrl;
  }

  /**
   * The provider's answer at our callback, in the browser whose binding cookie is `browser`.
   * Answers the client's request and either the URL to send the browser back to, or undefined
   * when no flow matches (unknown, expired, used, or another provider's: nothing safe to redirect
   * to). A flow is taken out (single use) before anything else happens to it.
   *
   * In another browser than the one that started it, the flow ends there: `access_denied` at the
   * client's redirect URI, the provider's code never redeemed, nobody created, nothing attached.
   * A link flow ends with a code that signs nobody in (see `exchangeCode`).
   */
  async finishProvider(providerId: IdentityProviderId, callbackUrl: URL, browser: string | undefined): Promise<{ request: ClientRequest; redirectTo: URL } | undefined> {
    const state = callbackUrl.searchParams.get('state');
    if (!state || !state.startsWith(FLOW_STATE_PREFIX) || state.length > 100) return undefined;
    const flow = await this.store.takeFlow(hashSecret(state), providerId);
    if (!flow || flow.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    const data = unsealFlow(flow.sealed, state);
    const provider = this.provider(providerId);
    if (!data || !provider) return undefined;
    try {
      if (!sameBrowser(flow.browserHash, browser)) {
        throw new RedirectError('access_denied', 'this sign-in was started in another browser: start it again here');
      }
      const identity = await this.guardProvider(() => provider.finish(callbackUrl, this.callbackUri(provider.id), { state, codeVerifier: data.codeVerifier, nonce: data.nonce }));
      if (data.link) {
        // Told early, in the browser; decided again, for good, when the owner exchanges the code.
        await this.assertLinkable(this.store, data.link.personId, provider.id, identity).catch((error: unknown) => {
          if (error instanceof ApiError && error.code === 'already_linked') throw new RedirectError('already_linked', error.message);
          throw error;
        });
        return { request: data.request, redirectTo: await this.successRedirect(data.request, await this.issueLinkCode(data.request, data.link, { provider: provider.id, identity })) };
      }
      const person = await this.resolvePerson(provider.id, identity);
      return { request: data.request, redirectTo: await this.successRedirect(data.request, await this.issueCode(data.request, person)) };
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

  private async successRedirect(request: ClientRequest, code: string): Promise<URL> {
    const url = new URL(request.redirectUri);
    url.searchParams.append('code', code);
    if (request.state !== undefined) url.searchParams.append('state', request.state);
    // RFC 9207: the answer names who issued it, so a client talking to several servers cannot mix them up.
    url.searchParams.append('iss', this.origin);
    return url;
  }

  // Accounts -----------------------------------------------------------------------------------

  /**
   * The person a provider account (or an address, for `email`) signs in as: found by (provider,
   * subject); otherwise joined by its verified address to the person whose confirmed method
   * stands for it; otherwise created with their personal organisation.
   */
  async resolvePerson(provider: SignInProviderId, identity: ProviderIdentity): Promise<SignedInPerson> {
    return this.retryingRaces(() => this.dataSource.transaction((manager) => this.resolvePersonOnce(manager, provider, identity)));
  }

  /** Two first sign-ins (or links) of the same account raced; the loser reads what the winner wrote. */
  private async retryingRaces<T>(work: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt < 2 && isUniqueViolation(error)) continue;
        throw error;
      }
    }
  }

  private async resolvePersonOnce(manager: EntityManager, provider: SignInProviderId, identity: ProviderIdentity): Promise<SignedInPerson> {
    const store = this.store.withManager(manager);
    const now = this.clock.now();
    const { email, verifiedEmail } = addressesOf(identity);
    const existing = await store.findMethod(provider, identity.subject);
    if (existing) {
      // The provider's word on the address is refreshed at every sign-in; a method stands for
      // its confirmed address only while the provider still names that address.
      await store.updateMethod(existing.id, { email: email ?? null, emailVerified: verifiedEmail !== undefined, lastUsedAt: now });
      await this.adoptEmail(manager, existing.personId, verifiedEmail);
      return { personId: existing.personId, methodId: existing.id, created: false };
    }
    // The join rule: a verified address joins the person whose confirmed method stands for it.
    let personId = verifiedEmail !== undefined ? (await store.findAddressAnchor(verifiedEmail))?.personId : undefined;
    let created = false;
    if (personId === undefined) {
      const name = identity.name?.trim() || email || `${PROVIDER_LABELS[provider]} user`;
      const account = await this.options.organisations.createPersonalAccount(manager, { name, email: verifiedEmail ?? null });
      personId = account.person.id;
      created = true;
    } else {
      await this.adoptEmail(manager, personId, verifiedEmail);
    }
    // A method stands for its address unless another person's method vouches for it already
    // (one the join rule does not follow: an unconfirmed one): one address, one account.
    const confirmed = verifiedEmail !== undefined && !(await store.addressHeldByOther(verifiedEmail, personId)) ? verifiedEmail : null;
    const method = await this.insertMethod(store, personId, provider, identity, confirmed, now);
    if (!created) await this.auditMethodAdded(personId, method);
    return { personId, methodId: method.id, created };
  }

  /**
   * Refuses (409 `already_linked`) to add to `personId` a provider account or address that signs
   * in to another person: the same account (provider and subject), or a verified address that
   * another person's method vouches for (their emailed-code sign-in and the join rule would land
   * in one account or the other).
   */
  private async assertLinkable(store: SignInStore, personId: string, provider: SignInProviderId, identity: ProviderIdentity): Promise<SignInMethodRecord | null> {
    const existing = await store.findMethod(provider, identity.subject);
    if (existing && existing.personId !== personId) throw alreadyLinked();
    const { verifiedEmail } = addressesOf(identity);
    if (!existing && verifiedEmail !== undefined && (await store.addressHeldByOther(verifiedEmail, personId))) throw alreadyLinked();
    return existing;
  }

  /** Adds a confirmed link's method to its owner (or refreshes it, when it is theirs already). */
  private async attachLinked(manager: EntityManager, personId: string, pending: PendingMethod): Promise<SignedInPerson> {
    const store = this.store.withManager(manager);
    const now = this.clock.now();
    const existing = await this.assertLinkable(store, personId, pending.provider, pending.identity);
    const { email, verifiedEmail } = addressesOf(pending.identity);
    if (existing) {
      await store.updateMethod(existing.id, { email: email ?? null, emailVerified: verifiedEmail !== undefined, lastUsedAt: now });
      return { personId, methodId: existing.id, created: false };
    }
    await this.adoptEmail(manager, personId, verifiedEmail);
    const method = await this.insertMethod(store, personId, pending.provider, pending.identity, verifiedEmail ?? null, now);
    await this.auditMethodAdded(personId, method);
    return { personId, methodId: method.id, created: false };
  }

  private async insertMethod(
    store: SignInStore,
    personId: string,
    provider: SignInProviderId,
    identity: ProviderIdentity,
    confirmedEmail: string | null,
    now: Date,
  ): Promise<SignInMethodRecord> {
    const { email, verifiedEmail } = addressesOf(identity);
    const method: SignInMethodRecord = {
      id: newId('sim'),
      personId,
      provider,
      subject: identity.subject,
      email: email ?? null,
      emailVerified: verifiedEmail !== undefined,
      confirmedEmail,
      createdAt: now,
      lastUsedAt: now,
    };
    await store.insertMethod(method);
    return method;
  }

  private async auditMethodAdded(personId: string, method: SignInMethodRecord): Promise<void> {
    audit(this.options.logger, {
      action: 'sign_in_method.added',
      organisationId: (await this.options.organisations.membershipsOf(personId))[0]?.organisation.id ?? '',
      actor: { kind: 'cloud-session', personId },
      target: { personId, signInMethodId: method.id, provider: method.provider },
    });
  }

  /** A person without an email address takes the first verified one a method brings. */
  private async adoptEmail(manager: EntityManager, personId: string, verifiedEmail: string | undefined): Promise<void> {
    if (verifiedEmail === undefined) return;
    const person = await this.options.organisations.findPerson(personId);
    if (person && person.email === null) await this.options.organisations.updatePerson(personId, { email: verifiedEmail }, manager);
  }

  // One-time codes and the token endpoint ------------------------------------------------------

  private async issueCode(request: ClientRequest, person: SignedInPerson): Promise<string> {
    return this.insertCode(request, person.personId, { signInMethodId: person.methodId, linkTicketId: null, pendingMethod: null });
  }

  /** A link flow's code: for the ticket's person, adding `pending` only when its owner exchanges it. */
  private async issueLinkCode(request: ClientRequest, link: LinkIntent, pending: PendingMethod): Promise<string> {
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
      outcome = await this.retryingRaces(() =>
        this.dataSource.transaction(async (manager) => {
          if (!(await this.store.withManager(manager).useCode(found.id, now, sessionId))) return undefined;
          const linked = await this.attachLinked(manager, found.personId, pending);
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
      linkIntent = await this.useLinkTicket(link);
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
        `Sent by ${this.origin}`,
        '',
      ].join('\r\n'),
    };
  }

  /**
   * `POST /auth/v1/email/verify`: checks the address's current code (five tries, compared in
   * constant time), then answers a one-time code for the token endpoint and the client's state.
   * For a code asked with a link ticket, the one-time code is a link flow's (see `exchangeCode`):
   * 409 `already_linked` here already when the address signs in to another person.
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
    if (current.linkPersonId !== null) {
      const ticket = current.linkTicketId === null ? null : await this.store.findTicket(current.linkTicketId);
      if (!ticket || ticket.personId !== current.linkPersonId) throw invalid();
      await this.assertLinkable(this.store, ticket.personId, 'email', identity);
      const link: LinkIntent = { ticketId: ticket.id, personId: ticket.personId, sessionId: ticket.sessionId };
      return { code: await this.issueLinkCode(request, link, { provider: 'email', identity }), state: current.state, personId: ticket.personId };
    }
    const person = await this.resolvePerson('email', identity);
    return { code: await this.issueCode(request, person), state: current.state, personId: person.personId };
  }
}

/** The address a provider named, lower-cased, and the same only when the provider verified it. */
function addressesOf(identity: ProviderIdentity): { email: string | undefined; verifiedEmail: string | undefined } {
  const email = identity.email !== undefined ? normaliseEmail(identity.email).slice(0, 320) : undefined;
  return { email, verifiedEmail: identity.emailVerified ? email : undefined };
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
