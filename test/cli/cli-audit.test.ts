import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_POLICY } from '../../policies/default-policy.js';
import type { AuditRowView } from '../../src/modules/audit-log/service.js';
import { ManualClock } from '../../src/util/clock.js';
import { askForCode } from '../support/devices.js';
import { auditsOf, runCliCapturing, type CliOutcome } from '../support/cli.js';
import { startPlatform, type TestPlatform } from '../support/platform.js';

/**
 * The command line's changes in the stored audit trail (docs/api/audit-trail.md): every audit
 * line a command writes has exactly one row beside it, with the same action, actor and target,
 * and no request facts; a refused command leaves neither. `platform audit` reads the rows.
 */

const clock = new ManualClock(Math.floor(Date.now() / 1000) * 1000);
let platform: TestPlatform;
let scratch: string;

function cli(args: string[]): Promise<CliOutcome> {
  return runCliCapturing(args, { env: { PLATFORM_DEPLOYMENT: 'self-hosted', DATABASE_URL: platform.database.url }, clock, dataSource: platform.dataSource });
}

beforeAll(async () => {
  platform = await startPlatform({ clock });
  scratch = await mkdtemp(join(tmpdir(), 'platform-cli-audit-'));
});
afterAll(async () => {
  await platform.close();
  await rm(scratch, { recursive: true, force: true });
});

async function highestRowId(): Promise<number> {
  const [row] = await platform.dataSource.query<{ top: number | string | null }[]>('SELECT MAX(row_id) AS top FROM audit_log');
  return Number(row?.top ?? 0);
}

/** Runs a command that succeeds; its audit lines and the rows it wrote must be the same changes, one row per line. */
async function audited(args: string[], lines: number): Promise<CliOutcome> {
  const from = await highestRowId();
  const outcome = await cli(args);
  expect({ code: outcome.code, stderr: outcome.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  const rows = await platform.dataSource.query<Record<string, unknown>[]>(
    'SELECT organisation_id, actor_kind, actor_person_id, action, target, source_address, user_agent, request_id FROM audit_log WHERE row_id > ? ORDER BY row_id',
    [from],
  );
  const audits = auditsOf(outcome);
  expect(audits).toHaveLength(lines);
  expect(rows).toHaveLength(lines);
  rows.forEach((row, index) => {
    const line = audits[index] as { action: string; organisationId: string; actor: { kind: string; personId?: string }; target: Record<string, unknown> };
    // The line may name the policy's revision (an ETag); the row keeps its number only.
    const { revision: _revision, ...target } = line.target;
    expect({
      organisationId: row.organisation_id,
      actor: { kind: row.actor_kind, ...(row.actor_person_id ? { personId: row.actor_person_id } : {}) },
      action: row.action,
      target: JSON.parse(row.target as string),
      request: [row.source_address, row.user_agent, row.request_id],
    }).toEqual({ organisationId: line.organisationId, actor: line.actor, action: line.action, target, request: [null, null, null] });
  });
  return outcome;
}

describe('every command that changes something leaves one row per audit line', () => {
  let orgId = '';
  it('organisations, people, projects, join keys, device codes, policy', async () => {
    const created = await audited(['org', 'create', '--name', 'Audited CLI', '--host', 'audited-cli.example', '--json'], 1);
    orgId = (JSON.parse(created.stdout) as { id: string }).id;
    await audited(['org', 'configure', orgId, '--name', 'Audited CLI, renamed'], 1);
    await audited(['bootstrap', '--org', orgId, '--email', 'founder@audited.example'], 1);
    await audited(['person', 'add', '--org', orgId, '--email', 'admin@audited.example', '--role', 'admin'], 1);
    await audited(['person', 'add', '--org', orgId, '--email', 'plain@audited.example'], 1);
    await audited(['person', 'set-role', '--org', orgId, '--person', 'plain@audited.example', '--role', 'admin'], 1);
    const project = JSON.parse((await audited(['project', 'create', '--org', orgId, '--name', 'CLI project', '--owner', 'founder@audited.example', '--json'], 1)).stdout) as { id: string };
    await audited(['project', 'members', 'add', '--org', orgId, '--project', project.id, '--person', 'plain@audited.example'], 1);
    await audited(['project', 'members', 'set-role', '--org', orgId, '--project', project.id, '--person', 'plain@audited.example', '--role', 'viewer'], 1);
    await audited(['project', 'members', 'remove', '--org', orgId, '--project', project.id, '--person', 'plain@audited.example'], 1);
    const key = JSON.parse((await audited(['join-key', 'create', '--org', orgId, '--as', 'admin@audited.example', '--description', 'rack', '--json'], 1)).stdout) as { joinKey: { id: string } };
    await audited(['join-key', 'revoke', key.joinKey.id, '--org', orgId], 1);
    const code = await askForCode(platform, { host: 'audited-cli.example', body: { workspaceId: 'ws-cli', name: 'CLI laptop' } });
    await audited(['device', 'deny', code.user_code, '--org', orgId], 1);
    const approvedCode = await askForCode(platform, { host: 'audited-cli.example', body: { workspaceId: 'ws-cli', name: 'CLI laptop 2' } });
    await audited(['device', 'approve', approvedCode.user_code, '--org', orgId, '--as', 'admin@audited.example'], 1);
    const file = join(scratch, 'policy.json');
    await writeFile(file, JSON.stringify({ ...DEFAULT_POLICY, agents: { sandbox: 'off' } }));
    const published = JSON.parse((await audited(['policy', 'publish', '--org', orgId, '--file', file, '--json'], 1)).stdout) as { number: number };
    // Publishing the same again changes nothing: no line, no row.
    await audited(['policy', 'publish', '--org', orgId, '--file', file], 0);
    await writeFile(file, JSON.stringify(DEFAULT_POLICY));
    await audited(['policy', 'publish', '--org', orgId, '--file', file], 1);
    await audited(['policy', 'restore', String(published.number), '--org', orgId], 1);
    await audited(['project', 'delete', project.id, '--org', orgId], 1);
    await audited(['person', 'remove', '--org', orgId, '--person', 'plain@audited.example'], 1);
  });

  it('a refused command leaves no row', async () => {
    const from = await highestRowId();
    expect((await cli(['join-key', 'create', '--org', orgId, '--as', 'ghost@audited.example', '--description', 'x'])).code).not.toBe(0);
    expect((await cli(['project', 'delete', 'prj_nothing', '--org', orgId])).code).toBe(3);
    expect(await highestRowId()).toBe(from);
  });

  it('platform audit reads them, newest first, by organisation, action and time', async () => {
    const all = JSON.parse((await cli(['audit', '--org', orgId, '--json', '--limit', '1000'])).stdout) as AuditRowView[];
    expect(all).toHaveLength(19);
    expect(all.every((entry) => entry.organisationId === orgId)).toBe(true);
    expect(all.at(-1)).toMatchObject({ action: 'organisation.created', actor: { kind: 'cli', personId: null, deviceId: null } });
    const ids = all.map((entry) => Number(entry.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const published = JSON.parse((await cli(['audit', '--org', 'audited-cli.example', '--action', 'policy.published', '--json'])).stdout) as AuditRowView[];
    expect(published).toHaveLength(2);
    expect(published.every((entry) => entry.action === 'policy.published')).toBe(true);
    clock.advance(3_600_000);
    expect(JSON.parse((await cli(['audit', '--org', orgId, '--since', '30m', '--json'])).stdout)).toEqual([]);
    expect(JSON.parse((await cli(['audit', '--org', orgId, '--since', '2h', '--json'])).stdout)).toHaveLength(19);
    const text = await cli(['audit', '--org', orgId, '--limit', '2']);
    expect(text.code).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^TIME\s+ACTION\s+ACTOR\s+TARGET/);
    expect(text.stdout).toContain('cli');
    // Every organisation's, without --org.
    const everyone = await cli(['audit', '--limit', '5']);
    expect(everyone.stdout.split('\n')[0]).toMatch(/^TIME\s+ORGANISATION\s+ACTION/);
    for (const [args, message] of [
      [['audit', '--since', 'yesterday'], '--since must be'],
      [['audit', '--limit', '0'], '--limit must be'],
      [['audit', '--action', 'DROP TABLE'], '--action must be'],
      [['audit', '--org', 'org_nothing'], 'no organisation'],
    ] as const) {
      const refused = await cli([...args]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain(message);
    }
  });
});
