import type { DataSource, EntityManager } from 'typeorm';
import { dialectOf, sqlTime } from '../../db/dates.js';
import type { AuditRowRecord } from './entities.js';

/** What a reader may narrow the trail to; every query is within one organisation. */
export interface AuditFilters {
  /** Exact action (`policy.published`). */
  action?: string | undefined;
  /** A person or device id, or `cli`. */
  actor?: string | undefined;
  /** An id any target value equals. */
  target?: string | undefined;
  /** From this time (inclusive). */
  since?: Date | undefined;
  /** Before this time (exclusive). */
  until?: Date | undefined;
}

/** The only code that queries `audit_log`. */
export class AuditLogStore {
  constructor(private readonly dataSource: DataSource) {}

  /** One row, with the manager of the change's transaction. */
  async insert(manager: EntityManager, row: Omit<AuditRowRecord, 'rowId'>): Promise<void> {
    await manager.insert('AuditRow', row);
  }

  /**
   * Rows of the organisation with a row id below `before` (newest first) or above `after`
   * (oldest first), narrowed by the filters; at most `limit`.
   */
  async rows(organisationId: string | undefined, filters: AuditFilters, position: { before?: string | undefined; after?: string | undefined }, limit: number, order: 'newest' | 'oldest'): Promise<AuditRowRecord[]> {
    const dialect = dialectOf(this.dataSource);
    const query = this.dataSource.manager.createQueryBuilder('AuditRow', 'row');
    // Every reader through the API names its organisation; only the command line reads them all.
    if (organisationId !== undefined) query.where('row.organisationId = :organisationId', { organisationId });
    if (filters.action !== undefined) query.andWhere('row.action = :action', { action: filters.action });
    if (filters.actor !== undefined) {
      if (filters.actor === 'cli') query.andWhere("row.actorKind = 'cli'");
      else query.andWhere('(row.actorPersonId = :actor OR row.actorDeviceId = :actor)', { actor: filters.actor });
    }
    // Target values are JSON strings or numbers. The filter's value holds no character JSON
    // escapes and no `%` (the route's pattern); `_`, LIKE's one-character wildcard, is escaped
    // (`!`, the same on SQLite and MySQL), so `"<value>"` matches exactly one whole value.
    if (filters.target !== undefined) query.andWhere("row.target LIKE :target ESCAPE '!'", { target: `%"${filters.target.replace(/[!%_]/g, '!$&')}"%` });
    if (filters.since !== undefined) query.andWhere('row.at >= :since', { since: sqlTime(dialect, filters.since) });
    if (filters.until !== undefined) query.andWhere('row.at < :until', { until: sqlTime(dialect, filters.until) });
    if (position.before !== undefined) query.andWhere('row.rowId < :before', { before: position.before });
    if (position.after !== undefined) query.andWhere('row.rowId > :after', { after: position.after });
    query.orderBy('row.rowId', order === 'newest' ? 'DESC' : 'ASC').limit(limit);
    const rows = (await query.getMany()) as AuditRowRecord[];
    return rows.map((row) => ({ ...row, rowId: String(row.rowId) }));
  }
}
