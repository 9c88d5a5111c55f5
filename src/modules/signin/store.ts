import { hotRead } from '../../db/prepared.js';
import { IsNull, LessThan, MoreThan, type DataSource, type EntityManager } from 'typeorm';
import {
  CloudSessionEntity,
  EmailCodeEntity,
  LinkTicketEntity,
  SessionTokenEntity,
  SignInCodeEntity,
  SignInFlowEntity,
  SignInMethodEntity,
  type CloudSessionRecord,
  type EmailCodeRecord,
  type LinkTicketRecord,
  type SessionTokenRecord,
  type SignInCodeRecord,
  type SignInFlowRecord,
  type SignInMethodRecord,
} from './entities.js';
import type { SignInProviderId } from './settings.js';

/** A datetime as a raw query returns it: a Date from MySQL, UTC text from SQLite. */
function storedDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  return new Date(`${String(value).replace(' ', 'T')}Z`);
}

/** The only code that queries the sign-in tables. */
export class SignInStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): SignInStore {
    return new SignInStore(manager);
  }

  /** Row locks for read-then-write sequences; SQLite runs one transaction at a time and needs none. */
  private get locks(): boolean {
    return this.manager.connection.options.type !== 'better-sqlite3';
  }

  // Sign-in methods ----------------------------------------------------------------------------

  findMethod(provider: SignInProviderId, subject: string): Promise<SignInMethodRecord | null> {
    return this.manager.findOneBy(SignInMethodEntity, { provider, subject });
  }

  /**
   * The join rule's anchor for a verified address (lower-cased): the oldest method that was added
   * through a confirmed flow standing for this address, and whose provider still names it
   * verified. Deterministic (oldest first, then by id) whatever else vouches for the address.
   */
  findAddressAnchor(email: string): Promise<SignInMethodRecord | null> {
    return this.manager.findOne(SignInMethodEntity, { where: { confirmedEmail: email, email, emailVerified: true }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** The oldest method of any provider that vouches for this address (lower-cased). */
  findVerifiedMethodByEmail(email: string): Promise<SignInMethodRecord | null> {
    return this.manager.findOne(SignInMethodEntity, { where: { email, emailVerified: true }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** Whether a method of someone other than `personId` vouches for this verified address. */
  async addressHeldByOther(email: string, personId: string): Promise<boolean> {
    const held = await this.manager
      .createQueryBuilder(SignInMethodEntity, 'method')
      .select('method.id')
      .where('method.email = :email AND method.emailVerified = :verified AND method.personId <> :personId', { email, verified: true, personId })
      .limit(1)
      .getOne();
    return held !== null;
  }

  methodsOf(personId: string): Promise<SignInMethodRecord[]> {
    return this.manager.find(SignInMethodEntity, { where: { personId }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async insertMethod(method: SignInMethodRecord): Promise<void> {
    await this.manager.insert(SignInMethodEntity, method);
  }

  async updateMethod(id: string, changes: Partial<Pick<SignInMethodRecord, 'email' | 'emailVerified' | 'lastUsedAt'>>): Promise<void> {
    await this.manager.update(SignInMethodEntity, { id }, changes);
  }

  async deleteMethod(id: string): Promise<void> {
    await this.manager.delete(SignInMethodEntity, { id });
  }

  /** Locks the person's sign-in methods until the transaction ends (removing one must leave one). */
  async lockMethodsOf(personId: string): Promise<SignInMethodRecord[]> {
    const query = this.manager.createQueryBuilder(SignInMethodEntity, 'method').where('method.personId = :personId', { personId }).orderBy('method.createdAt', 'ASC');
    if (this.locks) query.setLock('pessimistic_write');
    return query.getMany();
  }

  // Provider flows ------------------------------------------------------------------------------

  async insertFlow(flow: SignInFlowRecord, now: Date): Promise<void> {
    // Abandoned flows go on the way: nothing else reads them.
    await this.manager.delete(SignInFlowEntity, { expiresAt: LessThan(now) });
    await this.manager.insert(SignInFlowEntity, flow);
  }

  /** Takes the flow out, once: of two callbacks with the same state only one gets it. */
  async takeFlow(stateHash: string, provider: SignInProviderId): Promise<SignInFlowRecord | undefined> {
    const flow = await this.manager.findOneBy(SignInFlowEntity, { stateHash, provider });
    if (!flow) return undefined;
    const result = await this.manager.delete(SignInFlowEntity, { stateHash, provider });
    return (result.affected ?? 0) === 1 ? flow : undefined;
  }

  // One-time codes -------------------------------------------------------------------------------

  async insertCode(code: SignInCodeRecord, now: Date): Promise<void> {
    // Codes are kept a day after they expire, so a late second use is still recognised as one.
    await this.manager.delete(SignInCodeEntity, { expiresAt: LessThan(new Date(now.getTime() - 86_400_000)) });
    await this.manager.insert(SignInCodeEntity, code);
  }

  findCode(codeHash: string): Promise<SignInCodeRecord | null> {
    return this.manager.findOneBy(SignInCodeEntity, { codeHash });
  }

  /** Marks a code used by the session it starts, once. */
  async useCode(id: string, usedAt: Date, sessionId: string | null): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(SignInCodeEntity)
      .set({ usedAt, sessionId })
      .where('id = :id AND used_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  // Emailed codes ------------------------------------------------------------------------------

  async insertEmailCode(code: EmailCodeRecord): Promise<void> {
    await this.manager.insert(EmailCodeEntity, code);
  }

  async deleteEmailCode(id: string): Promise<void> {
    await this.manager.delete(EmailCodeEntity, { id });
  }

  /** Codes asked for the address since `since` (spent or not): the address's hourly budget. */
  async emailCodesSince(addressHash: string, since: Date): Promise<EmailCodeRecord[]> {
    return this.manager.find(EmailCodeEntity, { where: { addressHash, createdAt: MoreThan(since) }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** How many codes were asked since `since`, for anyone, and when the oldest of them was (the service-wide cap per minute). */
  async emailCodesSentSince(since: Date): Promise<{ count: number; oldest: Date | undefined }> {
    const row = await this.manager
      .createQueryBuilder(EmailCodeEntity, 'code')
      .select('COUNT(*)', 'count')
      .addSelect('MIN(code.created_at)', 'oldest')
      .where('code.created_at > :since', { since })
      .getRawOne<{ count: number | string; oldest: unknown }>();
    return { count: Number(row?.count ?? 0), oldest: storedDate(row?.oldest) ?? undefined };
  }

  /** Rows older than the budget window count for nothing any more. */
  async purgeEmailCodes(before: Date): Promise<void> {
    await this.manager.delete(EmailCodeEntity, { createdAt: LessThan(before) });
  }

  /** A new code replaces the address's earlier ones. */
  async spendOtherEmailCodes(addressHash: string, keepId: string, at: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(EmailCodeEntity)
      .set({ spentAt: at })
      .where('address_hash = :addressHash AND spent_at IS NULL AND id <> :keepId', { addressHash, keepId })
      .execute();
  }

  /** The address's current code (the newest not yet spent). */
  currentEmailCode(addressHash: string): Promise<EmailCodeRecord | null> {
    return this.manager.findOne(EmailCodeEntity, { where: { addressHash, spentAt: IsNull() }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  /** Counts one try, if tries are left: at most `maxTries` comparisons ever happen per code. */
  async countTry(id: string, maxTries: number): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(EmailCodeEntity)
      .set({ tries: () => 'tries + 1' })
      .where('id = :id AND spent_at IS NULL AND tries < :maxTries', { id, maxTries })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  async spendEmailCode(id: string, at: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(EmailCodeEntity)
      .set({ spentAt: at })
      .where('id = :id AND spent_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  // Link tickets -------------------------------------------------------------------------------

  async insertTicket(ticket: LinkTicketRecord, now: Date): Promise<void> {
    await this.manager.delete(LinkTicketEntity, { expiresAt: LessThan(now) });
    await this.manager.insert(LinkTicketEntity, ticket);
  }

  /** Uses a ticket, once, if it is current: the ticket as it was issued. */
  async useTicket(ticketHash: string, now: Date): Promise<LinkTicketRecord | undefined> {
    const ticket = await this.manager.findOneBy(LinkTicketEntity, { ticketHash });
    if (!ticket || ticket.usedAt || ticket.expiresAt.getTime() <= now.getTime()) return undefined;
    const result = await this.manager
      .createQueryBuilder()
      .update(LinkTicketEntity)
      .set({ usedAt: now })
      .where('id = :id AND used_at IS NULL', { id: ticket.id })
      .execute();
    return (result.affected ?? 0) === 1 ? ticket : undefined;
  }

  findTicket(id: string): Promise<LinkTicketRecord | null> {
    return this.manager.findOneBy(LinkTicketEntity, { id });
  }

  // Sessions and their tokens -----------------------------------------------------------------

  async insertSession(session: CloudSessionRecord): Promise<void> {
    await this.manager.insert(CloudSessionEntity, session);
  }

  /** The session, locked until the transaction ends: refreshes of one session take turns. */
  async lockSession(id: string): Promise<CloudSessionRecord | null> {
    const query = this.manager.createQueryBuilder(CloudSessionEntity, 'session').where('session.id = :id', { id });
    if (this.locks) query.setLock('pessimistic_write');
    return query.getOne();
  }

  async insertTokens(tokens: SessionTokenRecord[]): Promise<void> {
    await this.manager.insert(SessionTokenEntity, tokens);
  }

  findToken(tokenHash: string): Promise<SessionTokenRecord | null> {
    return this.manager.findOneBy(SessionTokenEntity, { tokenHash });
  }

  /** Read under the session's lock: the newest committed row, whatever the isolation level. */
  async findTokenLocked(tokenHash: string): Promise<SessionTokenRecord | null> {
    const query = this.manager.createQueryBuilder(SessionTokenEntity, 'token').where('token.tokenHash = :tokenHash', { tokenHash });
    if (this.locks) query.setLock('pessimistic_write');
    return query.getOne();
  }

  async markRefreshUsed(id: string, usedAt: Date, graceSealed: string | null, graceUntil: Date | null): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(SessionTokenEntity)
      .set({ usedAt, graceSealed, graceUntil })
      .where('id = :id AND used_at IS NULL AND revoked_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  async eraseSpentGrace(sessionId: string, now: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(SessionTokenEntity)
      .set({ graceSealed: null, graceUntil: null })
      .where('session_id = :sessionId AND grace_until IS NOT NULL AND grace_until <= :now', { sessionId, now })
      .execute();
  }

  /** Ends sessions: every token stops at once and sealed grace copies are erased. */
  async endSessions(where: { ids: readonly string[] }, at: Date): Promise<void> {
    if (!where.ids.length) return;
    await this.manager
      .createQueryBuilder()
      .update(CloudSessionEntity)
      .set({ endedAt: at })
      .where('id IN (:...ids) AND ended_at IS NULL', { ids: where.ids })
      .execute();
    await this.manager
      .createQueryBuilder()
      .update(SessionTokenEntity)
      .set({ revokedAt: at, graceSealed: null, graceUntil: null })
      .where('session_id IN (:...ids) AND revoked_at IS NULL', { ids: where.ids })
      .execute();
  }

  /** Live sessions a sign-in method started. */
  async sessionsStartedWith(signInMethodId: string): Promise<string[]> {
    const rows = await this.manager.find(CloudSessionEntity, { where: { signInMethodId, endedAt: IsNull() }, select: { id: true } });
    return rows.map((row) => row.id);
  }

  /**
   * An access token with its session: one plain query, asked by every request of a signed-in
   * person. Expiry, revocation and the session's end are judged by the caller.
   */
  async findAccessToken(tokenHash: string): Promise<{ expiresAt: Date; revoked: boolean; session: CloudSessionRecord } | null> {
    const rows = (await hotRead(
      this.manager,
      'SELECT t.expires_at AS expiresAt, t.revoked_at AS revokedAt, s.id, s.person_id AS personId, s.client, ' +
        's.sign_in_method_id AS signInMethodId, s.created_at AS createdAt, s.ended_at AS endedAt ' +
        "FROM cloud_session_tokens t INNER JOIN cloud_sessions s ON s.id = t.session_id WHERE t.token_hash = ? AND t.kind = 'access'",
      [tokenHash],
    ));
    const row = rows[0];
    if (!row) return null;
    return {
      expiresAt: storedDate(row.expiresAt) as Date,
      revoked: row.revokedAt !== null,
      session: {
        id: row.id as string,
        personId: row.personId as string,
        client: row.client as CloudSessionRecord['client'],
        signInMethodId: (row.signInMethodId as string | null) ?? null,
        createdAt: storedDate(row.createdAt) as Date,
        endedAt: storedDate(row.endedAt),
      },
    };
  }
}
