import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

/**
 * The only code that writes and reads ingested items. Writes are multi-row
 * `INSERT … IGNORE` statements keyed by each item's identity, so a retried or overlapping
 * upload stores nothing twice and the database itself counts what was new.
 */

export type Dialect = 'sqlite' | 'mysql';

export function dialectOf(dataSource: DataSource): Dialect {
  return dataSource.options.type === 'better-sqlite3' ? 'sqlite' : 'mysql';
}

/** How a timestamp is bound: better-sqlite3 binds no Date; TypeORM keeps UTC text there. */
export function sqlTime(dialect: Dialect, date: Date): Date | string {
  return dialect === 'sqlite' ? date.toISOString().replace('T', ' ').replace('Z', '') : date;
}

const ROWS_PER_STATEMENT = 400;

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
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
      const result = await this.runner.query(head + chunk.map(() => tuple).join(', '), chunk.flat(), true);
      inserted += (result as { affected?: number }).affected ?? 0;
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
