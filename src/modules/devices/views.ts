import { timestamp } from '../../util/clock.js';
import type { DeviceRecord } from './entities.js';
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
