import type { DataSource, EntityManager } from 'typeorm';
import { PersonEntity } from '../organisation/entities.js';
import { InvitationEntity, type InvitationRecord } from './entities.js';

/** An open invitation as owners and admins see it (spec 2.8), with the inviter's name. */
export interface InvitationView extends InvitationRecord {
  invitedByName: string;
}

/** The only code that queries invitations. */
export class InvitationStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): InvitationStore {
    return new InvitationStore(manager);
  }

  private get locks(): boolean {
    return this.manager.connection.options.type !== 'better-sqlite3';
  }

  async insert(invitation: InvitationRecord): Promise<void> {
    await this.manager.insert(InvitationEntity, invitation);
  }

  /** A new invitation of an address replaces its open one (expired ones included: still open on paper). */
  async withdrawOpenFor(organisationId: string, email: string, at: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(InvitationEntity)
      .set({ withdrawnAt: at, openEmail: null })
      .where('organisation_id = :organisationId AND open_email = :email', { organisationId, email })
      .execute();
  }

  findByTokenHash(tokenHash: string): Promise<InvitationRecord | null> {
    return this.manager.findOneBy(InvitationEntity, { tokenHash });
  }

  /** The invitation, locked until the transaction ends when `lock` is asked. */
  async findById(id: string, options: { lock?: boolean } = {}): Promise<InvitationRecord | null> {
    const query = this.manager.createQueryBuilder(InvitationEntity, 'invitation').where('invitation.id = :id', { id });
    if (options.lock && this.locks) query.setLock('pessimistic_write');
    return query.getOne();
  }

  /**
   * Uses an open, unexpired invitation: a compare-and-set, so of two acceptances (or an
   * acceptance and a withdrawal) exactly one wins. Answers whether this one did.
   */
  async use(id: string, personId: string, now: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(InvitationEntity)
      .set({ usedAt: now, usedBy: personId, openEmail: null })
      .where('id = :id AND open_email IS NOT NULL AND expires_at > :now', { id, now })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /** Withdraws an open invitation, once; answers whether this call did. */
  async withdraw(id: string, at: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(InvitationEntity)
      .set({ withdrawnAt: at, openEmail: null })
      .where('id = :id AND open_email IS NOT NULL', { id })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /** A page of the organisation's open, unexpired invitations, oldest first. */
  async openPage(organisationId: string, now: Date, limit: number, after: { createdAt: Date; id: string } | undefined): Promise<InvitationView[]> {
    const query = this.manager
      .createQueryBuilder(InvitationEntity, 'invitation')
      .innerJoinAndMapOne('invitation.inviter', PersonEntity.options.name, 'inviter', 'inviter.id = invitation.invitedBy')
      .where('invitation.organisationId = :organisationId AND invitation.openEmail IS NOT NULL AND invitation.expiresAt > :now', { organisationId, now })
      .orderBy('invitation.createdAt', 'ASC')
      .addOrderBy('invitation.id', 'ASC')
      .limit(limit + 1);
    if (after) {
      query.andWhere('(invitation.createdAt > :afterAt OR (invitation.createdAt = :afterAt AND invitation.id > :afterId))', { afterAt: after.createdAt, afterId: after.id });
    }
    const rows = (await query.getMany()) as (InvitationRecord & { inviter: { name: string } })[];
    return rows.map(({ inviter, ...invitation }) => ({ ...invitation, invitedByName: inviter.name }));
  }
}
