import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { Config } from './config.js';
import type { DeviceCodeService } from './modules/devices/device-code.js';
import type { JoinKeyService } from './modules/devices/join-keys.js';
import { createDevicesModule } from './modules/devices/module.js';
import type { DeviceStore } from './modules/devices/store.js';
import type { DeviceTokenService } from './modules/devices/tokens.js';
import { OrganisationService } from './modules/organisation/service.js';
import { PolicyService, type LatestNumbersCache } from './modules/policy/service.js';
import { ProjectService } from './modules/projects/service.js';
import type { Clock } from './util/clock.js';
import type { Reads } from './db/reads.js';
import type { AuditTrail } from './audit.js';
import { AuditLogService } from './modules/audit-log/service.js';
import { AuditLogStore } from './modules/audit-log/store.js';
import { DatabaseAuditTrail } from './modules/audit-log/trail.js';

/** The services an administrator's changes go through, from the API (src/app.ts) and the command line (src/cli/context.ts). */
export interface AdminServices {
  config: Config;
  /** Where audit lines go. */
  logger: Logger;
  clock: Clock;
  organisations: OrganisationService;
  projects: ProjectService;
  policies: PolicyService;
  devices: DeviceStore;
  deviceTokens: DeviceTokenService;
  joinKeys: JoinKeyService;
  deviceCodes: DeviceCodeService;
  /** Where every administrative change leaves its row, in the change's transaction. */
  trail: AuditTrail;
  /** Reads the stored audit trail (`GET /platform/v1/audit-log`, `platform audit`). */
  auditLog: AuditLogService;
}

/**
 * Wires the administration services one way for both the service and the command line, so that
 * neither can end up with rules (or settings) the other does not have.
 */
export function buildAdminServices(deps: {
  config: Config;
  dataSource: DataSource;
  clock: Clock;
  logger: Logger;
  /** The service's cache of the newest policy publish numbers; the command line reads them every time. */
  policyLatestNumbers?: LatestNumbersCache;
  /** Replaces the stored trail (the bench measures a publish without it). */
  auditTrail?: AuditTrail | undefined;
  /** The service's reads that may go to a replica (src/db/reads.ts); the command line reads the primary. */
  reads?: Reads | undefined;
}): AdminServices {
  const { config, dataSource, clock, logger } = deps;
  const auditStore = new AuditLogStore(dataSource);
  const trail = deps.auditTrail ?? new DatabaseAuditTrail(auditStore, clock);
  const organisations = new OrganisationService(dataSource, clock, trail);
  const projects = new ProjectService(dataSource, clock, trail);
  const devices = createDevicesModule({ dataSource, clock, organisations, trail, reads: deps.reads }, config.devices);
  return {
    config,
    logger,
    clock,
    organisations,
    projects,
    policies: new PolicyService(dataSource, clock, logger, projects, config.json, { trail, reads: deps.reads, ...(deps.policyLatestNumbers ? { latestNumbers: deps.policyLatestNumbers } : {}) }),
    devices: devices.store,
    deviceTokens: devices.tokens,
    joinKeys: devices.joinKeys,
    deviceCodes: devices.deviceCodes,
    trail,
    auditLog: new AuditLogService(auditStore, clock),
  };
}
