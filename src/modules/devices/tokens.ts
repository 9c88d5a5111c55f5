import { NO_AUDIT_TRAIL, type AuditActor, type AuditTrail } from '../../audit.js';
import { primaryReads, type Reads } from '../../db/reads.js';
import type { DataSource, EntityManager } from 'typeorm';
import { pairWithinGrace, sealPair } from '../../auth/refresh-grace.js';
import { ApiError } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import type { DeviceRecord, DeviceTokenRecord } from './entities.js';
import { DeviceStore } from './store.js';
import { ACCESS_TOKEN_PREFIX } from '../../auth/token-formats.js';

/**
 * Device tokens (spec 2.10): `platform_at_` access tokens and `platform_rt_` refresh tokens.
 * Only their SHA-256 hashes are stored. Refresh tokens rotate on every use; a replaced refresh
 * token presented again ends every token of the device (the RFC 6819 5.2.2.3 / OAuth 2.0
 * Security BCP reuse rule), except within a short grace for a concurrent refresh of the same
 * token by the same device and key, which gets the same new pair.
 */

export const REFRESH_TOKEN_PREFIX = 'platform_rt_';

export interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: 'Bearer' | 'DPoP';
  device_id: string;
  scope: string;
}

export interface TokenLifetimes {
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  refreshGraceSeconds: number;
}

/** OAuth token-endpoint refusal (RFC 6749 5.2): 400 with `error` and `error_description`. */
export const invalidGrant = (message: string): ApiError => new ApiError(400, 'invalid_grant', message, { oauth: true });

export class DeviceTokenService {
  private readonly store: DeviceStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly lifetimes: TokenLifetimes,
    /** Whether the device's person still belongs to its organisation (checked at every refresh). */
    private readonly isMember: (organisationId: string, personId: string) => Promise<boolean> = async () => true,
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
    /** Where a token is looked up by its hash (src/db/reads.ts): a read replica when it is current, else the primary. */
    private readonly reads: Reads = primaryReads(dataSource),
  ) {
    this.store = new DeviceStore(dataSource);
  }

  private newPair(device: DeviceRecord): { answer: TokenAnswer; rows: DeviceTokenRecord[]; refreshId: string } {
    const now = this.clock.now();
    const access = newSecret(ACCESS_TOKEN_PREFIX);
    const refresh = newSecret(REFRESH_TOKEN_PREFIX);
    const refreshId = newId('tok');
    const base = { deviceId: device.id, pairId: refreshId, createdAt: now, usedAt: null, graceSealed: null, graceUntil: null, revokedAt: null };
    return {
      refreshId,
      answer: {
        access_token: access,
        refresh_token: refresh,
        expires_in: this.lifetimes.accessTokenTtlSeconds,
        token_type: device.dpopJkt ? 'DPoP' : 'Bearer',
        device_id: device.id,
        scope: device.scope,
      },
      rows: [
        { ...base, id: newId('tok'), kind: 'access', tokenHash: hashSecret(access), expiresAt: new Date(now.getTime() + this.lifetimes.accessTokenTtlSeconds * 1000) },
        { ...base, id: refreshId, kind: 'refresh', tokenHash: hashSecret(refresh), expiresAt: new Date(now.getTime() + this.lifetimes.refreshTokenTtlSeconds * 1000) },
      ],
    };
  }

  /** A first pair for a newly enrolled device, inside the caller's transaction. */
  async issue(manager: EntityManager, device: DeviceRecord): Promise<TokenAnswer> {
    const { answer, rows } = this.newPair(device);
    await this.store.withManager(manager).insertTokens(rows);
    return answer;
  }

  /**
   * The device of a refresh token, before any proof is checked (the proof needs its key).
   * With `organisationId` (self-hosted: the organisation at the host), another organisation's
   * token is refused like an unknown one.
   */
  async deviceOfRefreshToken(refreshToken: string, organisationId?: string): Promise<DeviceRecord> {
    const found = refreshToken.startsWith(REFRESH_TOKEN_PREFIX) ? await this.store.findTokenWithDevice(hashSecret(refreshToken)) : null;
    if (!found || found.token.kind !== 'refresh') throw invalidGrant('the refresh token is not valid');
    if (organisationId !== undefined && found.device.organisationId !== organisationId) throw invalidGrant('the refresh token is not valid');
    return found.device;
  }

  /**
   * Exchanges a refresh token for a new pair. The caller has already checked the DPoP proof
   * against the device's key when the device is bound.
   */
  async refresh(refreshToken: string): Promise<TokenAnswer> {
    const now = this.clock.now();
    const found = refreshToken.startsWith(REFRESH_TOKEN_PREFIX) ? await this.store.findTokenWithDevice(hashSecret(refreshToken)) : null;
    if (!found || found.token.kind !== 'refresh') throw invalidGrant('the refresh token is not valid');
    const { token, device } = found;
    if (device.revokedAt || token.revokedAt) throw invalidGrant('the refresh token was revoked');
    if (token.expiresAt.getTime() <= now.getTime()) throw invalidGrant('the refresh token has expired');
    // A device acts for the person who approved it: once they have left the organisation, its
    // access ends with its current access token (DEVICE_ACCESS_TOKEN_TTL_SECONDS), and it must
    // enrol again.
    if (!(await this.isMember(device.organisationId, device.personId))) {
      await this.store.revokeTokensOfDevice(device.id, now);
      throw invalidGrant('the person who approved this device no longer belongs to the organisation');
    }

    if (token.usedAt === null) {
      const { answer, rows } = this.newPair(device);
      const graceUntil = this.lifetimes.refreshGraceSeconds > 0 ? new Date(now.getTime() + this.lifetimes.refreshGraceSeconds * 1000) : null;
      const sealed = graceUntil ? sealPair(answer, refreshToken, token.id) : null;
      const won = await this.dataSource.transaction(async (manager) => {
        const store = this.store.withManager(manager);
        if (!(await store.markRefreshUsed(token.id, now, sealed, graceUntil))) return false;
        await store.insertTokens(rows);
        await store.eraseSpentGrace(device.id, now);
        return true;
      });
      if (won) return answer;
      // Another exchange of the same token won the race: fall through to the used-token rules.
    }
    return this.replayOfUsedToken(refreshToken, token.id, device.id, now);
  }

  private async replayOfUsedToken(refreshToken: string, tokenId: string, deviceId: string, now: Date): Promise<TokenAnswer> {
    const token = await this.store.findToken(tokenId);
    const pair = token
      ? await pairWithinGrace<TokenAnswer>(token, refreshToken, now, async (candidate) => {
          const replacement = await this.store.findTokenWithDevice(hashSecret(candidate.refresh_token));
          // No row yet means the exchange that sealed it is still writing it: on SQLite every
          // query shares one connection, so this read can land between the two statements of
          // its transaction.
          return replacement !== null && (replacement.token.usedAt !== null || replacement.token.revokedAt !== null);
        })
      : undefined;
    if (pair) return pair;
    await this.store.revokeTokensOfDevice(deviceId, now);
    throw invalidGrant('the refresh token was already used; every token of this device has been revoked');
  }

  /** The device behind an access token, when the token is current. */
  async resolveAccessToken(accessToken: string): Promise<{ device: DeviceRecord; expiresAt: Date } | undefined> {
    if (!accessToken.startsWith(ACCESS_TOKEN_PREFIX)) return undefined;
    return this.resolveAccessTokenHash(hashSecret(accessToken));
  }

  /** The same by the token's stored hash (hex SHA-256), for a caller that already computed it. */
  async resolveAccessTokenHash(tokenHash: string): Promise<{ device: DeviceRecord; expiresAt: Date } | undefined> {
    const found = await this.reads.credential((manager) => this.store.withManager(manager).findAccessToken(tokenHash));
    if (!found || found.revoked || found.device.revokedAt) return undefined;
    if (found.expiresAt.getTime() <= this.clock.now().getTime()) return undefined;
    return { device: found.device, expiresAt: found.expiresAt };
  }

  async revokeDevice(deviceId: string): Promise<void> {
    await this.dataSource.transaction((manager) => this.store.withManager(manager).revokeDevice(deviceId, this.clock.now()));
  }

  /** An administrator's revocation: its audit row in the same transaction (revoking twice is harmless, and audited again). */
  async revokeByAdministrator(device: Pick<DeviceRecord, 'id' | 'organisationId' | 'kind' | 'revokedAt'>, actor: AuditActor): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      if (!device.revokedAt) await this.store.withManager(manager).revokeDevice(device.id, this.clock.now());
      await this.trail.record(manager, { action: 'device.revoked', organisationId: device.organisationId, actor, target: { deviceId: device.id, kind: device.kind } });
    });
  }
}
