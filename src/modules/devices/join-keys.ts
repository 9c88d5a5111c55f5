import { NO_AUDIT_TRAIL, type AuditActor, type AuditTrail } from '../../audit.js';
import { randomBytes } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { isUniqueViolation } from '../../db/errors.js';
import { notFound } from '../../errors.js';
import { timestamp, type Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, safeEqual } from '../../util/secrets.js';
import type { OrganisationService } from '../organisation/service.js';
import { DeviceEntity, JoinKeyEntity, type DeviceRecord, type JoinKeyRecord } from './entities.js';
import { scopeString } from './scopes.js';
import { DeviceStore, pageOf, type Page, type PageAfter, type Person } from './store.js';
import { invalidGrant, type DeviceTokenService, type TokenAnswer } from './tokens.js';

/**
 * Join keys: an owner or admin creates one, a node presents it at `POST /relay/v1/device/join`
 * and is enrolled at once, with the key's creator recorded as its approver (spec 3, 4.6).
 *
 * A key reads `platform_jk_<lookup>_<secret>`. The lookup part (16 hex digits) finds the row;
 * the secret (32 random bytes) is stored only as its SHA-256 hash and compared in constant
 * time. The key itself is shown once, in the answer that creates it.
 *
 * Single use is one conditional UPDATE (`use_count = 0` in its WHERE), so of two concurrent
 * joins with one key exactly one enrols a device. A used key stays used whatever becomes of the
 * device it enrolled: revoking that device does not make the key usable again.
 */

export const JOIN_KEY_PREFIX = 'platform_jk_';
const LOOKUP_HEX_DIGITS = 16;
const SECRET_BYTES = 32;
const KEY_SHAPE = new RegExp(`^${JOIN_KEY_PREFIX}([0-9a-f]{${LOOKUP_HEX_DIGITS}})_([A-Za-z0-9_-]{43})$`);

export const JOIN_KEY_DEFAULT_TTL_SECONDS = 24 * 3600;
export const JOIN_KEY_MIN_TTL_SECONDS = 300;
export const JOIN_KEY_MAX_TTL_SECONDS = 90 * 86_400;

// Compared against when no row matches, so a miss costs the same hash-and-compare as a hit.
const NO_SUCH_KEY_HASH = hashSecret('no such join key');

export type JoinKeyState = 'active' | 'used' | 'expired' | 'revoked';

export interface JoinKeyView {
  record: JoinKeyRecord;
  createdBy: Person;
  state: JoinKeyState;
}

export interface NewJoinKey {
  organisationId: string;
  createdBy: string;
  description: string;
  expiresInSeconds: number;
  reusable: boolean;
}

export interface JoiningNode {
  /** The device name (`name` of the join request). */
  name: string;
  /** `manifest.nodeId`. */
  nodeId: string;
  /** RFC 7638 thumbprint of the key the tokens are bound to, when the node proved one. */
  dpopJkt: string | undefined;
}

/** The only code that queries join keys. */
export class JoinKeyStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): JoinKeyStore {
    return new JoinKeyStore(manager);
  }

  async insert(record: JoinKeyRecord): Promise<void> {
    await this.manager.insert(JoinKeyEntity, record);
  }

  async findByLookup(lookup: string): Promise<JoinKeyRecord | null> {
    return this.manager.findOneBy(JoinKeyEntity, { lookup });
  }

  async findById(id: string): Promise<JoinKeyRecord | null> {
    return this.manager.findOneBy(JoinKeyEntity, { id });
  }

  /** Newest first; one row more than asked tells whether another page follows. */
  async listPage(organisationId: string, limit: number, after: PageAfter | undefined): Promise<JoinKeyRecord[]> {
    const query = this.manager
      .createQueryBuilder(JoinKeyEntity, 'key')
      .where('key.organisationId = :organisationId', { organisationId })
      .orderBy('key.createdAt', 'DESC')
      .addOrderBy('key.id', 'DESC')
      .limit(limit + 1);
    if (after) {
      query.andWhere('(key.createdAt < :afterAt OR (key.createdAt = :afterAt AND key.id < :afterId))', { afterAt: after.createdAt, afterId: after.id });
    }
    return query.getMany();
  }

  /**
   * Counts one use, if the key may still be used: not revoked, not expired, and reusable or
   * never used. The condition sits in the UPDATE itself so that concurrent joins cannot both pass.
   */
  async consume(id: string, now: Date): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(JoinKeyEntity)
      .set({ useCount: () => 'use_count + 1', usedAt: now })
      .where('id = :id AND revoked_at IS NULL AND expires_at > :now AND (reusable <> 0 OR use_count = 0)', { id, now })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  async revoke(id: string, at: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(JoinKeyEntity)
      .set({ revokedAt: at })
      .where('id = :id AND revoked_at IS NULL', { id })
      .execute();
  }

}

export function stateOf(record: JoinKeyRecord, now: Date): JoinKeyState {
  if (record.revokedAt) return 'revoked';
  if (!record.reusable && record.useCount > 0) return 'used';
  if (record.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** The one refusal a node sees for a key that is not a key of this organisation at all. */
const notAJoinKey = () => invalidGrant('the join key is not valid');

export class JoinKeyService {
  private readonly store: JoinKeyStore;
  private readonly devices: DeviceStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly tokens: DeviceTokenService,
    private readonly organisations: OrganisationService,
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
  ) {
    this.store = new JoinKeyStore(dataSource);
    this.devices = new DeviceStore(dataSource);
  }

  /** A new key; the answer is the only place its value ever appears. */
  async create(input: NewJoinKey, actor: AuditActor): Promise<{ key: string; view: JoinKeyView }> {
    const now = this.clock.now();
    for (let attempt = 0; ; attempt++) {
      const lookup = randomBytes(LOOKUP_HEX_DIGITS / 2).toString('hex');
      const secret = randomBytes(SECRET_BYTES).toString('base64url');
      const record: JoinKeyRecord = {
        id: newId('jk'),
        organisationId: input.organisationId,
        createdBy: input.createdBy,
        description: input.description,
        lookup,
        secretHash: hashSecret(secret),
        reusable: input.reusable,
        expiresAt: new Date(now.getTime() + input.expiresInSeconds * 1000),
        usedAt: null,
        useCount: 0,
        revokedAt: null,
        createdAt: now,
      };
      try {
        await this.dataSource.transaction(async (manager) => {
          await this.store.withManager(manager).insert(record);
          await this.trail.record(manager, {
            action: 'join_key.created',
            organisationId: record.organisationId,
            actor,
            target: { joinKeyId: record.id, reusable: record.reusable, expiresAt: timestamp(record.expiresAt) },
          });
        });
      } catch (error) {
        // 64 random bits collide about never; draw again rather than fail if they do.
        if (attempt < 3 && isUniqueViolation(error)) continue;
        throw error;
      }
      const people = await this.devices.people([input.createdBy]);
      return { key: `${JOIN_KEY_PREFIX}${lookup}_${secret}`, view: this.view(record, people, now) };
    }
  }

  async list(organisationId: string, limit: number, after: PageAfter | undefined): Promise<Page<JoinKeyView>> {
    const page = pageOf(await this.store.listPage(organisationId, limit, after), limit);
    const people = await this.devices.people(page.items.map((row) => row.createdBy));
    const now = this.clock.now();
    return { items: page.items.map((row) => this.view(row, people, now)), more: page.more };
  }

  /** A key of the organisation; anything else (unknown, another organisation's) is 404. */
  async find(organisationId: string, id: string): Promise<JoinKeyRecord> {
    const record = await this.store.findById(id);
    if (!record || record.organisationId !== organisationId) throw notFound('no join key has this id');
    return record;
  }

  /** Revoking twice is harmless; devices the key enrolled keep working (revoke those one by one). */
  async revoke(record: JoinKeyRecord, actor: AuditActor): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await this.store.withManager(manager).revoke(record.id, this.clock.now());
      await this.trail.record(manager, { action: 'join_key.revoked', organisationId: record.organisationId, actor, target: { joinKeyId: record.id } });
    });
  }

  /**
   * First step of a join: the key presented, if it may enrol a node in `organisationId` (the
   * organisation served at the host; undefined on Cloud, where the key decides). Reads only:
   * a join refused later (a bad DPoP proof) leaves a single-use key unused.
   */
  async usableKey(presented: string, organisationId: string | undefined): Promise<JoinKeyRecord> {
    const parts = KEY_SHAPE.exec(presented);
    const record = parts ? await this.store.findByLookup(parts[1]!) : null;
    const matches = safeEqual(hashSecret(parts?.[2] ?? ''), record?.secretHash ?? NO_SUCH_KEY_HASH);
    // Another organisation's key is no key here: the same answer as an unknown one.
    if (!record || !matches || (organisationId !== undefined && record.organisationId !== organisationId)) throw notAJoinKey();
    const now = this.clock.now();
    switch (stateOf(record, now)) {
      case 'revoked':
        throw invalidGrant('the join key was revoked');
      case 'used':
        throw invalidGrant('the join key was already used');
      case 'expired':
        throw invalidGrant('the join key has expired');
      case 'active':
        break;
    }
    // The creator's authority is checked again at every use, at their stored role: a demotion
    // recorded here (set-role, remove, or their next token under a role claim) ends the key's use.
    const role = await this.organisations.roleOf(record.organisationId, record.createdBy);
    if (role !== 'owner' && role !== 'admin') {
      throw invalidGrant('the person who created the join key may no longer enrol nodes');
    }
    return record;
  }

  /** Second step: counts the use and enrols the node, or refuses if the key was used meanwhile. */
  async enrol(key: JoinKeyRecord, node: JoiningNode): Promise<TokenAnswer> {
    const now = this.clock.now();
    const device: DeviceRecord = {
      id: newId('dev'),
      organisationId: key.organisationId,
      personId: key.createdBy,
      name: node.name,
      kind: 'node',
      workspaceId: null,
      nodeId: node.nodeId,
      enrolledVia: 'join_key',
      joinKeyId: key.id,
      dpopJkt: node.dpopJkt ?? null,
      scope: scopeString('node'),
      createdAt: now,
      lastSeenAt: null,
      revokedAt: null,
    };
    const answer = await this.dataSource.transaction(async (manager) => {
      if (!(await this.store.withManager(manager).consume(key.id, now))) return undefined;
      await manager.insert(DeviceEntity, device);
      return this.tokens.issue(manager, device);
    });
    // A concurrent join took the last use, or the key was revoked or expired since the check.
    if (!answer) throw invalidGrant('the join key is no longer valid');
    return answer;
  }

  private view(record: JoinKeyRecord, people: Map<string, Person>, now: Date): JoinKeyView {
    return {
      record,
      // The creator's person row can be gone (people are deleted with their account).
      createdBy: people.get(record.createdBy) ?? { id: record.createdBy, name: '' },
      state: stateOf(record, now),
    };
  }
}
