import type { EntityManager, QueryRunner } from 'typeorm';
import { sqlTime, type Dialect } from '../../db/dates.js';

/**
 * The only code that writes and reads ingested items. Writes are multi-row
 * `INSERT … IGNORE` statements keyed by each item's identity, so a retried or overlapping
 * upload stores nothing twice and the database itself counts what was new.
 */

// Shared with the other stores that write raw statements (src/db/dates.ts).
export { dialectOf, sqlTime, type Dialect } from '../../db/dates.js';

/**
 * One statement holds at most this many rows (a 1,000-event envelope is one statement), with at
 * most 16 columns that is 16,000 bound values, within SQLite's 32,766 …
 */
const ROWS_PER_STATEMENT = 1_000;
/** … and at most about this many bytes of values, so that a statement stays well within MySQL's
 * and MariaDB's `max_allowed_packet` (16 MB by default, 4 MB on older servers) whatever
 * INGEST_MAX_BYTES allows; escaping can double a value. */
const BYTES_PER_STATEMENT = 1024 * 1024;

/** Statement texts by head and row count: a 1,000-row text is 30 KB, and most envelopes have the same size. */
const statementTexts = new Map<string, string>();

function statementText(head: string, tuple: string, rows: number): string {
  const key = `${rows}:${head}`;
  let text = statementTexts.get(key);
  if (text === undefined) {
    text = head + new Array<string>(rows).fill(tuple).join(', ');
    if (statementTexts.size >= 64) statementTexts.clear();
    statementTexts.set(key, text);
  }
  return text;
}

function approximateBytes(row: readonly unknown[]): number {
  let bytes = 0;
  for (const value of row) bytes += typeof value === 'string' ? value.length * 3 : 24;
  return bytes;
}

export interface StreamKey {
  organisationId: string;
  deviceId: string;
  workspaceId: string;
}

export interface StreamCursors {
  events: number;
  usage: string;
  audit: string;
}

export class IngestStore {
  private readonly q: (name: string) => string;

  constructor(
    private readonly manager: EntityManager,
    readonly dialect: Dialect,
  ) {
    this.q = dialect === 'sqlite' ? (name) => `"${name}"` : (name) => `\`${name}\``;
  }

  private get runner(): QueryRunner {
    const runner = this.manager.queryRunner;
    if (!runner) throw new Error('IngestStore writes run inside a transaction');
    return runner;
  }

  /** Inserts rows, skipping those whose identity is already held; answers how many were new. */
  async insertIgnore(table: string, columns: readonly string[], rows: readonly unknown[][]): Promise<number> {
    let inserted = 0;
    const verb = this.dialect === 'sqlite' ? 'INSERT OR IGNORE INTO' : 'INSERT IGNORE INTO';
    const head = `${verb} ${this.q(table)} (${columns.map(this.q).join(', ')}) VALUES `;
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    let start = 0;
    while (start < rows.length) {
      let end = start;
      let bytes = 0;
      // At least one row per statement, then as many as fit.
      do {
        bytes += approximateBytes(rows[end]!);
        end += 1;
      } while (end < rows.length && end - start < ROWS_PER_STATEMENT && bytes + approximateBytes(rows[end]!) <= BYTES_PER_STATEMENT);
      const values: unknown[] = [];
      for (let index = start; index < end; index++) for (const value of rows[index]!) values.push(value);
      const result = await this.runner.query(statementText(head, tuple, end - start), values, true);
      inserted += (result as { affected?: number }).affected ?? 0;
      start = end;
    }
    return inserted;
  }

  /**
   * Whether the project is the organisation's, holding a shared lock on its row until the upload
   * commits: a project deletion (which locks the row exclusively, then deletes the project's
   * items) waits for the upload, or the upload finds the project gone. Taken before anything is
   * written, in the same order as the deletion takes it.
   */
  async holdProject(organisationId: string, projectId: string): Promise<boolean> {
    const lock = this.dialect === 'mysql' ? ' LOCK IN SHARE MODE' : '';
    const rows = (await this.runner.query(
      `SELECT ${this.q('id')} FROM ${this.q('projects')} WHERE ${this.q('id')} = ? AND ${this.q('organisation_id')} = ?${lock}`,
      [projectId, organisationId],
    )) as unknown[];
    return rows.length === 1;
  }

  /** Opens the stream (once) and locks its row, so uploads of one stream run one after another. */
  async lockStream(stream: StreamKey, now: Date): Promise<StreamCursors> {
    const columns = ['device_id', 'workspace_id', 'organisation_id', 'events_cursor', 'usage_cursor', 'audit_cursor', 'updated_at'];
    const values = [stream.deviceId, stream.workspaceId, stream.organisationId, -1, '', '', sqlTime(this.dialect, now)];
    if (this.dialect === 'mysql') {
      // ON DUPLICATE KEY takes the row's exclusive lock at once; INSERT IGNORE would take a shared
      // one first, and two uploads of one stream upgrading theirs would deadlock each other.
      await this.runner.query(
        `INSERT INTO ${this.q('ingest_streams')} (${columns.map(this.q).join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) ` +
          `ON DUPLICATE KEY UPDATE ${this.q('device_id')} = ${this.q('device_id')}`,
        values,
      );
    } else {
      await this.insertIgnore('ingest_streams', columns, [values]);
    }
    const lock = this.dialect === 'mysql' ? ' FOR UPDATE' : '';
    const rows = (await this.runner.query(
      `SELECT ${this.q('events_cursor')} AS e, ${this.q('usage_cursor')} AS u, ${this.q('audit_cursor')} AS a FROM ${this.q('ingest_streams')} WHERE ${this.q('device_id')} = ? AND ${this.q('workspace_id')} = ?${lock}`,
      [stream.deviceId, stream.workspaceId],
    )) as { e: string | number; u: string; a: string }[];
    const row = rows[0];
    if (!row) throw new Error('ingest stream row missing after insert');
    return { events: Number(row.e), usage: row.u, audit: row.a };
  }

  async saveCursors(stream: StreamKey, cursors: StreamCursors, now: Date): Promise<void> {
    await this.runner.query(
      `UPDATE ${this.q('ingest_streams')} SET ${this.q('events_cursor')} = ?, ${this.q('usage_cursor')} = ?, ${this.q('audit_cursor')} = ?, ${this.q('updated_at')} = ? WHERE ${this.q('device_id')} = ? AND ${this.q('workspace_id')} = ?`,
      [cursors.events, cursors.usage, cursors.audit, sqlTime(this.dialect, now), stream.deviceId, stream.workspaceId],
    );
  }

  /** A task already held is replaced only by a newer version; answers whether it was. */
  async updateTaskIfNewer(deviceId: string, taskId: string, values: { title: string; status: string; createdAt: Date; updatedAt: Date; completedAt: Date | null; projectId: string; workspaceId: string }, now: Date): Promise<boolean> {
    const t = (d: Date | null) => (d === null ? null : sqlTime(this.dialect, d));
    const result = await this.runner.query(
      `UPDATE ${this.q('ingest_tasks')} SET ${this.q('title')} = ?, ${this.q('status')} = ?, ${this.q('created_at')} = ?, ${this.q('updated_at')} = ?, ${this.q('completed_at')} = ?, ${this.q('project_id')} = ?, ${this.q('workspace_id')} = ?, ${this.q('received_at')} = ? WHERE ${this.q('device_id')} = ? AND ${this.q('task_id')} = ? AND ${this.q('updated_at')} < ?`,
      [values.title, values.status, t(values.createdAt), t(values.updatedAt), t(values.completedAt), values.projectId, values.workspaceId, t(now), deviceId, taskId, t(values.updatedAt)],
      true,
    );
    return ((result as { affected?: number }).affected ?? 0) > 0;
  }
}
