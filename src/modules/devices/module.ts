import type { AuditTrail } from '../../audit.js';
import type { DataSource } from 'typeorm';
import type { Reads } from '../../db/reads.js';
import type { DpopVerifier } from '../../auth/dpop.js';
import type { Deployment } from '../../deployment.js';
import type { RouteDefinition } from '../../http/route.js';
import type { Clock } from '../../util/clock.js';
import type { OrganisationService } from '../organisation/service.js';
import { deviceAdminRoutes } from './admin-routes.js';
import { approvalRoutes } from './approval-routes.js';
import { DeviceCodeService, type DeviceCodeSettings } from './device-code.js';
import { deviceCodeRoutes } from './device-code-routes.js';
import { JoinKeyService } from './join-keys.js';
import { joinRoutes } from './join-routes.js';
import { DeviceStore } from './store.js';
import { tokenRoutes } from './token-routes.js';
import { DeviceTokenService, type TokenLifetimes } from './tokens.js';

/**
 * Devices (spec 5): enrolment by device code or join key, their tokens, and their administration.
 * One factory wires the services for the API (src/app.ts) and the command line (src/admin-services.ts);
 * `devicesRoutes` is the module's API. The approval pages a person uses are src/web/device-approval.
 */

export interface DevicesModule {
  store: DeviceStore;
  tokens: DeviceTokenService;
  joinKeys: JoinKeyService;
  deviceCodes: DeviceCodeService;
}

export function createDevicesModule(
  deps: { dataSource: DataSource; clock: Clock; organisations: OrganisationService; trail?: AuditTrail; reads?: Reads | undefined },
  settings: TokenLifetimes & DeviceCodeSettings,
): DevicesModule {
  const { dataSource, clock, organisations, trail, reads } = deps;
  // A device works only while the person who approved it is a member of its organisation.
  const tokens = new DeviceTokenService(dataSource, clock, settings, async (organisationId, personId) => (await organisations.roleOf(organisationId, personId)) !== undefined, trail, reads);
  return {
    store: new DeviceStore(dataSource),
    tokens,
    joinKeys: new JoinKeyService(dataSource, clock, tokens, organisations, trail),
    deviceCodes: new DeviceCodeService(dataSource, clock, settings, tokens, organisations, trail),
  };
}

/** Every route of the devices API: join, refresh, administration, the device-code flow and its approval. */
export function devicesRoutes(devices: DevicesModule, options: { dpop: DpopVerifier; deployment: Deployment }): RouteDefinition[] {
  const { store, tokens, joinKeys, deviceCodes } = devices;
  const { dpop, deployment } = options;
  return [
    ...joinRoutes({ joinKeys, dpop }),
    ...tokenRoutes({ tokens, dpop }),
    ...deviceAdminRoutes({ joinKeys, devices: store, tokens }),
    ...deviceCodeRoutes({ deviceCodes, dpop, config: { deployment } }),
    ...approvalRoutes(deviceCodes),
  ];
}
