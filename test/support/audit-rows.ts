import type { DataSource } from 'typeorm';

/** An `audit_log` row as stored, read back by the tests of the audit trail. */
export interface StoredAuditRow {
  organisationId: string;
  actorKind: string;
  actorPersonId: string | null;
  actorDeviceId: string | null;
  action: string;
  target: Record<string, unknown>;
  sourceAddress: string | null;
  userAgent: string | null;
  requestId: string | null;
}

async function highestRowId(dataSource: DataSource): Promise<number> {
  const [row] = await dataSource.query<{ top: number | string | null }[]>('SELECT MAX(row_id) AS top FROM audit_log');
  return Number(row?.top ?? 0);
}

/** The audit rows written while `change` ran, in the order they were written. */
export async function auditRowsDuring(dataSource: DataSource, change: () => Promise<unknown>): Promise<StoredAuditRow[]> {
  const from = await highestRowId(dataSource);
  await change();
  const rows = await dataSource.query<Record<string, unknown>[]>(
    'SELECT organisation_id, actor_kind, actor_person_id, actor_device_id, action, target, source_address, user_agent, request_id FROM audit_log WHERE row_id > ? ORDER BY row_id',
    [from],
  );
  return rows.map((row) => ({
    organisationId: row.organisation_id as string,
    actorKind: row.actor_kind as string,
    actorPersonId: row.actor_person_id as string | null,
    actorDeviceId: row.actor_device_id as string | null,
    action: row.action as string,
    target: JSON.parse(row.target as string) as Record<string, unknown>,
    sourceAddress: row.source_address as string | null,
    userAgent: row.user_agent as string | null,
    requestId: row.request_id as string | null,
  }));
}
