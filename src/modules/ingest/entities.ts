import { EntitySchema } from 'typeorm';

/**
 * What workbenches upload (spec 2.15, 4.7): events, usage, audit records and tasks, and one
 * stream row per (device, workspace) holding the cursors the workbench resumes from.
 *
 * Identity of an item, which makes a retried or overlapping upload store nothing twice:
 * - an event: (device, workspace, seq), the workbench's increasing integer;
 * - usage and audit items: (device, id);
 * - a task: (device, id), updated when a newer `updatedAt` arrives.
 * Each table also has an increasing row id, the key of the console's keyset pagination.
 */

export interface IngestEventRecord {
  rowId: string;
  organisationId: string;
  projectId: string;
  deviceId: string;
  workspaceId: string;
  seq: string;
  eventId: string;
  at: Date;
  kind: string;
  data: string;
  receivedAt: Date;
}

export interface IngestUsageRecord {
  rowId: string;
  organisationId: string;
  projectId: string;
  deviceId: string;
  workspaceId: string;
  itemId: string;
  at: Date;
  provider: string;
  model: string;
  inputTokens: string;
  outputTokens: string;
  cachedTokens: string;
  /** US dollars, as the workbench reported them (micro-dollar precision). */
  cost: string;
  receivedAt: Date;
}

export interface IngestAuditRecord {
  rowId: string;
  organisationId: string;
  projectId: string;
  deviceId: string;
  workspaceId: string;
  itemId: string;
  at: Date;
  actor: string;
  action: string;
  target: string | null;
  label: string | null;
  details: string | null;
  receivedAt: Date;
}

export interface IngestTaskRecord {
  rowId: string;
  organisationId: string;
  projectId: string;
  deviceId: string;
  workspaceId: string;
  taskId: string;
  title: string;
  status: string;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  receivedAt: Date;
}

export interface IngestStreamRecord {
  deviceId: string;
  workspaceId: string;
  organisationId: string;
  /** Highest event `seq` stored for the stream; -1 before the first. */
  eventsCursor: string;
  /** `<at>|<id>` of the newest usage item stored (by time, then id); '' before the first. */
  usageCursor: string;
  auditCursor: string;
  updatedAt: Date;
}

const ref = (name: string) => ({ type: 'varchar', length: 40, name }) as const;
const text = (name: string, length: number) => ({ type: 'varchar', length, name }) as const;
const optionalText = (name: string, length: number) => ({ type: 'varchar', length, name, nullable: true, default: null }) as const;
const when = (name: string) => ({ type: 'datetime', precision: 3, name }) as const;
/*
 * On MySQL the identity columns (`workspace_id`, `item_id`, `task_id`) are `utf8mb4_bin`, set by
 * migration 1763800000000: the tables' default collation would take `abc` and `ABC` (or `é` and
 * `e`) for the same item and drop one of them. The schemas refuse ids with edge white space, the
 * one difference `utf8mb4_bin` (PAD SPACE) would still ignore. `data` and `details` are
 * MEDIUMTEXT there, so no item that passes validation can be cut short.
 */

/** SQLite's INTEGER PRIMARY KEY is its 64-bit row id (and the only type AUTOINCREMENT takes);
 * MySQL needs BIGINT for the same range. */
type Dialect = 'sqlite' | 'mysql';
const rowIdOf = (dialect: Dialect) =>
  ({ type: dialect === 'sqlite' ? 'integer' : 'bigint', primary: true, generated: 'increment', name: 'row_id' }) as const;
const common = {
  organisationId: ref('organisation_id'),
  projectId: ref('project_id'),
  deviceId: ref('device_id'),
  workspaceId: text('workspace_id', 200),
} as const;
const cascade = (table: string) => [
  { name: `fk_${table}_organisation`, target: 'Organisation', columnNames: ['organisationId'], referencedColumnNames: ['id'], onDelete: 'CASCADE' as const },
];

const IngestEventSchema = (dialect: Dialect) => new EntitySchema<IngestEventRecord>({
  name: 'IngestEvent',
  tableName: 'ingest_events',
  columns: {
    rowId: rowIdOf(dialect),
    ...common,
    seq: { type: 'bigint' },
    eventId: text('event_id', 200),
    at: when('at'),
    kind: text('kind', 100),
    data: { type: dialect === 'mysql' ? 'mediumtext' : 'text', name: 'data' },
    receivedAt: when('received_at'),
  },
  indices: [
    { name: 'ingest_events_stream_seq', columns: ['deviceId', 'workspaceId', 'seq'], unique: true },
    { name: 'ingest_events_organisation_row', columns: ['organisationId', 'rowId'] },
    // A project's items are found (and deleted with it) without reading the whole table.
    { name: 'ingest_events_project', columns: ['projectId'] },
    // The sweeper deletes by age (RETENTION_INGEST_*_DAYS).
    { name: 'ingest_events_received', columns: ['receivedAt'] },
  ],
  foreignKeys: cascade('ingest_events'),
});

const IngestUsageSchema = (dialect: Dialect) => new EntitySchema<IngestUsageRecord>({
  name: 'IngestUsage',
  tableName: 'ingest_usage',
  columns: {
    rowId: rowIdOf(dialect),
    ...common,
    itemId: text('item_id', 200),
    at: when('at'),
    provider: text('provider', 100),
    model: text('model', 200),
    inputTokens: { type: 'bigint', name: 'input_tokens' },
    outputTokens: { type: 'bigint', name: 'output_tokens' },
    cachedTokens: { type: 'bigint', name: 'cached_tokens' },
    cost: { type: 'decimal', precision: 18, scale: 6 },
    receivedAt: when('received_at'),
  },
  indices: [
    { name: 'ingest_usage_item', columns: ['deviceId', 'itemId'], unique: true },
    { name: 'ingest_usage_organisation_at', columns: ['organisationId', 'at'] },
    // A project's items are found (and deleted with it) without reading the whole table.
    { name: 'ingest_usage_project', columns: ['projectId'] },
    // The sweeper deletes by age (RETENTION_INGEST_*_DAYS).
    { name: 'ingest_usage_received', columns: ['receivedAt'] },
  ],
  foreignKeys: cascade('ingest_usage'),
});

const IngestAuditSchema = (dialect: Dialect) => new EntitySchema<IngestAuditRecord>({
  name: 'IngestAudit',
  tableName: 'ingest_audit',
  columns: {
    rowId: rowIdOf(dialect),
    ...common,
    itemId: text('item_id', 200),
    at: when('at'),
    actor: text('actor', 200),
    action: text('action', 100),
    target: optionalText('target', 500),
    label: optionalText('label', 500),
    details: { type: dialect === 'mysql' ? 'mediumtext' : 'text', name: 'details', nullable: true, default: null },
    receivedAt: when('received_at'),
  },
  indices: [
    { name: 'ingest_audit_item', columns: ['deviceId', 'itemId'], unique: true },
    { name: 'ingest_audit_organisation_row', columns: ['organisationId', 'rowId'] },
    // A project's items are found (and deleted with it) without reading the whole table.
    { name: 'ingest_audit_project', columns: ['projectId'] },
    // The sweeper deletes by age (RETENTION_INGEST_*_DAYS).
    { name: 'ingest_audit_received', columns: ['receivedAt'] },
  ],
  foreignKeys: cascade('ingest_audit'),
});

const IngestTaskSchema = (dialect: Dialect) => new EntitySchema<IngestTaskRecord>({
  name: 'IngestTask',
  tableName: 'ingest_tasks',
  columns: {
    rowId: rowIdOf(dialect),
    ...common,
    taskId: text('task_id', 200),
    title: text('title', 500),
    status: text('status', 50),
    createdAt: when('created_at'),
    updatedAt: when('updated_at'),
    completedAt: { type: 'datetime', precision: 3, name: 'completed_at', nullable: true, default: null },
    receivedAt: when('received_at'),
  },
  indices: [
    { name: 'ingest_tasks_item', columns: ['deviceId', 'taskId'], unique: true },
    { name: 'ingest_tasks_organisation_row', columns: ['organisationId', 'rowId'] },
    // A project's items are found (and deleted with it) without reading the whole table.
    { name: 'ingest_tasks_project', columns: ['projectId'] },
    // The sweeper deletes by age (RETENTION_INGEST_*_DAYS).
    { name: 'ingest_tasks_received', columns: ['receivedAt'] },
  ],
  foreignKeys: cascade('ingest_tasks'),
});

const IngestStreamSchema = () => new EntitySchema<IngestStreamRecord>({
  name: 'IngestStream',
  tableName: 'ingest_streams',
  columns: {
    deviceId: { ...ref('device_id'), primary: true },
    workspaceId: { ...text('workspace_id', 200), primary: true },
    organisationId: ref('organisation_id'),
    eventsCursor: { type: 'bigint', name: 'events_cursor' },
    usageCursor: text('usage_cursor', 260),
    auditCursor: text('audit_cursor', 260),
    updatedAt: when('updated_at'),
  },
  foreignKeys: cascade('ingest_streams'),
});

/** The ingest entities for a dialect; queries name them by entity name ('IngestEvent', …). */
export function ingestEntities(dialect: Dialect) {
  return [IngestEventSchema(dialect), IngestUsageSchema(dialect), IngestAuditSchema(dialect), IngestTaskSchema(dialect), IngestStreamSchema()];
}
