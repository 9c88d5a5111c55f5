import { EntitySchema } from 'typeorm';
import { rotatingTokenColumns, type RotatingTokenFields } from '../oauth/rotating-token.js';

/**
 * Devices (workbenches and nodes), their tokens, device-code authorisations and join keys.
 * Every secret (token, device code, user code, join key) is stored only as a SHA-256 hash.
 */

export type DeviceKind = 'workbench' | 'node';
export const DEVICE_KINDS: readonly DeviceKind[] = ['workbench', 'node'];

export interface DeviceRecord {
  id: string;
  organisationId: string;
  /** The person who approved the device (or created the join key that enrolled it). */
  personId: string;
  name: string;
  kind: DeviceKind;
  workspaceId: string | null;
  /** A node's own id from its manifest. */
  nodeId: string | null;
  enrolledVia: 'device_code' | 'join_key';
  joinKeyId: string | null;
  /** RFC 7638 thumbprint of the key every token of this device is bound to (DPoP). */
  dpopJkt: string | null;
  scope: string;
  createdAt: Date;
  lastSeenAt: Date | null;
  revokedAt: Date | null;
}

export type DeviceTokenKind = 'access' | 'refresh';

/** A device's token: a rotating pair's fields (src/modules/oauth/rotating-token.ts) and its device. */
export interface DeviceTokenRecord extends RotatingTokenFields {
  deviceId: string;
  kind: DeviceTokenKind;
}

export type DeviceAuthorizationStatus = 'pending' | 'approved' | 'denied' | 'redeemed';

export interface DeviceAuthorizationRecord {
  id: string;
  deviceCodeHash: string;
  userCodeHash: string;
  /** Self-hosted: the organisation at whose host the code was asked; Cloud: the approver's. */
  organisationId: string | null;
  workspaceId: string;
  name: string;
  kind: DeviceKind;
  dpopJkt: string | null;
  status: DeviceAuthorizationStatus;
  intervalSeconds: number;
  lastPolledAt: Date | null;
  expiresAt: Date;
  requesterAddress: string | null;
  requesterUserAgent: string | null;
  /** The first signed-in person who opened the code; only they may approve or deny it. */
  claimedBy: string | null;
  claimedAt: Date | null;
  decidedBy: string | null;
  decidedAt: Date | null;
  deviceId: string | null;
  createdAt: Date;
}

export interface JoinKeyRecord {
  id: string;
  organisationId: string;
  createdBy: string;
  description: string;
  /** The public part of the key, used to find it; the rest is checked against `secretHash`. */
  lookup: string;
  secretHash: string;
  reusable: boolean;
  expiresAt: Date;
  usedAt: Date | null;
  useCount: number;
  revokedAt: Date | null;
  createdAt: Date;
}

const id = { type: 'varchar', length: 40, primary: true } as const;
const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const optionalRef = (name: string) => ({ type: 'varchar', length: 40, name, nullable: true, default: null }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;
const optionalWhen = (name: string) => ({ type: 'datetime', precision: 3, name, nullable: true, default: null }) as const;
const optionalText = (name: string, length: number) => ({ type: 'varchar', length, name, nullable: true, default: null }) as const;
const hash = (name: string) => ({ type: 'varchar', length: 64, name }) as const;

export const DeviceEntity = new EntitySchema<DeviceRecord>({
  name: 'Device',
  tableName: 'devices',
  columns: {
    id,
    organisationId: ref('organisation_id'),
    personId: ref('person_id'),
    name: { type: 'varchar', length: 200 },
    kind: { type: 'varchar', length: 20 },
    workspaceId: optionalText('workspace_id', 200),
    nodeId: optionalText('node_id', 200),
    enrolledVia: { type: 'varchar', length: 20, name: 'enrolled_via' },
    joinKeyId: optionalRef('join_key_id'),
    dpopJkt: optionalText('dpop_jkt', 64),
    scope: { type: 'varchar', length: 500 },
    createdAt: when('created_at'),
    lastSeenAt: optionalWhen('last_seen_at'),
    revokedAt: optionalWhen('revoked_at'),
  },
  indices: [
    { name: 'devices_organisation', columns: ['organisationId'] },
    { name: 'devices_person', columns: ['personId'] },
  ],
  foreignKeys: [
    { name: 'fk_devices_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
    { name: 'fk_devices_person', target: 'Person', columnNames: ['personId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const DeviceTokenEntity = new EntitySchema<DeviceTokenRecord>({
  name: 'DeviceToken',
  tableName: 'device_tokens',
  columns: {
    id,
    deviceId: ref('device_id'),
    ...rotatingTokenColumns,
  },
  indices: [
    { name: 'device_tokens_hash', columns: ['tokenHash'], unique: true },
    { name: 'device_tokens_device', columns: ['deviceId'] },
    { name: 'device_tokens_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_device_tokens_device', target: 'Device', columnNames: ['deviceId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const DeviceAuthorizationEntity = new EntitySchema<DeviceAuthorizationRecord>({
  name: 'DeviceAuthorization',
  tableName: 'device_authorizations',
  columns: {
    id,
    deviceCodeHash: hash('device_code_hash'),
    userCodeHash: hash('user_code_hash'),
    organisationId: optionalRef('organisation_id'),
    workspaceId: { type: 'varchar', length: 200, name: 'workspace_id' },
    name: { type: 'varchar', length: 200 },
    kind: { type: 'varchar', length: 20 },
    dpopJkt: optionalText('dpop_jkt', 64),
    status: { type: 'varchar', length: 20 },
    intervalSeconds: { type: 'int', name: 'interval_seconds' },
    lastPolledAt: optionalWhen('last_polled_at'),
    expiresAt: when('expires_at'),
    requesterAddress: optionalText('requester_address', 64),
    requesterUserAgent: optionalText('requester_user_agent', 300),
    claimedBy: optionalRef('claimed_by'),
    claimedAt: optionalWhen('claimed_at'),
    decidedBy: optionalRef('decided_by'),
    decidedAt: optionalWhen('decided_at'),
    deviceId: optionalRef('device_id'),
    createdAt: when('created_at'),
  },
  indices: [
    { name: 'device_authorizations_device_code', columns: ['deviceCodeHash'], unique: true },
    { name: 'device_authorizations_user_code', columns: ['userCodeHash'], unique: true },
    { name: 'device_authorizations_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_device_authorizations_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});

export const JoinKeyEntity = new EntitySchema<JoinKeyRecord>({
  name: 'JoinKey',
  tableName: 'join_keys',
  columns: {
    id,
    organisationId: ref('organisation_id'),
    createdBy: ref('created_by'),
    description: { type: 'varchar', length: 500 },
    lookup: { type: 'varchar', length: 32 },
    secretHash: hash('secret_hash'),
    reusable: { type: 'boolean' },
    expiresAt: when('expires_at'),
    usedAt: optionalWhen('used_at'),
    useCount: { type: 'int', name: 'use_count', default: 0 },
    revokedAt: optionalWhen('revoked_at'),
    createdAt: when('created_at'),
  },
  indices: [
    { name: 'join_keys_lookup', columns: ['lookup'], unique: true },
    { name: 'join_keys_organisation', columns: ['organisationId'] },
    { name: 'join_keys_expires', columns: ['expiresAt'] },
  ],
  foreignKeys: [
    { name: 'fk_join_keys_organisation', target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' },
  ],
});
