import { timestamp } from '../../util/clock.js';
import type { DeviceRecord } from './entities.js';
import type { JoinKeyView } from './join-keys.js';
import type { Person } from './store.js';

/**
 * A device as the administration API answers it (`GET /platform/v1/devices`) and the command
 * line prints it (`platform device list`): one shape in both.
 */
export function deviceBody(device: DeviceRecord, people: Map<string, Person>) {
  return {
    id: device.id,
    name: device.name,
    kind: device.kind,
    workspaceId: device.workspaceId,
    nodeId: device.nodeId,
    approver: people.get(device.personId) ?? { id: device.personId, name: '' },
    enrolledVia: device.enrolledVia,
    joinKeyId: device.joinKeyId,
    createdAt: timestamp(device.createdAt),
    lastSeenAt: device.lastSeenAt ? timestamp(device.lastSeenAt) : null,
    keyBound: device.dpopJkt !== null,
  };
}

/** A join key as the API lists it and the command line prints it: never its value. */
export function joinKeyBody({ record, createdBy, state }: JoinKeyView) {
  return {
    id: record.id,
    description: record.description,
    createdBy,
    createdAt: timestamp(record.createdAt),
    expiresAt: timestamp(record.expiresAt),
    lastUsedAt: record.usedAt ? timestamp(record.usedAt) : null,
    revokedAt: record.revokedAt ? timestamp(record.revokedAt) : null,
    useCount: record.useCount,
    reusable: record.reusable,
    state,
  };
}
