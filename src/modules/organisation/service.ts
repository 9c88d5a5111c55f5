import { NO_AUDIT_TRAIL, type AuditActor, type AuditEntry, type AuditTrail } from '../../audit.js';
import type { DataSource, EntityManager } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';
import { isUniqueViolation, withRetries } from '../../db/errors.js';
import { conflict, invalidRequest, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { HOST_NAME } from '../../domain/organisation.js';
import { RemovedMember, type SigningInIdentity } from '../../auth/lookups.js';
import type { OrganisationKind, OrganisationPlan, OrganisationRecord, PersonRecord } from './entities.js';
import { OrganisationStore, type MemberView } from './store.js';

/** Edition by the rule of spec section 1. */
export type Edition = 'enterprise' | 'teams' | 'free';

export function editionOf(organisation: Pick<OrganisationRecord, 'kind'>): Edition {
  switch (organisation.kind) {
    case 'enterprise':
      return 'enterprise';
    case 'team':
      return 'teams';
    case 'personal':
      return 'free';
  }
}

export interface OidcSettings {
  issuer: string;
  clientId: string;
  apiScope: string;
  audience: string;
  roleClaim?: string | undefined;
}

export interface NewOrganisation {
  name: string;
  kind: OrganisationKind;
  plan?: OrganisationPlan | undefined;
  hosts?: readonly string[];
  oidc?: OidcSettings | undefined;
}

export interface SignedInPerson {
  person: PersonRecord;
  role: OrganisationRole;
}

export function normaliseHost(host: string): string {
  const lower = host.trim().toLowerCase().replace(/\.$/, '');
  if (!HOST_NAME.test(lower)) throw invalidRequest(`"${host}" is not a host name`);
  return lower;
}

function defaultPlan(kind: OrganisationKind): OrganisationPlan {
  return kind === 'enterprise' ? 'enterprise' : kind === 'team' ? 'teams' : 'free';
}

/** A new Cloud organisation (a person's own, or a team): no host names, no identity provider of its own. */
export function cloudOrganisation(name: string, kind: 'personal' | 'team', plan: OrganisationPlan, now: Date): OrganisationRecord {
  return {
    id: newId('org'),
    name,
    kind,
    plan,
    oidcIssuer: null,
    oidcClientId: null,
    oidcApiScope: null,
    oidcAudience: null,
    oidcRoleClaim: null,
    createdAt: now,
  };
}

export class OrganisationService {
  private readonly store: OrganisationStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    /** Where administrative changes made with an actor leave their audit row, in their transaction. */
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
  ) {
    this.store = new OrganisationStore(dataSource);
  }

  findById(id: string) {
    return this.store.findById(id);
  }

  findByHost(host: string) {
    return this.store.findByHost(host);
  }

  findByIssuer(issuer: string) {
    return this.store.findByIssuer(issuer);
  }

  list() {
    return this.store.list();
  }

  hostsOf(organisationId: string) {
    return this.store.hostsOf(organisationId);
  }

  count() {
    return this.store.count();
  }

  async create(input: NewOrganisation, actor?: AuditActor): Promise<OrganisationRecord> {
    const name = input.name.trim();
    if (name.length < 1 || name.length > 200) throw invalidRequest('name must be 1 to 200 characters');
    const hosts = [...new Set((input.hosts ?? []).map(normaliseHost))];
    const organisation: OrganisationRecord = {
      id: newId('org'),
      name,
      kind: input.kind,
      plan: input.plan ?? defaultPlan(input.kind),
      oidcIssuer: input.oidc?.issuer ?? null,
      oidcClientId: input.oidc?.clientId ?? null,
      oidcApiScope: input.oidc?.apiScope ?? null,
      oidcAudience: input.oidc?.audience ?? null,
      oidcRoleClaim: input.oidc?.roleClaim ?? null,
      createdAt: this.clock.now(),
    };
    try {
      await this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        for (const host of hosts) {
          if (await store.hostTaken(host)) throw conflict('host_taken', `host name ${host} already serves an organisation`);
        }
        await store.insert(organisation, hosts);
        if (actor) {
          await this.trail.record(manager, { action: 'organisation.created', organisationId: organisation.id, actor, target: { hosts: hosts.join(','), issuer: organisation.oidcIssuer } });
        }
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('conflict', 'a host name or issuer is already in use by another organisation');
      throw error;
    }
    return organisation;
  }

  async configure(
    id: string,
    changes: { name?: string; plan?: OrganisationPlan; oidc?: OidcSettings; addHosts?: string[]; removeHosts?: string[] },
    /** The change's audit entry, recorded in its transaction. */
    audited?: AuditEntry,
  ): Promise<OrganisationRecord> {
    const organisation = await this.store.findById(id);
    if (!organisation) throw notFound('no such organisation');
    const update: Partial<OrganisationRecord> = {};
    if (changes.name !== undefined) update.name = changes.name.trim();
    if (changes.plan !== undefined) update.plan = changes.plan;
    if (changes.oidc) {
      update.oidcIssuer = changes.oidc.issuer;
      update.oidcClientId = changes.oidc.clientId;
      update.oidcApiScope = changes.oidc.apiScope;
      update.oidcAudience = changes.oidc.audience;
      update.oidcRoleClaim = changes.oidc.roleClaim ?? null;
    }
    try {
      await this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        if (Object.keys(update).length) await store.update(id, update);
        await store.removeHosts(id, (changes.removeHosts ?? []).map(normaliseHost));
        await store.addHosts(id, (changes.addHosts ?? []).map(normaliseHost));
        if (audited) await this.trail.record(manager, audited);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('conflict', 'a host name or issuer is already in use by another organisation');
      throw error;
    }
    return (await this.store.findById(id)) as OrganisationRecord;
  }

  /**
   * The person behind a verified person token. Created on first sight (person, identity and a
   * membership); name and email follow the provider. A given `role` (the organisation's role
   * claim is configured) replaces the stored one; without it the stored role stays (`member` for
   * a new person).
   */
  async signIn(
    organisation: OrganisationRecord,
    identity: SigningInIdentity,
  ): Promise<SignedInPerson> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.signInOnce(organisation, identity);
      } catch (error) {
        // Two first requests of the same person raced; the loser reads what the winner wrote.
        if (attempt < 2 && isUniqueViolation(error)) continue;
        throw error;
      }
    }
  }

  private async signInOnce(
    organisation: OrganisationRecord,
    identity: SigningInIdentity,
  ): Promise<SignedInPerson> {
    const email = identity.email?.toLowerCase();
    const name = (identity.name ?? email ?? identity.subject).slice(0, 200);
    const found = await this.store.findIdentity(identity.issuer, identity.subject, organisation.id);
    if (found?.membership?.removedAt) throw new RemovedMember();
    if (!found && email !== undefined && identity.emailVerified !== false && organisation.kind === 'enterprise') {
      const linked = await this.linkAddedMember(organisation, identity, email);
      if (linked) return linked;
    }
    if (found && found.membership) {
      const { person, membership } = found;
      const changes: Partial<PersonRecord> = {};
      if (identity.name !== undefined && identity.name.slice(0, 200) !== person.name) changes.name = name;
      if (email !== undefined && email !== person.email) changes.email = email;
      if (Object.keys(changes).length) await this.store.updatePerson(person.id, changes);
      const role = identity.role ?? membership.role;
      if (role !== membership.role) await this.store.setRole(organisation.id, person.id, role);
      return { person: { ...person, ...changes }, role };
    }
    return this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      const now = this.clock.now();
      let person = found?.person;
      if (!person) {
        person = { id: newId('usr'), name, email: email ?? null, createdAt: now };
        await store.insertPerson(person);
        await store.insertIdentity({ id: newId('idn'), issuer: identity.issuer, subject: identity.subject, personId: person.id, createdAt: now });
      }
      const role = identity.role ?? 'member';
      await store.insertMembership({ organisationId: organisation.id, personId: person.id, role, createdAt: now, removedAt: null });
      return { person, role };
    });
  }

  /**
   * The first sign-in of a person an administrator added by address (`platform bootstrap`,
   * `platform person add`): the one member of the organisation with that address whom no provider
   * has named yet becomes this identity, keeping the role given to them (unless the provider's role
   * claim says otherwise). Only the organisation's own provider gets here (its issuer selects the
   * organisation), and only with an address it did not call unverified. Two such members with one
   * address: neither is taken over, the person starts as a newcomer.
   */
  private async linkAddedMember(organisation: OrganisationRecord, identity: SigningInIdentity, email: string): Promise<SignedInPerson | undefined> {
    const candidates = await this.store.findUnlinkedMembers(organisation.id, email);
    if (candidates.length !== 1) return undefined;
    const { person, membership } = candidates[0]!;
    return this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      await store.insertIdentity({ id: newId('idn'), issuer: identity.issuer, subject: identity.subject, personId: person.id, createdAt: this.clock.now() });
      const changes: Partial<PersonRecord> = {};
      if (identity.name !== undefined && identity.name.slice(0, 200) !== person.name) changes.name = identity.name.slice(0, 200);
      if (Object.keys(changes).length) await store.updatePerson(person.id, changes);
      const role = identity.role ?? membership.role;
      if (role !== membership.role) await store.setRole(organisation.id, person.id, role);
      return { person: { ...person, ...changes }, role };
    });
  }

  /**
   * Adds a person by address, before they ever sign in (`platform bootstrap`, `platform person
   * add`): a person with no identity yet, a member with `role`. Their first sign-in with the
   * organisation's provider, with that address, takes the person over (see `signIn`).
   */
  async addPerson(organisationId: string, input: { email: string; name?: string | undefined; role: OrganisationRole }, actor?: AuditActor): Promise<PersonRecord> {
    const email = input.email.trim().toLowerCase();
    const now = this.clock.now();
    const person: PersonRecord = { id: newId('usr'), name: (input.name?.trim() || email).slice(0, 200), email, createdAt: now };
    await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      await store.insertPerson(person);
      await store.insertMembership({ organisationId, personId: person.id, role: input.role, createdAt: now, removedAt: null });
      if (actor) await this.trail.record(manager, { action: 'person.added', organisationId, actor, target: { personId: person.id, role: input.role } });
    });
    return person;
  }

  /** The organisation's members (not removed), in the order they joined, and whether each has signed in. */
  async members(organisationId: string): Promise<(MemberView & { signedIn: boolean })[]> {
    const members: MemberView[] = [];
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      const rows = await this.store.membersPage(organisationId, 500, after);
      members.push(...rows.slice(0, 500));
      if (rows.length <= 500) break;
      const last = rows[499]!;
      after = { createdAt: last.joinedAt, id: last.personId };
    }
    const identified = await this.store.identified(members.map((member) => member.personId));
    return members.map((member) => ({ ...member, signedIn: identified.has(member.personId) }));
  }

  /** Sets a person's role by person id (`usr_…`). Email addresses are not unique across
   * organisations (each identity provider vouches for its own), so callers resolve them first. */
  async setRole(organisationId: string, personId: string, role: OrganisationRole, actor?: AuditActor): Promise<PersonRecord> {
    const person = await this.store.findPerson(personId);
    if (!person) throw notFound(`no person ${personId}`);
    await this.dataSource.transaction(async (manager) => {
      const store = this.store.withManager(manager);
      const membership = await store.findMembership(organisationId, person.id);
      // Setting a role re-admits a removed person: an administrator decided so.
      if (membership) await store.readmit(organisationId, person.id, role);
      else await store.insertMembership({ organisationId, personId: person.id, role, createdAt: this.clock.now(), removedAt: null });
      if (actor) {
        const previous = membership && !membership.removedAt ? membership.role : null;
        await this.trail.record(manager, { action: 'person.role_changed', organisationId, actor, target: { personId: person.id, role, previous } });
      }
    });
    return person;
  }

  /** A removed person's role is none: their devices, keys and approvals count for nothing. */
  async roleOf(organisationId: string, personId: string): Promise<OrganisationRole | undefined> {
    const membership = await this.store.findMembership(organisationId, personId);
    return membership && !membership.removedAt ? membership.role : undefined;
  }

  /** Removes a person from the organisation (see OrganisationStore.removeMember). */
  async removeMember(organisationId: string, personId: string, actor?: AuditActor): Promise<void> {
    const removed = await this.dataSource.transaction(async (manager) => {
      const done = await this.store.withManager(manager).removeMember(organisationId, personId, this.clock.now());
      if (done && actor) await this.trail.record(manager, { action: 'person.removed', organisationId, actor, target: { personId } });
      return done;
    });
    if (!removed) throw notFound('this person is not a member of the organisation');
  }

  // Cloud people -------------------------------------------------------------------------------

  /**
   * A new Cloud person with their personal organisation (kind `personal`, plan `free`, the person
   * its owner), inside the caller's transaction.
   */
  async createPersonalAccount(manager: EntityManager, input: { name: string; email: string | null }): Promise<{ person: PersonRecord; organisation: OrganisationRecord }> {
    const store = this.store.withManager(manager);
    const now = this.clock.now();
    const name = input.name.trim().slice(0, 100) || 'New person';
    const person: PersonRecord = { id: newId('usr'), name, email: input.email, createdAt: now };
    const organisation = cloudOrganisation(name, 'personal', 'free', now);
    await store.insertPerson(person);
    await store.insert(organisation, []);
    await store.insertMembership({ organisationId: organisation.id, personId: person.id, role: 'owner', createdAt: now, removedAt: null });
    return { person, organisation };
  }

  findPerson(id: string): Promise<PersonRecord | null> {
    return this.store.findPerson(id);
  }

  async updatePerson(id: string, changes: Partial<Pick<PersonRecord, 'name' | 'email'>>, manager?: EntityManager): Promise<void> {
    await (manager ? this.store.withManager(manager) : this.store).updatePerson(id, changes);
  }

  /** The organisations a person belongs to, personal first, then by name. */
  membershipsOf(personId: string) {
    return this.store.membershipsOf(personId);
  }

  /** The person's membership of one organisation (none when removed or never a member). */
  async membershipIn(personId: string, organisationId: string) {
    return (await this.store.membershipsOf(personId, organisationId))[0];
  }

  /**
   * Deletes a Cloud person (spec 4.4): refused with 409 `sole_owner`, listing them, while the
   * person is the only owner of teams that have other people. Otherwise every organisation only
   * they belong to goes with all its contents, they leave every other one, join keys they created
   * stop, and the person goes with every sign-in method, session, device, membership and
   * invitation they sent (the foreign keys cascade). Answers the ids of the organisations deleted.
   *
   * The person's organisations are locked (in id order, as every change of a team's memberships
   * locks its team first: teams/service.ts) before anything is decided, and their members are
   * read with locking reads: a concurrent demotion, removal or departure in one of them either
   * ran before and is seen, or waits and then finds the person gone. So "a team keeps an owner"
   * holds here too.
   */
  async deleteCloudPerson(personId: string, audited?: { organisationId: string; actor: AuditActor }): Promise<string[]> {
    return withRetries(3, () =>
      this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        const listed = (await store.membershipsOf(personId)).map(({ organisation }) => organisation.id);
        const locked = new Set((await store.lockOrganisations(listed)).map((organisation) => organisation.id));
        const soleOwnerOf: string[] = [];
        const alone: string[] = [];
        for (const organisationId of listed.filter((id) => locked.has(id))) {
          const members = await store.activeMembers(organisationId, { lock: true });
          const own = members.find((member) => member.personId === personId);
          if (!own) continue;
          const others = members.filter((member) => member.personId !== personId);
          if (others.length === 0) alone.push(organisationId);
          else if (own.role === 'owner' && !others.some((member) => member.role === 'owner')) soleOwnerOf.push(organisationId);
        }
        if (soleOwnerOf.length) {
          throw conflict('sole_owner', 'you are the only owner of teams that have other people: make someone else an owner, or remove them, first', {
            organisations: soleOwnerOf,
          });
        }
        const now = this.clock.now();
        for (const id of alone) await store.deleteOrganisation(id);
        await manager
          .createQueryBuilder()
          .update('JoinKey')
          .set({ revokedAt: now })
          .where('created_by = :personId AND revoked_at IS NULL', { personId })
          .execute();
        await store.deletePerson(personId);
        if (audited) {
          await this.trail.record(manager, { action: 'person.deleted', organisationId: audited.organisationId, actor: audited.actor, target: { personId, organisationsDeleted: alone.join(',') } });
        }
        return alone;
      }),
    );
  }
}
