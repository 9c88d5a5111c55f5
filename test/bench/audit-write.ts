import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import type { DataSource } from 'typeorm';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import { NO_AUDIT_TRAIL, type AuditTrail } from '../../src/audit.js';
import { database as parseDatabase } from '../../src/config/parsers.js';
import { createDataSource } from '../../src/db/data-source.js';
import { AuditLogStore } from '../../src/modules/audit-log/store.js';
import { DatabaseAuditTrail } from '../../src/modules/audit-log/trail.js';
import { OrganisationService } from '../../src/modules/organisation/service.js';
import { PolicyService } from '../../src/modules/policy/service.js';
import { ProjectService } from '../../src/modules/projects/service.js';
import { systemClock } from '../../src/util/clock.js';
import { createMariadbDatabase } from './ingest.js';

/**
 * The audit row's write overhead (`npm run bench -- --only audit`, issue 28 item 5): the same
 * policy publish (PolicyService.publishOrganisation, a changed document each time, its revision
 * row in one transaction) with the stored trail, and with it turned off (NO_AUDIT_TRAIL injected),
 * in the same run on the same database, interleaved two by two so that both see the same table
 * sizes and the same machine load. On SQLite (a file) and on MariaDB when it answers. Reported:
 * p50, p99 and the mean of each, and the difference of the medians: what the row adds to a publish.
 */

export interface AuditWriteResult {
  database: 'sqlite' | 'mariadb';
  publishes: number;
  withTrail: Stats;
  withoutTrail: Stats;
  /** Median with the trail minus median without, milliseconds. */
  overheadMs: number;
  /** Median with / median without. */
  ratio: number;
  problem?: string;
}

interface Stats {
  p50: number;
  p99: number;
  mean: number;
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), mean: samples.reduce((sum, value) => sum + value, 0) / samples.length };
}

async function measure(dataSource: DataSource, database: 'sqlite' | 'mariadb', seconds: number, log: (line: string) => void): Promise<AuditWriteResult> {
  await dataSource.runMigrations();
  const organisation = await new OrganisationService(dataSource, systemClock).create({ name: 'Audit bench', kind: 'enterprise', hosts: [`audit-bench-${Date.now()}.local`] });
  const logger = pino({ enabled: false });
  const projects = new ProjectService(dataSource, systemClock);
  const json = { maxDepth: 32, maxKeys: 10_000, maxStringLength: 65_536 };
  const serviceWith = (trail: AuditTrail) => new PolicyService(dataSource, systemClock, logger, projects, json, { trail });
  const audited = serviceWith(new DatabaseAuditTrail(new AuditLogStore(dataSource), systemClock));
  const plain = serviceWith(NO_AUDIT_TRAIL);
  const actor = { kind: 'cli' as const };
  // Consecutive publishes alternate two documents, so each one changes the policy and is stored.
  const documents = [DEFAULT_POLICY, { ...DEFAULT_POLICY, agents: { sandbox: 'off' } }];
  const withTrail: number[] = [];
  const withoutTrail: number[] = [];
  const publish = async (index: number) => {
    // Two audited, two plain, and so on: both sides see the same tables and load.
    const audit = index % 4 < 2;
    const started = performance.now();
    const outcome = await (audit ? audited : plain).publishOrganisation(organisation.id, actor, documents[index % 2]);
    const elapsed = performance.now() - started;
    if (!outcome.changed) throw new Error('a bench publish changed nothing');
    return { audit, elapsed };
  };
  // Warm-up: caches, prepared statements, the JIT.
  for (let index = 0; index < 40; index++) await publish(index);
  const until = performance.now() + seconds * 1000;
  let index = 0;
  while (performance.now() < until || index % 4 !== 0) {
    const { audit, elapsed } = await publish(index++);
    (audit ? withTrail : withoutTrail).push(elapsed);
  }
  const [rows] = await dataSource.query<{ count: number | string }[]>('SELECT COUNT(*) AS count FROM audit_log WHERE organisation_id = ?', [organisation.id]);
  const expected = 20 + withTrail.length;
  const problem = Number(rows?.count) === expected ? undefined : `expected ${expected} audit rows, found ${String(rows?.count)}`;
  const a = stats(withTrail);
  const b = stats(withoutTrail);
  log(`audit write (${database}): ${index} publishes, with the trail p50 ${a.p50.toFixed(3)} ms, without ${b.p50.toFixed(3)} ms`);
  return { database, publishes: index, withTrail: a, withoutTrail: b, overheadMs: a.p50 - b.p50, ratio: a.p50 / b.p50, ...(problem ? { problem } : {}) };
}

export async function runAuditWriteBench(options: { mariadb: string; seconds: number; log: (line: string) => void }): Promise<AuditWriteResult[]> {
  const results: AuditWriteResult[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'platform-audit-bench-'));
  const sqlite = createDataSource(parseDatabase(`sqlite:${join(dir, 'audit.sqlite')}`));
  await sqlite.initialize();
  try {
    results.push(await measure(sqlite, 'sqlite', options.seconds, options.log));
  } finally {
    await sqlite.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  const { database, unreachable } = await createMariadbDatabase(options.mariadb);
  if (!database) {
    options.log(`audit write (mariadb): skipped, ${unreachable}`);
    return results;
  }
  const mariadb = createDataSource(parseDatabase(database.platformUrl));
  await mariadb.initialize();
  try {
    results.push(await measure(mariadb, 'mariadb', options.seconds, options.log));
  } finally {
    await mariadb.destroy();
    await database.drop();
  }
  return results;
}

export function formatAuditWriteTable(results: AuditWriteResult[]): string[] {
  const rows = [['database', 'publishes', 'with trail p50 ms', 'p99 ms', 'without p50 ms', 'p99 ms', 'overhead p50 ms', 'ratio', 'result']];
  for (const result of results) {
    rows.push([
      result.database,
      String(result.publishes),
      result.withTrail.p50.toFixed(3),
      result.withTrail.p99.toFixed(3),
      result.withoutTrail.p50.toFixed(3),
      result.withoutTrail.p99.toFixed(3),
      result.overheadMs.toFixed(3),
      `${result.ratio.toFixed(2)}x`,
      result.problem ? `FAILED: ${result.problem}` : 'ok',
    ]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`);
}
