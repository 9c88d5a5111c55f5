import { hotRead } from '../../db/prepared.js';
import { In, IsNull, type DataSource, type EntityManager } from 'typeorm';
import { PersonEntity } from '../organisation/entities.js';
import {
  DeviceEntity,
  DeviceTokenEntity,
  type DeviceRecord,
  type DeviceTokenRecord,
} from './entities.js';

export interface Person {
  id: string;
  name: string;
}

/** Where a page of a newest-first list starts: after this row. */
export interface PageAfter {
  createdAt: Date;
  id: string;
}

export interface Page<T> {
  items: T[];
  /** The last row of this page, when more rows follow it. */
  more: PageAfter | undefined;
}

/** A page from a query that asked for one row more than `limit`. */
export function pageOf<T extends PageAfter>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, more: rows.length > limit && last ? { createdAt: last.createdAt, id: last.id } : undefined };
}

/** A datetime as a raw query returns it: a Date from MySQL, UTC text from SQLite. */
function storedDate(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  return new Date(`${String(value).replace(' ', 'T')}Z`);
}

/** The only code that queries devices and their tokens. */
export class DeviceStore {
  constructor(private readonly db: DataSource | EntityManager) {}

  private get manager(): EntityManager {
    return 'manager' in this.db ? this.db.manager : this.db;
  }

  withManager(manager: EntityManager): DeviceStore {
    return new DeviceStore(manager);
  }

  async insertDevice(device: DeviceRecord): Promise<void> {
    await this.manager.insert(DeviceEntity, device);
  }

  async findDevice(id: string): Promise<DeviceRecord | null> {
    return this.manager.findOneBy(DeviceEntity, { id });
  }

  async listDevices(organisationId: string): Promise<DeviceRecord[]> {
    return this.manager.find(DeviceEntity, {
      where: { organisationId, revokedAt: IsNull() },
      order: { createdAt: 'DESC', id: 'ASC' },
    });
  }

  /** The organisation's devices still enrolled, newest first; one row more than asked tells
   * whether another page follows. */
  async listDevicesPage(organisationId: string, limit: number, after: PageAfter | undefined): Promise<DeviceRecord[]> {
    const query = this.manager
      .createQueryBuilder(DeviceEntity, 'device')
      .where('device.organisationId = :organisationId AND device.revokedAt IS NULL', { organisationId })
      .orderBy('device.createdAt', 'DESC')
      .addOrderBy('device.id', 'DESC')
      .limit(limit + 1);
    if (after) {
      query.andWhere('(device.createdAt < :afterAt OR (device.createdAt = :afterAt AND device.id < :afterId))', {
        afterAt: after.createdAt,
        afterId: after.id,
      });
    }
    return query.getMany();
  }

  /** Names of people (approvers, creators of join keys), by id. */
  async people(ids: readonly string[]): Promise<Map<string, Person>> {
    const unique = [...new Set(ids)];
    if (!unique.length) return new Map();
    const rows = await this.manager.find(PersonEntity, { where: { id: In(unique) }, select: { id: true, name: true } });
    return new Map(rows.map((row) => [row.id, { id: row.id, name: row.name }]));
  }

  async insertTokens(tokens: DeviceTokenRecord[]): Promise<void> {
    await this.manager.insert(DeviceTokenEntity, tokens);
  }

  /**
   * An access token's expiry and revocation with its device, by the hash of the token: every
   * device request asks this, so it is one plain SQL query (the same text on SQLite and MySQL).
   */
  async findAccessToken(tokenHash: string): Promise<{ expiresAt: Date; revoked: boolean; device: DeviceRecord } | null> {
    const rows = (await hotRead(
      this.manager,
      'SELECT t.expires_at AS expiresAt, t.revoked_at AS tokenRevokedAt, d.id, d.organisation_id AS organisationId, d.person_id AS personId, ' +
        'd.name, d.kind, d.workspace_id AS workspaceId, d.node_id AS nodeId, d.enrolled_via AS enrolledVia, d.join_key_id AS joinKeyId, ' +
        'd.dpop_jkt AS dpopJkt, d.scope, d.created_at AS createdAt, d.last_seen_at AS lastSeenAt, d.revoked_at AS revokedAt ' +
        "FROM device_tokens t INNER JOIN devices d ON d.id = t.device_id WHERE t.token_hash = ? AND t.kind = 'access'",
      [tokenHash],
    ));
    const row = rows[0];
    if (!row) return null;
    const { expiresAt, tokenRevokedAt, ...device } = row;
    return {
      expiresAt: storedDate(expiresAt) as Date,
      revoked: tokenRevokedAt !== null,
      device: {
        ...(device as unknown as DeviceRecord),
        createdAt: storedDate(device.createdAt) as Date,
        lastSeenAt: storedDate(device.lastSeenAt),
        revokedAt: storedDate(device.revokedAt),
      },
    };
  }

  /** A token by the hash of its value, with its device: one query on the hot path. */
  async findTokenWithDevice(tokenHash: string): Promise<{ token: DeviceTokenRecord; device: DeviceRecord } | null> {
    const token = await this.manager
      .createQueryBuilder(DeviceTokenEntity, 'token')
      .innerJoinAndMapOne('token.device', 'Device', 'device', 'device.id = token.deviceId')
      .where('token.tokenHash = :tokenHash', { tokenHash })
      .getOne();
    if (!token) return null;
    const { device, ...rest } = token as DeviceTokenRecord & { device: DeviceRecord };
    return { token: rest, device };
  }

  async findToken(id: string): Promise<DeviceTokenRecord | null> {
    return this.manager.findOneBy(DeviceTokenEntity, { id });
  }

  /**
   * Marks a refresh token used, once: of two concurrent exchanges only one changes the row.
   * The replacement pair is kept sealed on the row for the grace period.
   */
  async markRefreshUsed(id: string, usedAt: Date, graceSealed: string | null, graceUntil: Date | null): Promise<boolean> {
    const result = await this.manager
      .createQueryBuilder()
      .update(DeviceTokenEntity)
      .set({ usedAt, graceSealed, graceUntil })
      .where('id = :id AND used_at IS NULL AND revoked_at IS NULL', { id })
      .execute();
    return (result.affected ?? 0) === 1;
  }

  /** Sealed copies of a device's replacement pairs whose grace has passed are erased: the copy
   * exists only for the grace, never as a second way to the live pair. */
  async eraseSpentGrace(deviceId: string, now: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(DeviceTokenEntity)
      .set({ graceSealed: null, graceUntil: null })
      .where('device_id = :deviceId AND grace_until IS NOT NULL AND grace_until <= :now', { deviceId, now })
      .execute();
  }

  /** Every token of the device stops working, and sealed grace copies are erased. */
  async revokeTokensOfDevice(deviceId: string, at: Date): Promise<void> {
    await this.manager
      .createQueryBuilder()
      .update(DeviceTokenEntity)
      .set({ revokedAt: at, graceSealed: null, graceUntil: null })
      .where('device_id = :deviceId AND revoked_at IS NULL', { deviceId })
      .execute();
  }

  async revokeDevice(deviceId: string, at: Date): Promise<void> {
    await this.manager.update(DeviceEntity, { id: deviceId }, { revokedAt: at });
    await this.revokeTokensOfDevice(deviceId, at);
  }

  /** Which of these devices still hold a refresh token they can use (unused, unrevoked, unexpired). */
  async withLiveRefreshToken(deviceIds: readonly string[], now: Date): Promise<Set<string>> {
    if (!deviceIds.length) return new Set();
    const rows = await this.manager
      .createQueryBuilder(DeviceTokenEntity, 'token')
      .select('DISTINCT token.deviceId', 'deviceId')
      .where("token.deviceId IN (:...deviceIds) AND token.kind = 'refresh' AND token.revokedAt IS NULL AND token.usedAt IS NULL AND token.expiresAt > :now", {
        deviceIds: [...new Set(deviceIds)],
        now,
      })
      .getRawMany<{ deviceId: string }>();
    return new Set(rows.map((row) => row.deviceId));
  }

  async touch(deviceId: string, at: Date): Promise<void> {
    await this.manager.update(DeviceEntity, { id: deviceId }, { lastSeenAt: at });
  }
}
