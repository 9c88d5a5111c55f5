import { defineAbilityFor, permits } from '../../policies/index.js';
import { audit, CLI_ACTOR } from '../audit.js';
import type { DeviceKind } from '../modules/devices/entities.js';
import { deviceBody, joinKeyBody } from '../modules/devices/views.js';
import { JOIN_KEY_MAX_TTL_SECONDS, JOIN_KEY_MIN_TTL_SECONDS } from '../modules/devices/join-keys.js';
import { timestamp } from '../util/clock.js';
import { notFoundError, refusedError, usageError, type AdminServices } from './context.js';
import { actingPerson, organisationByIdOrHost, type ActingPerson } from './people.js';

/**
 * Devices and join keys from the command line, through the services the API's routes call
 * (src/modules/devices/admin-routes.ts, approval-routes.ts): the same rules, the same audit lines.
 * Revoking goes through `DeviceTokenService.revokeDevice` and `JoinKeyService.revoke`, as the API's
 * `DELETE` routes do.
 *
 * Authorization here is outside the route layer on purpose: whoever runs `platform` holds the
 * database and its configuration (the operator, audited as `{ kind: 'cli' }`), so no rule of
 * policies/ could refuse them anything, and none is asked for what they do themselves (listing,
 * revoking, denying as operator). When a command acts for a person (`--as`, who is recorded as
 * the key's creator and the approver of what it enrols), the rules are asked about that real
 * person, with their stored role, exactly as the API's route asks about its caller.
 */

/** Whether a person may create join keys: the rule of policies/ the API's route asks. */
function mayCreateJoinKeys(person: ActingPerson, organisationId: string): boolean {
  const ability = defineAbilityFor({ kind: 'person', organisationId, personId: person.id, role: person.role, projectRoles: new Map() });
  return permits(ability, 'create', 'JoinKey', { organisationId });
}

/**
 * `active`: it holds a refresh token it can use; `expired`: its last refresh token expired unused
 * (it must enrol again); `approver_removed`: the person who approved it is no longer a member
 * (its next refresh is refused).
 */
export type DeviceStatus = 'active' | 'expired' | 'approver_removed';

/** The API's device object (src/modules/devices/views.ts) with its status. */
export type DeviceView = ReturnType<typeof deviceBody> & { status: DeviceStatus };

/** The organisation's enrolled devices, newest first (a revoked device is no longer listed, as in the API). */
export async function listDevices(services: AdminServices, organisationRef: string): Promise<DeviceView[]> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const devices = await services.devices.listDevices(organisation.id);
  const people = await services.devices.people(devices.map((device) => device.personId));
  const live = await services.devices.withLiveRefreshToken(devices.map((device) => device.id), services.clock.now());
  const views: DeviceView[] = [];
  const roles = new Map<string, boolean>();
  for (const device of devices) {
    if (!roles.has(device.personId)) roles.set(device.personId, (await services.organisations.roleOf(organisation.id, device.personId)) !== undefined);
    views.push({
      ...deviceBody(device, people),
      status: !roles.get(device.personId) ? 'approver_removed' : live.has(device.id) ? 'active' : 'expired',
    });
  }
  return views;
}

/** Every token of the device stops working at once; revoking twice is harmless (as the API). */
export async function revokeDevice(services: AdminServices, organisationRef: string, deviceId: string): Promise<{ id: string; kind: DeviceKind; name: string; alreadyRevoked: boolean }> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const device = await services.devices.findDevice(deviceId.trim());
  if (!device || device.organisationId !== organisation.id) throw notFoundError(`no device ${deviceId} in ${organisation.id} (see \`platform device list\`)`);
  const alreadyRevoked = device.revokedAt !== null;
  await services.deviceTokens.revokeByAdministrator(device, CLI_ACTOR);
  audit(services.logger, { action: 'device.revoked', organisationId: organisation.id, actor: CLI_ACTOR, target: { deviceId: device.id, kind: device.kind } });
  return { id: device.id, kind: device.kind, name: device.name, alreadyRevoked };
}

// Join keys ------------------------------------------------------------------------------------

/** The API's join key object (src/modules/devices/views.ts). */
export type JoinKeyListView = ReturnType<typeof joinKeyBody>;

/** `300`, `90m`, `24h`, `7d`: a lifetime in seconds. */
export function parseDuration(value: string): number {
  const match = /^(\d{1,9})([smhd]?)$/.exec(value.trim());
  if (!match) throw usageError(`--expires-in must be a number of seconds or a duration such as 90m, 24h or 7d (got "${value}")`);
  const seconds = Number(match[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (seconds < JOIN_KEY_MIN_TTL_SECONDS || seconds > JOIN_KEY_MAX_TTL_SECONDS) {
    throw usageError(`--expires-in must be ${JOIN_KEY_MIN_TTL_SECONDS} seconds to ${JOIN_KEY_MAX_TTL_SECONDS / 86_400} days`);
  }
  return seconds;
}

/**
 * A new join key, created for `--as` (an owner or admin, as the API requires): they are recorded
 * as the approver of every node it enrols, and the key stops when they stop being owner or admin.
 * The key is in the answer only; the database keeps its hash.
 */
export async function createJoinKey(
  services: AdminServices,
  organisationRef: string,
  input: { as: string; description: string; expiresInSeconds: number; reusable: boolean },
): Promise<{ key: string; joinKey: JoinKeyListView }> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const description = input.description.trim();
  if (description.length < 1 || input.description.length > 500) throw usageError('--description must be 1 to 500 characters');
  const person = await actingPerson(services, organisation.id, input.as);
  if (!mayCreateJoinKeys(person, organisation.id)) {
    throw refusedError(`${person.email ?? person.id} is ${person.role} of ${organisation.id}: only owners and admins create join keys`);
  }
  const { key, view } = await services.joinKeys.create({
    organisationId: organisation.id,
    createdBy: person.id,
    description,
    expiresInSeconds: input.expiresInSeconds,
    reusable: input.reusable,
  }, person.actor);
  audit(services.logger, {
    action: 'join_key.created',
    organisationId: organisation.id,
    actor: person.actor,
    target: { joinKeyId: view.record.id, reusable: view.record.reusable, expiresAt: timestamp(view.record.expiresAt) },
  });
  return { key, joinKey: joinKeyBody(view) };
}

export async function listJoinKeys(services: AdminServices, organisationRef: string): Promise<JoinKeyListView[]> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  const keys: JoinKeyListView[] = [];
  let after: { createdAt: Date; id: string } | undefined;
  for (;;) {
    const page = await services.joinKeys.list(organisation.id, 200, after);
    keys.push(...page.items.map(joinKeyBody));
    if (!page.more) return keys;
    after = page.more;
  }
}

export async function revokeJoinKey(services: AdminServices, organisationRef: string, joinKeyId: string): Promise<{ id: string; alreadyRevoked: boolean }> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  let record;
  try {
    record = await services.joinKeys.find(organisation.id, joinKeyId.trim());
  } catch {
    throw notFoundError(`no join key ${joinKeyId} in ${organisation.id} (see \`platform join-key list\`)`);
  }
  const alreadyRevoked = record.revokedAt !== null;
  await services.joinKeys.revoke(record, CLI_ACTOR);
  audit(services.logger, { action: 'join_key.revoked', organisationId: organisation.id, actor: CLI_ACTOR, target: { joinKeyId: record.id } });
  return { id: record.id, alreadyRevoked };
}

// Device codes ---------------------------------------------------------------------------------

export interface DecidedDevice {
  organisationId: string;
  decision: 'approved' | 'denied';
  userCode: string;
  name: string;
  kind: DeviceKind;
  workspaceId: string;
  requesterAddress: string | null;
  /** The member who decided; null when the operator denied without `--as`. */
  by: { id: string; email: string | null } | null;
}

/**
 * Approves or denies a device code as `--as`, by the rules of the approval page and API: the
 * person must be a member allowed to approve that kind (a node needs an owner or admin), and
 * the code must be pending, unexpired, of this organisation (or of none yet) and not claimed by
 * someone else. The approval is checked again when the device polls, as for the API.
 */
export async function decideDeviceCode(
  services: AdminServices,
  organisationRef: string,
  userCode: string,
  as: string | undefined,
  decision: 'approve' | 'deny',
): Promise<DecidedDevice> {
  const organisation = await organisationByIdOrHost(services, organisationRef);
  // Denying needs no person: the operator refuses. Approving always names who approves.
  const person = as === undefined ? undefined : await actingPerson(services, organisation.id, as);
  if (!person && decision === 'approve') throw usageError('approving needs --as <person>: the member recorded as the approver');
  const device = person
    ? await services.deviceCodes.decide(userCode, { personId: person.id, organisationId: organisation.id, role: person.role }, decision, person.actor)
    : await services.deviceCodes.denyAsOperator(userCode, organisation.id, CLI_ACTOR);
  const outcome = decision === 'approve' ? 'approved' : 'denied';
  audit(services.logger, {
    action: outcome === 'approved' ? 'device.approved' : 'device.denied',
    organisationId: organisation.id,
    actor: person?.actor ?? CLI_ACTOR,
    target: { kind: device.kind, name: device.name },
  });
  return {
    organisationId: organisation.id,
    decision: outcome,
    userCode: device.userCode,
    name: device.name,
    kind: device.kind,
    workspaceId: device.workspaceId,
    requesterAddress: device.requesterAddress,
    by: person ? { id: person.id, email: person.email } : null,
  };
}
