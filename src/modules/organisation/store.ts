import { IsNull, type DataSource, type EntityManager } from 'typeorm';
import { storedDate } from '../../db/dates.js';
import { hotRead } from '../../db/prepared.js';
import type { OrganisationRole } from '../../auth/principal.js';
import {
  MembershipEntity,
  OrganisationEntity,
  OrganisationHostEntity,
  PersonEntity,
  PersonIdentityEntity,
  type MembershipRecord,
  type OrganisationRecord,
  type MemberView,
  type PersonRecord,
} from './entities.js';

export type { MemberView };

/** The only code that queries organisations, host names, people, identities and memberships. */
export class OrganisationStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): OrganisationStore {
    return new OrganisationStore(manager);
  }

  /** Row locks for read-then-write sequences; SQLite runs one transaction at a time and needs none. */
  private get locks(): boolean {
    return this.manager.connection.options.type !== 'better-sqlite3';
  }

  /**
   * Locks organisations' rows until the transaction ends (those that exist; answered). Every
   * change of an organisation's memberships that a rule about its other members depends on (a
   * team keeps an owner) takes this lock first, so such changes take turns; several are locked in
   * one statement, in id order, so two transactions never wait for each other's. Reads of
   * memberships after it must be locking reads too (`lock: true`): under MySQL's repeatable read
   * a plain read could answer from a snapshot older than the lock.
   */
  async lockOrganisations(ids: readonly string[]): Promise<OrganisationRecord[]> {
    if (!ids.length) return [];
    const query = this.manager
      .createQueryBuilder(OrganisationEntity, 'organisation')
      .where('organisation.id IN (:...ids)', { ids: [...new Set(ids)].sort() })
      .orderBy('organisation.id', 'ASC');
    if (this.locks) query.setLock('pessimistic_write');
    return query.getMany();
  }

  async findById(id: string): Promise<OrganisationRecord | null> {
    return this.manager.findOneBy(OrganisationEntity, { id });
  }

  async findByHost(host: string): Promise<OrganisationRecord | null> {
    const row = await this.manager.findOneBy(OrganisationHostEntity, { host: host.toLowerCase() });
    return row ? this.findById(row.organisationId) : null;
  }

  async findByIssuer(issuer: string): Promise<OrganisationRecord | null> {
    return this.manager.findOneBy(OrganisationEntity, { oidcIssuer: issuer });
  }

  async list(): Promise<OrganisationRecord[]> {
    return this.manager.find(OrganisationEntity, { order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async count(): Promise<number> {
    return this.manager.count(OrganisationEntity);
  }

  async hostsOf(organisationId: string): Promise<string[]> {
    const rows = await this.manager.find(OrganisationHostEntity, { where: { organisationId }, order: { host: 'ASC' } });
    return rows.map((row) => row.host);
  }

  async hostTaken(host: string): Promise<boolean> {
    return (await this.manager.countBy(OrganisationHostEntity, { host })) > 0;
  }

  async insert(organisation: OrganisationRecord, hosts: readonly string[]): Promise<void> {
    await this.manager.insert(OrganisationEntity, organisation);
    if (hosts.length) {
      await this.manager.insert(
        OrganisationHostEntity,
        hosts.map((host) => ({ host, organisationId: organisation.id })),
      );
    }
  }

  async update(id: string, changes: Partial<Omit<OrganisationRecord, 'id' | 'createdAt'>>): Promise<void> {
    await this.manager.update(OrganisationEntity, { id }, changes);
  }

  async addHosts(organisationId: string, hosts: readonly string[]): Promise<void> {
    if (hosts.length) await this.manager.insert(OrganisationHostEntity, hosts.map((host) => ({ host, organisationId })));
  }

  async removeHosts(organisationId: string, hosts: readonly string[]): Promise<void> {
    for (const host of hosts) await this.manager.delete(OrganisationHostEntity, { host, organisationId });
  }

  /** The person an identity provider names by (`iss`, `sub`), with their role in `organisationId`:
   * one query, since every person-token request asks it. */
  async findIdentity(
    issuer: string,
    subject: string,
    organisationId: string,
  ): Promise<{ person: PersonRecord; membership: MembershipRecord | null } | null> {
    // Every person-token request asks this: one prepared statement (src/db/prepared.ts), not the
    // query builder, whose work costs several times the query's.
    const rows = await hotRead(
      this.manager,
      'SELECT p.id, p.name, p.email, p.created_at AS createdAt, m.role, m.created_at AS joinedAt, m.removed_at AS removedAt, m.person_id AS memberId ' +
        'FROM person_identities i INNER JOIN people p ON p.id = i.person_id ' +
        'LEFT JOIN memberships m ON m.person_id = i.person_id AND m.organisation_id = ? ' +
        'WHERE i.issuer = ? AND i.subject = ?',
      [organisationId, issuer, subject],
    );
    const row = rows[0];
    if (!row) return null;
    const person: PersonRecord = { id: row.id as string, name: row.name as string, email: (row.email as string | null) ?? null, createdAt: storedDate(row.createdAt) };
    const membership: MembershipRecord | null =
      row.memberId === null || row.memberId === undefined
        ? null
        : {
            organisationId,
            personId: person.id,
            role: row.role as OrganisationRole,
            createdAt: storedDate(row.joinedAt),
            removedAt: row.removedAt === null || row.removedAt === undefined ? null : storedDate(row.removedAt),
          };
    return { person, membership };
  }

  /**
   * Members of the organisation with this address whom no identity provider has named yet: people
   * an administrator added by address (`platform bootstrap`, `platform person add`) who have not
   * signed in. Their first sign-in with the organisation's provider takes the person over.
   */
  async findUnlinkedMembers(organisationId: string, email: string): Promise<{ person: PersonRecord; membership: MembershipRecord }[]> {
    const rows = await this.manager
      .createQueryBuilder(PersonEntity, 'person')
      .innerJoinAndMapOne('person.membership', 'Membership', 'membership', 'membership.personId = person.id AND membership.organisationId = :organisationId', { organisationId })
      .where('person.email = :email AND membership.removedAt IS NULL', { email: email.toLowerCase() })
      .andWhere('NOT EXISTS (SELECT 1 FROM person_identities identity WHERE identity.person_id = person.id)')
      .orderBy('person.id', 'ASC')
      .getMany();
    return rows.map((row) => {
      const { membership, ...person } = row as PersonRecord & { membership: MembershipRecord };
      return { person, membership };
    });
  }

  /** Which of these people an identity provider has named (they signed in at least once). */
  async identified(personIds: readonly string[]): Promise<Set<string>> {
    if (!personIds.length) return new Set();
    const rows = await this.manager
      .createQueryBuilder(PersonIdentityEntity, 'identity')
      .select('DISTINCT identity.personId', 'personId')
      .where('identity.personId IN (:...personIds)', { personIds: [...new Set(personIds)] })
      .getRawMany<{ personId: string }>();
    return new Set(rows.map((row) => row.personId));
  }

  async insertPerson(person: PersonRecord): Promise<void> {
    await this.manager.insert(PersonEntity, person);
  }

  async updatePerson(id: string, changes: Partial<Pick<PersonRecord, 'name' | 'email'>>): Promise<void> {
    await this.manager.update(PersonEntity, { id }, changes);
  }

  async insertIdentity(identity: { id: string; issuer: string; subject: string; personId: string; createdAt: Date }): Promise<void> {
    await this.manager.insert(PersonIdentityEntity, identity);
  }

  async findPerson(id: string): Promise<PersonRecord | null> {
    return this.manager.findOneBy(PersonEntity, { id });
  }

  async findMembership(organisationId: string, personId: string, options: { lock?: boolean } = {}): Promise<MembershipRecord | null> {
    if (!options.lock || !this.locks) return this.manager.findOneBy(MembershipEntity, { organisationId, personId });
    return this.manager
      .createQueryBuilder(MembershipEntity, 'membership')
      .where('membership.organisationId = :organisationId AND membership.personId = :personId', { organisationId, personId })
      .setLock('pessimistic_write')
      .getOne();
  }

  async insertMembership(membership: MembershipRecord): Promise<void> {
    await this.manager.insert(MembershipEntity, membership);
  }

  async setRole(organisationId: string, personId: string, role: OrganisationRole): Promise<void> {
    await this.manager.update(MembershipEntity, { organisationId, personId }, { role });
  }

  /** A person removed earlier joins again (an invitation they accepted): a member from now. */
  async rejoin(organisationId: string, personId: string, role: OrganisationRole, at: Date): Promise<void> {
    await this.manager.update(MembershipEntity, { organisationId, personId }, { role, removedAt: null, createdAt: at });
  }

  /** An administrator's word: the person is a member again, with this role. */
  async readmit(organisationId: string, personId: string, role: OrganisationRole): Promise<void> {
    await this.manager.update(MembershipEntity, { organisationId, personId }, { role, removedAt: null });
  }

  /**
   * Removes a person from an organisation: the membership is kept as a tombstone (so signing in
   * again does not re-admit them), and every device they approved and every join key they created
   * in the organisation stops working at once, as do the open invitations they sent; they leave
   * the organisation's projects.
   */
  async removeMember(organisationId: string, personId: string, at: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(MembershipEntity)
      .set({ removedAt: at })
      .where('organisation_id = :organisationId AND person_id = :personId AND removed_at IS NULL', { organisationId, personId })
      .execute();
    await this.manager
      .createQueryBuilder()
      .update('DeviceToken')
      .set({ revokedAt: at, graceSealed: null, graceUntil: null })
      .where('revoked_at IS NULL AND device_id IN (SELECT id FROM devices WHERE organisation_id = :organisationId AND person_id = :personId)', {
        organisationId,
        personId,
      })
      .execute();
    await this.manager
      .createQueryBuilder()
      .update('Device')
      .set({ revokedAt: at })
      .where('organisation_id = :organisationId AND person_id = :personId AND revoked_at IS NULL', { organisationId, personId })
      .execute();
    await this.manager
      .createQueryBuilder()
      .update('JoinKey')
      .set({ revokedAt: at })
      .where('organisation_id = :organisationId AND created_by = :personId AND revoked_at IS NULL', { organisationId, personId })
      .execute();
    await this.manager
      .createQueryBuilder()
      .update('Invitation')
      .set({ withdrawnAt: at, openEmail: null })
      .where('organisation_id = :organisationId AND invited_by = :personId AND open_email IS NOT NULL', { organisationId, personId })
      .execute();
    await this.manager
      .createQueryBuilder()
      .delete()
      .from('ProjectMember')
      .where('person_id = :personId AND project_id IN (SELECT id FROM projects WHERE organisation_id = :organisationId)', { organisationId, personId })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /**
   * The organisations a person belongs to (removed memberships left out), with their role:
   * personal organisations first, then by name (spec 2.5).
   */
  async membershipsOf(personId: string, organisationId?: string): Promise<{ organisation: OrganisationRecord; role: OrganisationRole }[]> {
    const query = this.manager
      .createQueryBuilder(OrganisationEntity, 'organisation')
      .innerJoinAndMapOne(
        'organisation.membership',
        'Membership',
        'membership',
        'membership.organisationId = organisation.id AND membership.personId = :personId AND membership.removedAt IS NULL',
        { personId },
      );
    if (organisationId !== undefined) query.where('organisation.id = :organisationId', { organisationId });
    const rows = await query.getMany();
    return rows
      .map((row) => {
        const { membership, ...organisation } = row as OrganisationRecord & { membership: MembershipRecord };
        return { organisation, role: membership.role };
      })
      .sort((a, b) => {
        const personal = Number(b.organisation.kind === 'personal') - Number(a.organisation.kind === 'personal');
        if (personal !== 0) return personal;
        const byName = a.organisation.name.localeCompare(b.organisation.name, 'en', { sensitivity: 'base' });
        return byName !== 0 ? byName : a.organisation.id < b.organisation.id ? -1 : 1;
      });
  }

  /** Members of an organisation who have not been removed, with their roles; `lock`: see lockOrganisations. */
  async activeMembers(organisationId: string, options: { lock?: boolean } = {}): Promise<MembershipRecord[]> {
    if (!options.lock || !this.locks) return this.manager.find(MembershipEntity, { where: { organisationId, removedAt: IsNull() } });
    return this.manager
      .createQueryBuilder(MembershipEntity, 'membership')
      .where('membership.organisationId = :organisationId AND membership.removedAt IS NULL', { organisationId })
      .setLock('pessimistic_write')
      .getMany();
  }

  /** A page of an organisation's members with their names, in the order they joined. */
  async membersPage(organisationId: string, limit: number, after: { createdAt: Date; id: string } | undefined): Promise<MemberView[]> {
    const query = this.manager
      .createQueryBuilder(MembershipEntity, 'membership')
      .innerJoin(PersonEntity.options.name, 'person', 'person.id = membership.personId')
      .select(['membership.personId AS personId', 'membership.role AS role', 'membership.createdAt AS joinedAt', 'person.name AS name', 'person.email AS email'])
      .where('membership.organisationId = :organisationId AND membership.removedAt IS NULL', { organisationId })
      .orderBy('membership.createdAt', 'ASC')
      .addOrderBy('membership.personId', 'ASC')
      .limit(limit + 1);
    if (after) {
      query.andWhere('(membership.createdAt > :afterAt OR (membership.createdAt = :afterAt AND membership.personId > :afterId))', {
        afterAt: after.createdAt,
        afterId: after.id,
      });
    }
    const rows = await query.getRawMany<{ personId: string; role: OrganisationRole; joinedAt: unknown; name: string; email: string | null }>();
    return rows.map((row) => ({ ...row, joinedAt: storedDate(row.joinedAt) }));
  }

  async deleteOrganisation(id: string): Promise<void> {
    await this.manager.delete(OrganisationEntity, { id });
  }

  async deletePerson(id: string): Promise<void> {
    await this.manager.delete(PersonEntity, { id });
  }
}
