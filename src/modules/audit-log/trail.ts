import type { AuditEntry, AuditTrail } from '../../audit.js';
import type { Clock } from '../../util/clock.js';
import { currentRequest, type RequestFacts } from '../../util/request-scope.js';
import { AUDIT_USER_AGENT_MAX } from './entities.js';
import type { AuditLogStore } from './store.js';

/** The audit trail kept in the database: one `audit_log` row per entry, in the caller's transaction. */
export class DatabaseAuditTrail implements AuditTrail {
  constructor(
    private readonly store: AuditLogStore,
    private readonly clock: Clock,
  ) {}

  async record(manager: Parameters<AuditTrail['record']>[0], entry: AuditEntry, request: RequestFacts | undefined = currentRequest()): Promise<void> {
    await this.store.insert(manager, {
      organisationId: entry.organisationId,
      at: this.clock.now(),
      actorKind: entry.actor.kind,
      actorPersonId: entry.actor.personId ?? null,
      actorDeviceId: entry.actor.deviceId ?? null,
      action: entry.action,
      target: JSON.stringify(entry.target ?? {}),
      sourceAddress: request?.sourceAddress?.slice(0, 100) ?? null,
      userAgent: request?.userAgent?.slice(0, AUDIT_USER_AGENT_MAX) ?? null,
      requestId: request?.requestId ?? null,
    });
  }
}
