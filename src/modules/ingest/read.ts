import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { invalidRequest } from '../../errors.js';
import { withinJsonBounds, type JsonLimits } from '../../http/json-bounds.js';
import type { IngestAuditRecord, IngestEventRecord, IngestTaskRecord } from './entities.js';
import { storableInstant } from '../../util/time.js';
import { dialectOf, sqlTime } from './store.js';

/**
 * The console's read side of ingest: the organisation's events, audit records and tasks with
 * filters and keyset pagination (newest first; the cursor is the last row id seen, opaque to
 * clients), and a usage summary by day and model.
 */

export interface ReadFilters {
  projectId?: string | undefined;
  workspaceId?: string | undefined;
  kind?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export function encodeCursor(rowId: string | number): string {
  return Buffer.from(`r:${rowId}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^r:(\d{1,19})$/.exec(text);
  if (!match) throw invalidRequest('query.cursor is not a cursor this service gave out', { field: 'query.cursor' });
  return match[1] as string;
}

/**
 * A stored JSON object. A row that cannot be read back (not JSON, not an object, or nested or
 * sized beyond the limits it was stored under, checked before the answer is serialised) shows
 * as such rather than failing the page.
 */
function json(text: string | null, limits: JsonLimits): Record<string, unknown> | undefined {
  if (text === null) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && withinJsonBounds(value, limits)) return value as Record<string, unknown>;
  } catch {
    // Falls through to the marker below.
  }
  return { unreadable: true };
}
const iso = (value: Date | string | null): string | undefined =>
  value === null ? undefined : (value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`)).toISOString();

export class IngestReader {
  constructor(
    private readonly dataSource: DataSource,
    /** The limits stored `data` and `details` were accepted under (JSON_MAX_DEPTH, INGEST_MAX_KEYS, INGEST_MAX_STRING_LENGTH). */
    private readonly storedLimits: JsonLimits,
  ) {}

  private page<T extends { rowId: string }>(
    entity: string,
    organisationId: string,
    filters: ReadFilters,
    timeColumn: string,
    kindColumn: string | undefined,
  ): SelectQueryBuilder<T> {
    const dialect = dialectOf(this.dataSource);
    const query = this.dataSource.manager
      .createQueryBuilder<T>(entity, 'item')
      .where('item.organisationId = :organisationId', { organisationId })
      .orderBy('item.rowId', 'DESC')
      .take(filters.limit + 1);
    if (filters.projectId) query.andWhere('item.projectId = :projectId', { projectId: filters.projectId });
    if (filters.workspaceId) query.andWhere('item.workspaceId = :workspaceId', { workspaceId: filters.workspaceId });
    if (filters.kind && kindColumn) query.andWhere(`item.${kindColumn} = :kind`, { kind: filters.kind });
    if (filters.since) query.andWhere(`item.${timeColumn} >= :since`, { since: sqlTime(dialect, storableInstant(filters.since, 'query.since')) });
    if (filters.until) query.andWhere(`item.${timeColumn} < :until`, { until: sqlTime(dialect, storableInstant(filters.until, 'query.until')) });
    if (filters.cursor) query.andWhere('item.rowId < :cursor', { cursor: decodeCursor(filters.cursor) });
    return query;
  }

  private async paged<T extends { rowId: string }, V>(query: SelectQueryBuilder<T>, limit: number, view: (row: T) => V): Promise<Page<V>> {
    const rows = await query.getMany();
    const more = rows.length > limit;
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items: items.map(view), nextCursor: more && last ? encodeCursor(last.rowId) : null };
  }

  events(organisationId: string, filters: ReadFilters) {
    return this.paged(this.page<IngestEventRecord>('IngestEvent', organisationId, filters, 'at', 'kind'), filters.limit, (row) => ({
      projectId: row.projectId,
      workspaceId: row.workspaceId,
      deviceId: row.deviceId,
      seq: Number(row.seq),
      id: row.eventId,
      at: iso(row.at) as string,
      kind: row.kind,
      data: json(row.data, this.storedLimits) ?? {},
      receivedAt: iso(row.receivedAt) as string,
    }));
  }

  audit(organisationId: string, filters: ReadFilters) {
    return this.paged(this.page<IngestAuditRecord>('IngestAudit', organisationId, filters, 'at', 'action'), filters.limit, (row) => ({
      projectId: row.projectId,
      workspaceId: row.workspaceId,
      deviceId: row.deviceId,
      id: row.itemId,
      at: iso(row.at) as string,
      actor: row.actor,
      action: row.action,
      ...(row.target !== null ? { target: row.target } : {}),
      ...(row.label !== null ? { label: row.label } : {}),
      ...(row.details !== null ? { details: json(row.details, this.storedLimits) } : {}),
      receivedAt: iso(row.receivedAt) as string,
    }));
  }

  tasks(organisationId: string, filters: ReadFilters) {
    return this.paged(this.page<IngestTaskRecord>('IngestTask', organisationId, filters, 'updatedAt', 'status'), filters.limit, (row) => ({
      projectId: row.projectId,
      workspaceId: row.workspaceId,
      deviceId: row.deviceId,
      id: row.taskId,
      title: row.title,
      status: row.status,
      createdAt: iso(row.createdAt) as string,
      updatedAt: iso(row.updatedAt) as string,
      ...(row.completedAt !== null ? { completedAt: iso(row.completedAt) } : {}),
    }));
  }

  /** Usage by UTC day, provider and model, oldest day first. */
  async usageSummary(organisationId: string, filters: { projectId?: string | undefined; since?: string | undefined; until?: string | undefined }) {
    const dialect = dialectOf(this.dataSource);
    const day = dialect === 'sqlite' ? 'substr(item.at, 1, 10)' : "DATE_FORMAT(item.at, '%Y-%m-%d')";
    const query = this.dataSource.manager
      .createQueryBuilder('IngestUsage', 'item')
      .select(`${day}`, 'day')
      .addSelect('item.provider', 'provider')
      .addSelect('item.model', 'model')
      .addSelect('COUNT(*)', 'requests')
      .addSelect('SUM(item.inputTokens)', 'inputTokens')
      .addSelect('SUM(item.outputTokens)', 'outputTokens')
      .addSelect('SUM(item.cachedTokens)', 'cachedTokens')
      .addSelect('SUM(item.cost)', 'cost')
      .where('item.organisationId = :organisationId', { organisationId })
      .groupBy('day')
      .addGroupBy('item.provider')
      .addGroupBy('item.model')
      .orderBy('day', 'ASC')
      .addOrderBy('provider', 'ASC')
      .addOrderBy('model', 'ASC');
    if (filters.projectId) query.andWhere('item.projectId = :projectId', { projectId: filters.projectId });
    if (filters.since) query.andWhere('item.at >= :since', { since: sqlTime(dialect, storableInstant(filters.since, 'query.since')) });
    if (filters.until) query.andWhere('item.at < :until', { until: sqlTime(dialect, storableInstant(filters.until, 'query.until')) });
    const rows = await query.getRawMany<Record<string, string | number>>();
    return rows.map((row) => ({
      day: String(row.day),
      provider: String(row.provider),
      model: String(row.model),
      requests: Number(row.requests),
      inputTokens: Number(row.inputTokens),
      outputTokens: Number(row.outputTokens),
      cachedTokens: Number(row.cachedTokens),
      cost: Math.round(Number(row.cost) * 1e6) / 1e6,
    }));
  }
}
