import type { DeviceKind } from './entities.js';

/**
 * Scopes a device token can carry (spec 5 leaves their values to us). A workbench (desktop)
 * gets everything a desktop does; a node (headless) gets fewer: it never registers cloud-agent
 * runs and never edits project pictures.
 *
 * | scope               | lets the device                                         | workbench | node |
 * |---------------------|---------------------------------------------------------|-----------|------|
 * | organisation:read   | read its organisation (`GET /platform/v1/organisation`) | yes       | yes  |
 * | policy:read         | fetch its effective policy (`GET /policy/v1`)           | yes       | yes  |
 * | ingest:write        | upload events, usage, audit records and tasks           | yes       | yes  |
 * | relay:connect       | hold the control channel (`GET /relay/v1/connect`)      | yes       | yes  |
 * | cloud-agents:write  | register, report and end cloud agent runs               | yes       | no   |
 * | pictures:read       | read project pictures                                   | yes       | no   |
 * | pictures:write      | save and delete project pictures                        | yes       | no   |
 */
export const DEVICE_SCOPES = [
  'organisation:read',
  'policy:read',
  'ingest:write',
  'relay:connect',
  'cloud-agents:write',
  'pictures:read',
  'pictures:write',
] as const;

export type DeviceScope = (typeof DEVICE_SCOPES)[number];

const NODE_SCOPES: readonly DeviceScope[] = ['organisation:read', 'policy:read', 'ingest:write', 'relay:connect'];

export function scopesFor(kind: DeviceKind): readonly DeviceScope[] {
  return kind === 'node' ? NODE_SCOPES : DEVICE_SCOPES;
}

export function scopeString(kind: DeviceKind): string {
  return scopesFor(kind).join(' ');
}
