import { invalidRequest } from '../../errors.js';
import type { Page } from '../../http/pagination.js';
import type { Clock } from '../../util/clock.js';
import type { AuditRowRecord } from './entities.js';
import type { AuditFilters, AuditLogStore } from './store.js';

/** A row as the list and the export show it (schemas.ts `AuditRow`). */
export interface AuditRowView {
  id: string;
  at: string;
  organisationId: string;
  actor: { kind: string; personId: string | null; deviceId: string | null };
  action: string;
  target: Record<string, string | number | boolean | null>;
  sourceAddress: string | null;
  userAgent: string | null;
  requestId: string | null;
}

/** Rows read from the database at a time while an export streams: its memory does not grow with the trail. */
export const EXPORT_BATCH_ROWS = 500;
export const EXPORT_DEFAULT_LIMIT = 10_000;
export const EXPORT_MAX_LIMIT = 100_000;
/**
 * An export stops before rows younger than this. Row ids are taken when a change inserts its row,
 * and the change commits a moment later: on MariaDB two changes can commit out of id order, and a
 * row of an id below one already exported could appear after it. Waiting this long before
 * exporting a row lets every change that took a lower id commit (or roll back) first, so a cursor
 * never skips a row. A collector sees each change a few seconds late, never never.
 */
export const EXPORT_SETTLE_MS = 5_000;

const CURSOR_KINDS = { list: 'l', export: 'e' } as const;

/** Opaque to clients: base64url of `<kind>:<row id>`; one list's cursor is not the other's. */
function encodeRowCursor(kind: keyof typeof CURSOR_KINDS, rowId: string): string {
  return Buffer.from(`${CURSOR_KINDS[kind]}:${rowId}`, 'utf8').toString('base64url');
}

function decodeRowCursor(kind: keyof typeof CURSOR_KINDS, cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const match = /^([le]):(\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match || match[1] !== CURSOR_KINDS[kind]) throw invalidRequest('query.cursor is not a cursor this list gave out', { field: 'query.cursor' });
  return match[2]!;
}

export function viewOf(row: AuditRowRecord): AuditRowView {
  let target: AuditRowView['target'] = {};
  try {
    target = JSON.parse(row.target) as AuditRowView['target'];
  } catch {
    // Written by this service as JSON; an unreadable one shows as empty rather than failing the list.
  }
  return {
    id: String(row.rowId),
    at: row.at.toISOString(),
    organisationId: row.organisationId,
    actor: { kind: row.actorKind, personId: row.actorPersonId, deviceId: row.actorDeviceId },
    action: row.action,
    target,
    sourceAddress: row.sourceAddress,
    userAgent: row.userAgent,
    requestId: row.requestId,
  };
}

/** Reading the stored audit trail: always one organisation's rows, whatever the filters say. */
export class AuditLogService {
  constructor(
    private readonly store: AuditLogStore,
    private readonly clock: Clock,
  ) {}

  /** A page, newest first; every organisation's only for the command line (`undefined`). */
  async page(organisationId: string | undefined, filters: AuditFilters, query: { limit: number; cursor?: string | undefined }): Promise<Page<AuditRowView>> {
    const before = decodeRowCursor('list', query.cursor);
    const rows = await this.store.rows(organisationId, filters, { before }, query.limit + 1, 'newest');
    const items = rows.slice(0, query.limit);
    const last = items[items.length - 1];
    return { items: items.map(viewOf), nextCursor: rows.length > query.limit && last ? encodeRowCursor('list', last.rowId) : null };
  }

  /** Checks an export's cursor before the answer starts (400 then, not a broken stream). */
  exportStart(cursor: string | undefined): string | undefined {
    return decodeRowCursor('export', cursor);
  }

  /**
   * The export, oldest first, in batches of EXPORT_BATCH_ROWS read one after another: after
   * `after` (a row id from `exportStart`), from `since`, at most `limit` rows, none younger than
   * EXPORT_SETTLE_MS. Yields batches of rows, then the end: the cursor to resume from and whether
   * `limit` cut it short.
   */
  async *export(
    organisationId: string,
    options: { after: string | undefined; since: Date | undefined; limit: number; batchRows?: number },
  ): AsyncGenerator<{ rows: AuditRowView[] } | { end: true; cursor: string; more: boolean }> {
    const horizon = this.clock.now().getTime() - EXPORT_SETTLE_MS;
    const batchRows = options.batchRows ?? EXPORT_BATCH_ROWS;
    let after = options.after ?? '0';
    let sent = 0;
    for (;;) {
      const wanted = Math.min(batchRows, options.limit - sent);
      if (wanted <= 0) {
        // Stopped by the limit: more only if a settled row follows.
        const [next] = await this.store.rows(organisationId, { since: options.since }, { after }, 1, 'oldest');
        yield { end: true, cursor: encodeRowCursor('export', after), more: next !== undefined && next.at.getTime() <= horizon };
        return;
      }
      const rows = await this.store.rows(organisationId, { since: options.since }, { after }, wanted, 'oldest');
      // Stop at the first row that has not settled: nothing after it goes out before it does.
      const unsettled = rows.findIndex((row) => row.at.getTime() > horizon);
      const settled = unsettled === -1 ? rows : rows.slice(0, unsettled);
      if (settled.length) {
        yield { rows: settled.map(viewOf) };
        sent += settled.length;
        after = settled[settled.length - 1]!.rowId;
      }
      if (unsettled !== -1 || rows.length < wanted) {
        yield { end: true, cursor: encodeRowCursor('export', after), more: false };
        return;
      }
    }
  }
}
