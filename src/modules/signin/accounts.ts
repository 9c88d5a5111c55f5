import type { Logger } from 'pino';
import type { DataSource, EntityManager } from 'typeorm';
import { audit, NO_AUDIT_TRAIL, type AuditEntry, type AuditTrail } from '../../audit.js';
import { isUniqueViolation } from '../../db/errors.js';
import { conflict, type ApiError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { OrganisationService } from '../organisation/service.js';
import type { SignInMethodRecord } from './entities.js';
import { PROVIDER_LABELS, type ProviderIdentity } from '../../identity/identity-provider.js';
import type { SignInProviderId, SignInSettings } from './settings.js';
import { normaliseEmail, RedirectError } from './shared.js';
import type { SignInStore } from './store.js';

/**
 * Accounts and links (spec 4.3, 4.4): the person a sign-in lands on, and the link tickets that
 * add a sign-in method to a signed-in person.
 *
 * - Accounts are found by (provider, subject). A new provider account whose email the provider
 *   verified joins the person whose confirmed method stands for that address (the oldest, if
 *   ever several); an address the provider did not verify never joins anything.
 * - A first sign-in creates the person and their personal organisation.
 * - A link belongs to the session that asked for the ticket; its flow attaches nothing where it
 *   ends: its one-time code adds the method only when exchanged at the token endpoint with that
 *   session's access token (code-exchange.ts). One address (verified) and one provider account
 *   sign in to one person: adding a method that would make a second is `already_linked`.
 */

export const LINK_TICKET_PREFIX = 'platform_lt_';

/** A link in flight: the ticket that started it and the person (and session) it belongs to. */
export interface LinkIntent {
  ticketId: string;
  personId: string;
  sessionId: string | null;
}

/** What a link flow's code adds when its owner exchanges it. */
export interface PendingMethod {
  provider: SignInProviderId;
  identity: ProviderIdentity;
}

/** Whom a sign-in method belongs to after a sign-in or a link. */
export interface SignedInPerson {
  personId: string;
  methodId: string;
  /** The person was created by this sign-in. */
  created: boolean;
}

/** `already_linked` (spec 4.3, 4.4): the method signs in to another person already. */
export const alreadyLinked = (): ApiError => conflict('already_linked', 'this sign-in method already signs in to another account');

/** Two first sign-ins (or links) of the same account raced; the loser reads what the winner wrote. */
export async function retryingRaces<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt < 2 && isUniqueViolation(error)) continue;
      throw error;
    }
  }
}

export interface SignInAccountsOptions {
  config: Pick<SignInSettings, 'linkTicketTtlSeconds'>;
  organisations: OrganisationService;
  logger: Logger;
  /** Where an added method leaves its audit row, in its transaction. */
  trail?: AuditTrail | undefined;
}

export class SignInAccounts {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly store: SignInStore,
    private readonly options: SignInAccountsOptions,
  ) {}

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
        expiresAt: new Date(now.getTime() + this.options.config.linkTicketTtlSeconds * 1000),
        usedAt: null,
        createdAt: now,
      },
      now,
    );
    return { ticket, expiresIn: this.options.config.linkTicketTtlSeconds };
  }

  /**
   * Uses a link ticket (single use, current): it starts one flow, whatever becomes of it. The
   * link takes effect only when that flow's code is exchanged with the ticket's session; a flow
   * that fails leaves the ticket spent for nothing.
   */
  async useLinkTicket(ticket: string | undefined): Promise<LinkIntent | undefined> {
    if (ticket === undefined) return undefined;
    const used = ticket.startsWith(LINK_TICKET_PREFIX) && ticket.length <= 100 ? await this.store.useTicket(hashSecret(ticket), this.clock.now()) : undefined;
    if (!used) throw new RedirectError('invalid_request', 'the link ticket is not valid: unknown, expired or already used');
    return { ticketId: used.id, personId: used.personId, sessionId: used.sessionId };
  }

  // Accounts -----------------------------------------------------------------------------------

  /**
   * The person a provider account (or an address, for `email`) signs in as: found by (provider,
   * subject); otherwise joined by its verified address to the person whose confirmed method
   * stands for it; otherwise created with their personal organisation.
   */
  async resolvePerson(provider: SignInProviderId, identity: ProviderIdentity): Promise<SignedInPerson> {
    return retryingRaces(() => this.dataSource.transaction((manager) => this.resolvePersonOnce(manager, provider, identity)));
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
    if (!created) await this.auditMethodAdded(manager, personId, method);
    return { personId, methodId: method.id, created };
  }

  /**
   * Refuses (409 `already_linked`) to add to `personId` a provider account or address that signs
   * in to another person: the same account (provider and subject), or a verified address that
   * another person's method vouches for (their emailed-code sign-in and the join rule would land
   * in one account or the other).
   */
  async assertLinkable(personId: string, provider: SignInProviderId, identity: ProviderIdentity): Promise<SignInMethodRecord | null> {
    return this.linkable(this.store, personId, provider, identity);
  }

  private async linkable(store: SignInStore, personId: string, provider: SignInProviderId, identity: ProviderIdentity): Promise<SignInMethodRecord | null> {
    const existing = await store.findMethod(provider, identity.subject);
    if (existing && existing.personId !== personId) throw alreadyLinked();
    const { verifiedEmail } = addressesOf(identity);
    if (!existing && verifiedEmail !== undefined && (await store.addressHeldByOther(verifiedEmail, personId))) throw alreadyLinked();
    return existing;
  }

  /** Adds a confirmed link's method to its owner (or refreshes it, when it is theirs already). */
  async attachLinked(manager: EntityManager, personId: string, pending: PendingMethod): Promise<SignedInPerson> {
    const store = this.store.withManager(manager);
    const now = this.clock.now();
    const existing = await this.linkable(store, personId, pending.provider, pending.identity);
    const { email, verifiedEmail } = addressesOf(pending.identity);
    if (existing) {
      await store.updateMethod(existing.id, { email: email ?? null, emailVerified: verifiedEmail !== undefined, lastUsedAt: now });
      return { personId, methodId: existing.id, created: false };
    }
    await this.adoptEmail(manager, personId, verifiedEmail);
    const method = await this.insertMethod(store, personId, pending.provider, pending.identity, verifiedEmail ?? null, now);
    await this.auditMethodAdded(manager, personId, method);
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

  private async auditMethodAdded(manager: EntityManager, personId: string, method: SignInMethodRecord): Promise<void> {
    const entry: AuditEntry = {
      action: 'sign_in_method.added',
      organisationId: (await this.options.organisations.membershipsOf(personId))[0]?.organisation.id ?? '',
      actor: { kind: 'cloud-session', personId },
      target: { personId, signInMethodId: method.id, provider: method.provider },
    };
    await (this.options.trail ?? NO_AUDIT_TRAIL).record(manager, entry);
    audit(this.options.logger, entry);
  }

  /** A person without an email address takes the first verified one a method brings. */
  private async adoptEmail(manager: EntityManager, personId: string, verifiedEmail: string | undefined): Promise<void> {
    if (verifiedEmail === undefined) return;
    const person = await this.options.organisations.findPerson(personId);
    if (person && person.email === null) await this.options.organisations.updatePerson(personId, { email: verifiedEmail }, manager);
  }
}

/** The address a provider named, lower-cased, and the same only when the provider verified it. */
function addressesOf(identity: ProviderIdentity): { email: string | undefined; verifiedEmail: string | undefined } {
  const email = identity.email !== undefined ? normaliseEmail(identity.email).slice(0, 320) : undefined;
  return { email, verifiedEmail: identity.emailVerified ? email : undefined };
}
