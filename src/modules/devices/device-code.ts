import { NO_AUDIT_TRAIL, type AuditActor, type AuditTrail } from '../../audit.js';
import { randomInt } from 'node:crypto';
import { defineAbilityFor, permits } from '../../../policies/index.js';
import type { DataSource, EntityManager } from 'typeorm';
import type { OrganisationRole } from '../../auth/principal.js';
import { isUniqueViolation } from '../../db/errors.js';
import { forbidden, notFound } from '../../errors.js';
import type { Clock } from '../../util/clock.js';
import { newId } from '../../util/ids.js';
import { hashSecret, newSecret } from '../../util/secrets.js';
import { oauthError } from '../oauth/errors.js';
import type { OrganisationService } from '../organisation/service.js';
import {
  DeviceAuthorizationEntity,
  DeviceEntity,
  type DeviceAuthorizationRecord,
  type DeviceKind,
  type DeviceRecord,
} from './entities.js';
import { scopeString } from './scopes.js';
import { DeviceStore } from './store.js';
import type { DeviceTokenService, TokenAnswer } from './tokens.js';

/**
 * The device authorization grant (RFC 8628) with approval by a signed-in person.
 *
 * States: pending -> approved -> redeemed, or pending -> denied; a code past `expiresAt` is
 * expired whatever its state. Redemption is one conditional UPDATE, so of two concurrent polls
 * only one gets tokens; a code presented after it was redeemed revokes what it issued (RFC 6749
 * 4.1.2's rule for codes used twice).
 */

export const DEVICE_CODE_PREFIX = 'platform_dc_';

/** RFC 8628 6.1: consonants only (no look-alikes, no words), 8 characters, shown XXXX-XXXX. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** Case- and dash-insensitive; undefined when it cannot be a user code at all. */
export function normaliseUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== USER_CODE_LENGTH) return undefined;
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return undefined;
  return code;
}

export interface DeviceCodeSettings {
  deviceCodeTtlSeconds: number;
  pollIntervalSeconds: number;
}

export interface StartRequest {
  organisationId: string | null;
  workspaceId: string;
  name: string;
  kind: DeviceKind;
  dpopJkt: string | undefined;
  requesterAddress: string | undefined;
  requesterUserAgent: string | undefined;
}

export interface StartedCode {
  deviceCode: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

export interface Approver {
  personId: string;
  organisationId: string;
  role: OrganisationRole | undefined;
}

/** What the approving person is shown about the device asking to join. */
export interface PendingDevice {
  userCode: string;
  name: string;
  kind: DeviceKind;
  workspaceId: string;
  requestedAt: Date;
  expiresAt: Date;
  requesterAddress: string | null;
  requesterUserAgent: string | null;
  keyBound: boolean;
}

/**
 * Why a code is not pending, as the approval page tells the person who typed it. A code of
 * another organisation (that this person did not decide) is `unknown`: the page tells nobody
 * about another organisation's codes.
 */
export type CodeOutcome =
  | { state: 'unknown' }
  | { state: 'expired' }
  | { state: 'approved' | 'denied'; byYou: boolean; name: string | undefined };

export class DeviceCodeService {
  private readonly devices: DeviceStore;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly settings: DeviceCodeSettings,
    private readonly tokens: DeviceTokenService,
    private readonly organisations: OrganisationService,
    private readonly trail: AuditTrail = NO_AUDIT_TRAIL,
  ) {
    this.devices = new DeviceStore(dataSource);
  }

  async start(request: StartRequest): Promise<StartedCode> {
    const now = this.clock.now();
    for (let attempt = 0; ; attempt++) {
      const deviceCode = newSecret(DEVICE_CODE_PREFIX);
      const userCode = newUserCode();
      const record: DeviceAuthorizationRecord = {
        id: newId('dca'),
        deviceCodeHash: hashSecret(deviceCode),
        userCodeHash: hashSecret(userCode),
        organisationId: request.organisationId,
        workspaceId: request.workspaceId,
        name: request.name,
        kind: request.kind,
        dpopJkt: request.dpopJkt ?? null,
        status: 'pending',
        intervalSeconds: this.settings.pollIntervalSeconds,
        lastPolledAt: null,
        expiresAt: new Date(now.getTime() + this.settings.deviceCodeTtlSeconds * 1000),
        requesterAddress: request.requesterAddress?.slice(0, 64) ?? null,
        requesterUserAgent: request.requesterUserAgent?.slice(0, 300) ?? null,
        claimedBy: null,
        claimedAt: null,
        decidedBy: null,
        decidedAt: null,
        deviceId: null,
        createdAt: now,
      };
      try {
        await this.dataSource.manager.insert(DeviceAuthorizationEntity, record);
      } catch (error) {
        // A user code collides with a stored one (old codes are kept): draw again.
        if (attempt < 5 && isUniqueViolation(error)) continue;
        throw error;
      }
      return { deviceCode, userCode: formatUserCode(userCode), expiresIn: this.settings.deviceCodeTtlSeconds, interval: this.settings.pollIntervalSeconds };
    }
  }

  /** The authorization a device code names, for the poll (the proof is checked against its key). */
  async findByDeviceCode(deviceCode: string): Promise<DeviceAuthorizationRecord> {
    const record = deviceCode.startsWith(DEVICE_CODE_PREFIX)
      ? await this.dataSource.manager.findOneBy(DeviceAuthorizationEntity, { deviceCodeHash: hashSecret(deviceCode) })
      : null;
    if (!record) throw oauthError('invalid_grant', 'the device code is not valid');
    return record;
  }

  /**
   * One poll of the token endpoint (RFC 8628 3.4/3.5), after any DPoP proof was verified.
   * `proofJkt` is the key of that proof: a code asked for without `dpop_jkt` gets its tokens
   * bound to the key the poll proved (RFC 9449 5), a bound code keeps its own.
   */
  async poll(record: DeviceAuthorizationRecord, proofJkt?: string): Promise<TokenAnswer> {
    const now = this.clock.now();
    const manager = this.dataSource.manager;
    if (record.status === 'redeemed') {
      if (record.deviceId) await this.devices.revokeTokensOfDevice(record.deviceId, now);
      throw oauthError('invalid_grant', 'the device code was already exchanged; the tokens it issued have been revoked');
    }
    if (record.expiresAt.getTime() <= now.getTime()) throw oauthError('expired_token', 'the device code has expired; ask for a new one');
    if (record.status === 'denied') throw oauthError('access_denied', 'the request was denied');

    if (record.lastPolledAt && now.getTime() - record.lastPolledAt.getTime() < record.intervalSeconds * 1000) {
      // RFC 8628 3.5: the interval grows by 5 seconds for this and every later request.
      await manager.update(DeviceAuthorizationEntity, { id: record.id }, { lastPolledAt: now, intervalSeconds: record.intervalSeconds + 5 });
      throw oauthError('slow_down', `polling too fast; wait at least ${record.intervalSeconds + 5} seconds between requests`);
    }
    if (record.status === 'pending') {
      await manager.update(DeviceAuthorizationEntity, { id: record.id }, { lastPolledAt: now });
      throw oauthError('authorization_pending', 'the request has not been approved yet');
    }
    return this.redeem(record, now, record.dpopJkt ?? proofJkt ?? null);
  }

  private async redeem(record: DeviceAuthorizationRecord, now: Date, dpopJkt: string | null): Promise<TokenAnswer> {
    const organisationId = record.organisationId;
    const approverId = record.decidedBy;
    if (!organisationId || !approverId) throw oauthError('invalid_grant', 'the device code is not valid');
    // The approver's membership is checked again when the tokens are handed out.
    const role = await this.organisations.roleOf(organisationId, approverId);
    if (!role || !mayApproveKind(record.kind, { personId: approverId, organisationId, role })) {
      // Final, as RFC 8628 makes access_denied: the person regaining the role later must not
      // revive an approval they could no longer give.
      await this.dataSource.manager.update(DeviceAuthorizationEntity, { id: record.id, status: 'approved' }, { status: 'denied' });
      throw oauthError('access_denied', 'the person who approved this device may no longer approve it');
    }
    const device: DeviceRecord = {
      id: newId('dev'),
      organisationId,
      personId: approverId,
      name: record.name,
      kind: record.kind,
      workspaceId: record.workspaceId,
      nodeId: null,
      enrolledVia: 'device_code',
      joinKeyId: null,
      dpopJkt,
      scope: scopeString(record.kind),
      createdAt: now,
      lastSeenAt: null,
      revokedAt: null,
    };
    const answer = await this.dataSource.transaction(async (manager: EntityManager) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceAuthorizationEntity)
        // The key the tokens were bound to goes on the record too: from now on the code, presented
        // again, needs a proof of that key before it can end the tokens it issued.
        .set({ status: 'redeemed', deviceId: device.id, lastPolledAt: now, dpopJkt })
        .where("id = :id AND status = 'approved'", { id: record.id })
        .execute();
      if ((result.affected ?? 0) !== 1) return undefined;
      await manager.insert(DeviceEntity, device);
      return this.tokens.issue(manager, device);
    });
    if (answer) return answer;
    // A concurrent poll redeemed it first: this one is a second presentation of the code.
    const current = await this.dataSource.manager.findOneBy(DeviceAuthorizationEntity, { id: record.id });
    if (current?.deviceId) await this.devices.revokeTokensOfDevice(current.deviceId, now);
    throw oauthError('invalid_grant', 'the device code was already exchanged; the tokens it issued have been revoked');
  }

  // Approval by a person -------------------------------------------------------------------

  private async findForApprover(userCode: string, approver: Approver): Promise<DeviceAuthorizationRecord> {
    return this.findPending(userCode, approver.organisationId);
  }

  private async findPending(userCode: string, organisationId: string): Promise<DeviceAuthorizationRecord> {
    const code = normaliseUserCode(userCode);
    const record = code ? await this.dataSource.manager.findOneBy(DeviceAuthorizationEntity, { userCodeHash: hashSecret(code) }) : null;
    const now = this.clock.now();
    // Unknown, expired, decided, or another organisation's: all look the same from outside.
    if (
      !record ||
      record.status !== 'pending' ||
      record.expiresAt.getTime() <= now.getTime() ||
      (record.organisationId !== null && record.organisationId !== organisationId)
    ) {
      throw notFound('no pending request has this code; check it, or ask the device for a new one');
    }
    return record;
  }

  private view(record: DeviceAuthorizationRecord, userCode: string): PendingDevice {
    return {
      userCode: formatUserCode(normaliseUserCode(userCode) as string),
      name: record.name,
      kind: record.kind,
      workspaceId: record.workspaceId,
      requestedAt: record.createdAt,
      expiresAt: record.expiresAt,
      requesterAddress: record.requesterAddress,
      requesterUserAgent: record.requesterUserAgent,
      keyBound: record.dpopJkt !== null,
    };
  }

  /**
   * Opens a pending code and claims it for the approver: the first signed-in person who opens it
   * is the only one who may approve or deny it. A node is refused before it is claimed, so a
   * member who opens it cannot keep the owners and admins who may approve it away.
   */
  async lookUp(userCode: string, approver: Approver): Promise<PendingDevice> {
    const record = await this.findForApprover(userCode, approver);
    await this.claim(record, approver);
    return this.view(record, userCode);
  }

  async decide(userCode: string, approver: Approver, decision: 'approve' | 'deny', actor: AuditActor): Promise<PendingDevice> {
    const record = await this.findForApprover(userCode, approver);
    await this.claim(record, approver);
    await this.dataSource.transaction(async (manager) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceAuthorizationEntity)
        .set({
          status: decision === 'approve' ? 'approved' : 'denied',
          decidedBy: approver.personId,
          decidedAt: this.clock.now(),
          organisationId: approver.organisationId,
        })
        // An approval that lands just past expiry is harmless: the poll refuses expired codes.
        .where("id = :id AND status = 'pending' AND claimed_by = :person", { id: record.id, person: approver.personId })
        .execute();
      if ((result.affected ?? 0) !== 1) throw notFound('no pending request has this code; check it, or ask the device for a new one');
      // The device, never the code.
      await this.trail.record(manager, {
        action: decision === 'approve' ? 'device.approved' : 'device.denied',
        organisationId: approver.organisationId,
        actor,
        target: { kind: record.kind, name: record.name },
      });
    });
    return this.view(record, userCode);
  }

  /**
   * What became of a code that is not pending (the page asks after `lookUp` or `decide` answered
   * 404): decided (by this person or another of the organisation), expired, or unknown. The
   * device's name is told only to the person who decided it.
   */
  async outcomeOf(userCode: string, approver: Approver): Promise<CodeOutcome> {
    const code = normaliseUserCode(userCode);
    const record = code ? await this.dataSource.manager.findOneBy(DeviceAuthorizationEntity, { userCodeHash: hashSecret(code) }) : null;
    if (!record) return { state: 'unknown' };
    const byYou = record.decidedBy === approver.personId;
    const ours = byYou || record.organisationId === null || record.organisationId === approver.organisationId;
    if (!ours) return { state: 'unknown' };
    if (record.status === 'approved' || record.status === 'redeemed' || record.status === 'denied') {
      return { state: record.status === 'denied' ? 'denied' : 'approved', byYou, name: byYou ? record.name : undefined };
    }
    if (record.expiresAt.getTime() <= this.clock.now().getTime()) return { state: 'expired' };
    return { state: 'unknown' };
  }

  /**
   * An administrator's refusal from the command line (`platform device deny` without `--as`):
   * any pending code of the organisation (or of none yet), whoever opened it. No one is recorded
   * as deciding; the device is told `access_denied` at its next poll.
   */
  async denyAsOperator(userCode: string, organisationId: string, actor: AuditActor): Promise<PendingDevice> {
    const record = await this.findPending(userCode, organisationId);
    await this.dataSource.transaction(async (manager) => {
      const result = await manager
        .createQueryBuilder()
        .update(DeviceAuthorizationEntity)
        .set({ status: 'denied', decidedAt: this.clock.now(), organisationId })
        .where("id = :id AND status = 'pending'", { id: record.id })
        .execute();
      if ((result.affected ?? 0) !== 1) throw notFound('no pending request has this code; check it, or ask the device for a new one');
      await this.trail.record(manager, { action: 'device.denied', organisationId, actor, target: { kind: record.kind, name: record.name } });
    });
    return this.view(record, userCode);
  }

  private async claim(record: DeviceAuthorizationRecord, approver: Approver): Promise<void> {
    if (!approver.role || !mayApproveKind(record.kind, { ...approver, role: approver.role })) throw forbidden('only owners and admins may approve a node');
    if (record.claimedBy === approver.personId) return;
    if (record.claimedBy !== null) throw forbidden('another person has opened this code; only they may approve or deny it');
    const result = await this.dataSource.manager
      .createQueryBuilder()
      .update(DeviceAuthorizationEntity)
      .set({ claimedBy: approver.personId, claimedAt: this.clock.now() })
      .where('id = :id AND claimed_by IS NULL', { id: record.id })
      .execute();
    if ((result.affected ?? 0) === 1) return;
    // Someone claimed it between our read and our write: it is theirs unless it was us.
    const current = await this.dataSource.manager.findOneBy(DeviceAuthorizationEntity, { id: record.id });
    if (current?.claimedBy !== approver.personId) throw forbidden('another person has opened this code; only they may approve or deny it');
  }
}

/**
 * Who may approve which kind of device is a rule of policies/device.ts, asked for the person who
 * approves (or approved) with their role in the organisation as stored now: the caller of the API
 * or the approval page, or the approver of record when the device polls. The rule does not tell
 * person tokens and Cloud sessions apart, so the approver is asked about as a person.
 */
export function mayApproveKind(kind: DeviceKind, approver: Approver & { role: OrganisationRole }): boolean {
  const ability = defineAbilityFor({ kind: 'person', organisationId: approver.organisationId, personId: approver.personId, role: approver.role, projectRoles: new Map() });
  return permits(ability, 'approve', 'DeviceRequest', { organisationId: approver.organisationId, kind });
}
