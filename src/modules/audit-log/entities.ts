import { EntitySchema } from 'typeorm';

/**
 * The audit trail (docs/api/audit-trail.md): one row per administrative change, written in the
 * change's transaction. Ids and plain values only: never a secret, never a policy's text (its
 * revision number). `row_id` only grows: the order of the list and of the export, and their cursors.
 * No foreign key: a row outlives what it names (a deleted account, its personal organisation) until
 * AUDIT_RETENTION_DAYS.
 */
export interface AuditRowRecord {
  rowId: string;
  organisationId: string;
  at: Date;
  /** The principal's token kind, or `cli`. */
  actorKind: string;
  actorPersonId: string | null;
  actorDeviceId: string | null;
  action: string;
  /** JSON object of ids and plain values. */
  target: string;
  sourceAddress: string | null;
  userAgent: string | null;
  requestId: string | null;
}

type Dialect = 'sqlite' | 'mysql';

const optional = (name: string, length: number) => ({ type: 'varchar', length, name, nullable: true, default: null }) as const;

export const AUDIT_USER_AGENT_MAX = 500;

const AuditRowSchema = (dialect: Dialect) =>
  new EntitySchema<AuditRowRecord>({
    name: 'AuditRow',
    tableName: 'audit_log',
    columns: {
      // SQLite's INTEGER PRIMARY KEY is its 64-bit row id; MySQL needs BIGINT for the same range.
      rowId: { type: dialect === 'sqlite' ? 'integer' : 'bigint', primary: true, generated: 'increment', name: 'row_id' },
      organisationId: { type: 'varchar', length: 40, name: 'organisation_id' },
      at: { type: 'datetime', precision: 3, name: 'at' },
      actorKind: { type: 'varchar', length: 20, name: 'actor_kind' },
      actorPersonId: optional('actor_person_id', 40),
      actorDeviceId: optional('actor_device_id', 40),
      action: { type: 'varchar', length: 100, name: 'action' },
      target: { type: 'text', name: 'target' },
      sourceAddress: optional('source_address', 100),
      userAgent: optional('user_agent', AUDIT_USER_AGENT_MAX),
      requestId: optional('request_id', 100),
    },
    indices: [
      // The list (newest first) and the export (oldest first) of one organisation.
      { name: 'audit_log_organisation_row', columns: ['organisationId', 'rowId'] },
      // The sweeper deletes by age (AUDIT_RETENTION_DAYS).
      { name: 'audit_log_at', columns: ['at'] },
    ],
  });

export function auditLogEntities(dialect: Dialect) {
  return [AuditRowSchema(dialect)];
}
