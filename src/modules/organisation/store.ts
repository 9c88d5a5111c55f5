import { IsNull, type DataSource, type EntityManager } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';
import {
  MembershipEntity,
  OrganisationEntity,
  OrganisationHostEntity,
  PersonEntity,
  PersonIdentityEntity,
  type MembershipRecord,
  type OrganisationRecord,
  type PersonRecord,
} from './entities.js';

/** The only code that queries organisations, host names, people, identities and memberships. */
export class OrganisationStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): OrganisationStore {
    return new OrganisationStore(manager);
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
    const identity = await this.manager
      .createQueryBuilder(PersonIdentityEntity, 'identity')
      .innerJoinAndMapOne('identity.person', 'Person', 'person', 'person.id = identity.personId')
      .leftJoinAndMapOne(
        'identity.membership',
        'Membership',
        'membership',
        'membership.personId = identity.personId AND membership.organisationId = :organisationId',
        { organisationId },
      )
      .where('identity.issuer = :issuer AND identity.subject = :subject', { issuer, subject })
      .getOne();
    if (!identity) return null;
    const joined = identity as typeof identity & { person: PersonRecord; membership?: MembershipRecord | null };
    return { person: joined.person, membership: joined.membership ?? null };
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

  async findMembership(organisationId: string, personId: string): Promise<MembershipRecord | null> {
    return this.manager.findOneBy(MembershipEntity, { organisationId, personId });
  }

  async insertMembership(membership: MembershipRecord): Promise<void> {
    await this.manager.insert(MembershipEntity, membership);
  }

  async setRole(organisationId: string, personId: string, role: OrganisationRole): Promise<void> {
    await this.manager.update(MembershipEntity, { organisationId, personId }, { role });
  }

  /** An administrator's word: the person is a member again, with this role. */
  async readmit(organisationId: string, personId: string, role: OrganisationRole): Promise<void> {
    await this.manager.update(MembershipEntity, { organisationId, personId }, { role, removedAt: null });
  }

  /**
   * Removes a person from an organisation: the membership is kept as a tombstone (so signing in
   * again does not re-admit them), and every device they approved and every join key they created
   * in the organisation stops working at once.
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

  /** Members of an organisation who have not been removed, with their roles. */
  async activeMembers(organisationId: string): Promise<MembershipRecord[]> {
    return this.manager.find(MembershipEntity, { where: { organisationId, removedAt: IsNull() } });
  }

  async deleteOrganisation(id: string): Promise<void> {
    await this.manager.delete(OrganisationEntity, { id });
  }

  async deletePerson(id: string): Promise<void> {
    await this.manager.delete(PersonEntity, { id });
  }
}
