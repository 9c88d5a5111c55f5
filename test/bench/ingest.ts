import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { sqlTime } from '../../src/modules/ingest/store.js';
import type { IngestDevice } from './fixtures.js';

/**
 * Ingest throughput: several workbenches, each its own stream (device + workspace), each
 * uploading envelopes of `batch` events one after another with increasing `seq`, for a fixed
 * time. Next to it, the ceiling: the same rows written by a plain multi-row INSERT (mysql2 for
 * MariaDB, better-sqlite3 for SQLite) into a table of the same shape, with the same number of
 * concurrent writers and the same rows per batch.
 *
 * Both paths are checked after they ran: the rows in the table must equal the events sent (every
 * phase, warm-up included), and every platform answer must say it stored the whole envelope and
 * moved the cursor to its last `seq`. A path that drops or duplicates rows fails the run.
 */

export interface PhaseResult {
  /** Batches (envelopes or INSERTs) completed. */
  batches: number;
  items: number;
  /** From the phase's start until the last batch in flight at its end completed. */
  seconds: number;
  itemsPerSecond: number;
  /** Per batch, milliseconds. */
  p50: number;
  p99: number;
  problem?: string;
}

export interface IngestPathResult {
  name: string;
  warmup?: PhaseResult;
  measurement?: PhaseResult;
  /** Items sent in every phase, and rows found in the table afterwards. */
  sent: number;
  rows?: number;
  problem?: string;
  /** Items/s of each measured run, in order (`--runs`); `measurement` is the median one's. */
  runs?: number[];
}

/** A writer sends one batch of the stream it owns and answers how many items were stored. */
type Writer = () => Promise<number>;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Every writer loops until the time is up; a batch in flight at the deadline still completes and counts. */
export async function runPhase(writers: Writer[], seconds: number): Promise<PhaseResult> {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const latencies: number[] = [];
  let items = 0;
  let problem: string | undefined;
  await Promise.all(
    writers.map(async (write) => {
      while (problem === undefined && performance.now() < deadline) {
        const begin = performance.now();
        try {
          // Not `items += await write()`: that reads `items` before the await and loses the
          // other writers' additions made meanwhile.
          const stored = await write();
          items += stored;
        } catch (error) {
          problem ??= error instanceof Error ? error.message : String(error);
          return;
        }
        latencies.push(performance.now() - begin);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    batches: latencies.length,
    items,
    seconds: elapsed,
    itemsPerSecond: elapsed > 0 ? items / elapsed : 0,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    ...(problem !== undefined ? { problem } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// The events: the same for the platform path and the ceiling.

const KINDS = ['session.started', 'tool.called', 'tool.finished', 'agent.message', 'file.changed'];
const EPOCH = Date.now() - 86_400_000;

export interface BenchEvent {
  seq: number;
  id: string;
  at: string;
  kind: string;
  data: Record<string, unknown>;
}

/** A typical small workbench event (about 230 bytes of JSON), different for every seq. */
export function eventFor(stream: number, seq: number): BenchEvent {
  return {
    seq,
    id: `evt-${stream}-${seq}`,
    at: new Date(EPOCH + seq * 7).toISOString(),
    kind: KINDS[seq % KINDS.length]!,
    data: {
      tool: 'bash',
      command: `npm run test -- --shard ${(seq % 8) + 1}/8`,
      exitCode: seq % 17 === 0 ? 1 : 0,
      durationMs: (seq * 37) % 5_000,
      path: `src/modules/module-${seq % 97}.ts`,
      session: `ses-${stream}-${Math.floor(seq / 500)}`,
    },
  };
}

function eventsFor(stream: number, firstSeq: number, count: number): BenchEvent[] {
  const events = new Array<BenchEvent>(count);
  for (let i = 0; i < count; i++) events[i] = eventFor(stream, firstSeq + i);
  return events;
}

// ---------------------------------------------------------------------------------------------
// The platform path: POST /ingest/v1 with a Bearer device token, on a kept-alive connection.

export interface PlatformIngestTarget {
  origin: string;
  host: string;
  projectId: string;
  devices: IngestDevice[];
  batch: number;
}

interface IngestAnswer {
  accepted?: { events?: number };
  cursors?: { events?: number };
}

function post(agent: Agent, url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(60_000, () => req.destroy(new Error(`no answer from ${url} in 60 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** One writer per device; each keeps its own next `seq`, across phases. */
export function platformWriters(target: PlatformIngestTarget): { writers: Writer[]; close(): void } {
  const agents: Agent[] = [];
  const url = `${target.origin}/ingest/v1`;
  const writers = target.devices.map((device, stream) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const headers = { Host: target.host, Authorization: `Bearer ${device.accessToken}`, 'Content-Type': 'application/json' };
    let next = 0;
    return async () => {
      const first = next;
      const last = first + target.batch - 1;
      const envelope = {
        schemaVersion: 1,
        projectId: target.projectId,
        workspaceId: device.workspaceId,
        sentAt: new Date().toISOString(),
        cursors: { events: first - 1 },
        events: eventsFor(stream, first, target.batch),
        usage: [],
        audit: [],
        tasks: [],
      };
      const answer = await post(agent, url, headers, Buffer.from(JSON.stringify(envelope)));
      if (answer.status !== 200) throw new Error(`POST /ingest/v1 answered ${answer.status}: ${answer.body.slice(0, 400)}`);
      const parsed = JSON.parse(answer.body) as IngestAnswer;
      if (parsed.accepted?.events !== target.batch || parsed.cursors?.events !== last) {
        throw new Error(`POST /ingest/v1 stored ${parsed.accepted?.events} of ${target.batch} new events (cursor ${parsed.cursors?.events}, expected ${last})`);
      }
      next = last + 1;
      return target.batch;
    };
  });
  return { writers, close: () => agents.forEach((agent) => agent.destroy()) };
}

// ---------------------------------------------------------------------------------------------
// The ceilings: the same rows, inserted directly.

const EVENT_COLUMNS = ['organisation_id', 'project_id', 'device_id', 'workspace_id', 'seq', 'event_id', 'at', 'kind', 'data', 'received_at'];
export const CEILING_TABLE = 'bench_ceiling_events';

export interface CeilingTarget {
  organisationId: string;
  projectId: string;
  devices: IngestDevice[];
  batch: number;
}

/** The row the platform writes for an event (service.ts), in the dialect's time binding. */
function rowsFor(dialect: 'sqlite' | 'mysql', target: CeilingTarget, stream: number, first: number): unknown[] {
  const device = target.devices[stream]!;
  const now = sqlTime(dialect, new Date());
  const values: unknown[] = [];
  for (const event of eventsFor(stream, first, target.batch)) {
    values.push(target.organisationId, target.projectId, device.deviceId, device.workspaceId, event.seq, event.id, sqlTime(dialect, new Date(event.at)), event.kind, JSON.stringify(event.data), now);
  }
  return values;
}

/** MariaDB: one connection per writer, one multi-row INSERT (autocommit) per batch. */
export async function mysqlCeilingWriters(url: string, target: CeilingTarget): Promise<{ writers: Writer[]; close(): Promise<void> }> {
  const connections = await Promise.all(target.devices.map(() => mysql.createConnection({ uri: url, timezone: 'Z', charset: 'utf8mb4_unicode_ci' })));
  const tuple = `(${EVENT_COLUMNS.map(() => '?').join(', ')})`;
  const sql = `INSERT INTO \`${CEILING_TABLE}\` (${EVENT_COLUMNS.map((c) => `\`${c}\``).join(', ')}) VALUES ${new Array<string>(target.batch).fill(tuple).join(', ')}`;
  const writers = connections.map((connection, stream) => {
    let next = 0;
    return async () => {
      const [result] = await connection.query(sql, rowsFor('mysql', target, stream, next));
      const affected = (result as { affectedRows?: number }).affectedRows ?? 0;
      if (affected !== target.batch) throw new Error(`the ceiling INSERT stored ${affected} of ${target.batch} rows`);
      next += target.batch;
      return affected;
    };
  });
  return { writers, close: async () => void (await Promise.all(connections.map((c) => c.end().catch(() => undefined)))) };
}

/** SQLite: one writer at a time is all SQLite allows, so the writers take turns on one connection. */
export function sqliteCeilingWriters(file: string, target: CeilingTarget): { writers: Writer[]; close(): void } {
  const db = new Database(file);
  // The platform's own connection settings (src/db/data-source.ts).
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const tuple = `(${EVENT_COLUMNS.map(() => '?').join(', ')})`;
  const insert = db.prepare(`INSERT INTO "${CEILING_TABLE}" (${EVENT_COLUMNS.map((c) => `"${c}"`).join(', ')}) VALUES ${new Array<string>(target.batch).fill(tuple).join(', ')}`);
  const writers = target.devices.map((_, stream) => {
    let next = 0;
    return async () => {
      // Yield first, so the writers interleave as the platform's concurrent uploads do.
      await new Promise<void>((resolve) => setImmediate(resolve));
      const { changes } = insert.run(rowsFor('sqlite', target, stream, next));
      if (changes !== target.batch) throw new Error(`the ceiling INSERT stored ${changes} of ${target.batch} rows`);
      next += target.batch;
      return changes;
    };
  });
  return { writers, close: () => db.close() };
}

/** The ceiling table: ingest_events' own definition (columns, keys, indexes, foreign key) under another name. */
export function createSqliteCeilingTable(file: string): void {
  const db = new Database(file);
  try {
    const statements = db.prepare(`SELECT sql FROM sqlite_master WHERE tbl_name = 'ingest_events' AND sql IS NOT NULL ORDER BY type DESC`).all() as { sql: string }[];
    if (!statements.some((s) => s.sql.startsWith('CREATE TABLE'))) throw new Error('ingest_events is missing from the SQLite database');
    db.transaction(() => {
      for (const { sql } of statements) db.exec(sql.replaceAll('ingest_events', CEILING_TABLE));
    })();
  } finally {
    db.close();
  }
}

export function countSqliteRows(file: string, table: string): number {
  const db = new Database(file, { fileMustExist: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM "${table}"`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// MariaDB: a fresh database for the run, dropped afterwards.

export interface BenchDatabase {
  /** mysql://… URL of the fresh database (for mysql2). */
  url: string;
  /** The same as DATABASE_URL for the platform (mariadb://…). */
  platformUrl: string;
  name: string;
  drop(): Promise<void>;
}

/** Answers undefined and why when the server cannot be reached. */
export async function createMariadbDatabase(server: string): Promise<{ database?: BenchDatabase; unreachable?: string }> {
  let base = server;
  while (base.endsWith('/')) base = base.slice(0, -1);
  const adminUrl = base.replace(/^mariadb:/, 'mysql:');
  let admin: mysql.Connection;
  try {
    admin = await mysql.createConnection({ uri: adminUrl, connectTimeout: 3_000 });
  } catch (error) {
    const code = (error as { code?: string }).code;
    return { unreachable: `${code ? `${code}: ` : ''}${error instanceof Error ? error.message : String(error)}` };
  }
  const name = `platform_bench_${randomBytes(6).toString('hex')}`;
  try {
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await admin.end();
  }
  const platformBase = adminUrl.replace(/^mysql:/, 'mariadb:');
  return {
    database: {
      name,
      url: `${adminUrl}/${name}`,
      platformUrl: `${platformBase}/${name}`,
      drop: async () => {
        const connection = await mysql.createConnection({ uri: adminUrl, connectTimeout: 3_000 });
        try {
          await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
        } finally {
          await connection.end();
        }
      },
    },
  };
}

export async function createMysqlCeilingTable(url: string): Promise<void> {
  const connection = await mysql.createConnection({ uri: url });
  try {
    await connection.query(`CREATE TABLE \`${CEILING_TABLE}\` LIKE \`ingest_events\``);
    // LIKE copies columns and indexes but not foreign keys; the platform's table checks one.
    await connection.query(
      `ALTER TABLE \`${CEILING_TABLE}\` ADD CONSTRAINT \`fk_${CEILING_TABLE}_organisation\` FOREIGN KEY (\`organisation_id\`) REFERENCES \`organisations\`(\`id\`) ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  } finally {
    await connection.end();
  }
}

export async function countMysqlRows(url: string, table: string): Promise<number> {
  const connection = await mysql.createConnection({ uri: url });
  try {
    const [rows] = await connection.query(`SELECT COUNT(*) AS n FROM \`${table}\``);
    return Number((rows as { n: number | string }[])[0]?.n ?? -1);
  } finally {
    await connection.end();
  }
}

/** Warm-up (when asked), measurement, then the row check; never throws for a broken path, reports it. */
/**
 * `measurePath` `runs` times over the same writers, one after another: each run's rows are
 * checked against everything sent so far, and the answer carries the run with the median items/s
 * (its batches and latencies), every run's items/s, and the totals sent and stored.
 */
export async function measurePathRuns(
  name: string,
  writers: Writer[],
  options: { warmupSeconds: number; durationSeconds: number; runs: number },
  countRows: () => Promise<number> | number,
): Promise<IngestPathResult> {
  const results: IngestPathResult[] = [];
  let sentBefore = 0;
  for (let run = 0; run < options.runs; run++) {
    // Every run warms up: the writers' streams and the server start each run the same way.
    const result = await measurePath(name, writers, options, async () => (await countRows()) - sentBefore);
    sentBefore += result.sent;
    results.push(result);
    if (result.problem) break;
  }
  const measured = results.filter((result) => result.measurement !== undefined);
  const sorted = [...measured].sort((a, b) => a.measurement!.itemsPerSecond - b.measurement!.itemsPerSecond);
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  const problems = results.map((result, index) => (result.problem ? `run ${index + 1}: ${result.problem}` : undefined)).filter((problem) => problem !== undefined);
  const rowsKnown = results.every((result) => result.rows !== undefined);
  return {
    name,
    ...(median?.warmup ? { warmup: median.warmup } : {}),
    ...(median?.measurement ? { measurement: median.measurement } : {}),
    sent: sentBefore,
    ...(rowsKnown ? { rows: results.reduce((sum, result) => sum + result.rows!, 0) } : {}),
    ...(problems.length ? { problem: problems.join('; ') } : {}),
    runs: measured.map((result) => result.measurement!.itemsPerSecond),
  };
}

export async function measurePath(
  name: string,
  writers: Writer[],
  options: { warmupSeconds: number; durationSeconds: number },
  countRows: () => Promise<number> | number,
): Promise<IngestPathResult> {
  const result: IngestPathResult = { name, sent: 0 };
  const problems: string[] = [];
  if (options.warmupSeconds > 0) {
    result.warmup = await runPhase(writers, options.warmupSeconds);
    result.sent += result.warmup.items;
    if (result.warmup.problem) problems.push(`warm-up: ${result.warmup.problem}`);
  }
  if (problems.length === 0) {
    result.measurement = await runPhase(writers, options.durationSeconds);
    result.sent += result.measurement.items;
    if (result.measurement.problem) problems.push(result.measurement.problem);
  }
  try {
    result.rows = await countRows();
    if (result.rows !== result.sent) problems.push(`the table holds ${result.rows} rows, but ${result.sent} items were sent and acknowledged`);
  } catch (error) {
    problems.push(`could not count the rows: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (result.measurement && result.measurement.batches === 0) problems.push('no batch completed');
  if (problems.length) result.problem = problems.join('; ');
  return result;
}
