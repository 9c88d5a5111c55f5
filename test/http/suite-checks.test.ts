import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { errorCodesOf, fullProfile, protocolCodesOf, servedOn } from '../../src/http/route.js';
import { answerKey } from '../support/suite-record.js';
import { startPlatform, type TestPlatform } from '../support/platform.js';
import { keyOf, runDir } from '../support/suite-run.mjs';

/**
 * Checks over the whole suite, run after every other test file (test/support/suite-sequencer.mjs
 * schedules this file last; test/support/suite-reporter.mjs marks each file finished; each file
 * leaves what it saw through test/support/suite-record.ts):
 *
 * - every answer the API declares, on either deployment (each operation's success statuses and
 *   each (status, error code) of `errorCodesOf`, with every feature on, and of `protocolCodesOf`:
 *   the MCP endpoint's JSON-RPC errors), was answered to some
 *   `call()` of some test: a declared code no test reaches is a promise nobody checked;
 * - no log line of any file holds a secret that file's service handed out (device tokens and
 *   refresh tokens, device and user codes, join keys, Cloud session tokens, one-time sign-in codes,
 *   sign-in flow states, link tickets, page session cookies, emailed six-digit codes: whatever any
 *   answer's body or headers or any mail carried) or that its tests minted (person tokens).
 *
 * They pass only when the whole suite runs (`npm test`, `npm run test:services`).
 */

interface FileRecord {
  path: string;
  answers: string[];
  secrets: string[];
  shortSecrets?: string[];
  logs: { source: string; line: string }[];
}

const WAIT_MS = 20 * 60_000;

async function everyOtherFile(): Promise<{ records: FileRecord[]; failedToRun: string[] }> {
  const dir = runDir();
  if (!dir) throw new Error('no suite run directory: run the suite through jest.config.js (npm test, npm run test:services)');
  const expected = (JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as string[]).filter((path) => !path.endsWith('suite-checks.test.ts'));
  const deadline = Date.now() + WAIT_MS;
  let waiting = expected;
  while (waiting.length) {
    if (Date.now() > deadline) throw new Error(`these test files did not finish within ${WAIT_MS / 60_000} minutes: ${waiting.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    waiting = waiting.filter((path) => !existsSync(join(dir, 'finished', `${keyOf(path)}.json`)));
  }
  const records: FileRecord[] = [];
  const failedToRun: string[] = [];
  for (const path of expected) {
    const file = join(dir, 'files', `${keyOf(path)}.json`);
    if (existsSync(file)) records.push(JSON.parse(readFileSync(file, 'utf8')) as FileRecord);
    else failedToRun.push(path);
  }
  return { records, failedToRun };
}

let records: FileRecord[];
let failedToRun: string[];
let selfHosted: TestPlatform;
let cloud: TestPlatform;

beforeAll(async () => {
  ({ records, failedToRun } = await everyOtherFile());
  selfHosted = await startPlatform();
  cloud = await startPlatform({ env: { PLATFORM_DEPLOYMENT: 'cloud', PLATFORM_BASE_URL: 'https://api.platform.test' } });
}, WAIT_MS + 60_000);
afterAll(async () => {
  await selfHosted?.close();
  await cloud?.close();
});

/** The name outbox.ts gives a mail file: `<UTC time>-<sequence>-<random>.eml`. */
const OUTBOX_FILE_NAME = /\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-\d{6,}-[0-9a-f]{8}\.eml/g;

describe('the whole suite', () => {
  it('ran every test file to its end', () => {
    expect(records.length).toBeGreaterThan(10);
    expect(failedToRun).toEqual([]);
  });

  it('reached every answer the API declares, on each deployment: each operation, status and error code', () => {
    const declared = new Map<string, string>();
    for (const platform of [selfHosted, cloud]) {
      const profile = fullProfile(platform.profile.deployment, platform.profile.tokenKinds);
      for (const route of platform.registry.routes.filter((r) => servedOn(r, profile))) {
        for (const status of Object.keys(route.responses).map(Number).filter((s) => s < 400)) {
          declared.set(answerKey(route.operationId, status, undefined), profile.deployment);
        }
        for (const [status, codes] of [...errorCodesOf(route, profile), ...protocolCodesOf(route)]) {
          for (const code of codes) declared.set(answerKey(route.operationId, status, code), profile.deployment);
        }
      }
    }
    expect(declared.size).toBeGreaterThan(100);
    const answered = new Set(records.flatMap((record) => record.answers));
    const neverAnswered = [...declared].filter(([key]) => !answered.has(key)).map(([key, deployment]) => `${key} (${deployment})`);
    // Each line: an answer the OpenAPI document promises that no test ever saw. Reach it in a
    // test (through call()), or stop declaring it (the route's `errors`, src/http/route.ts).
    expect(neverAnswered).toEqual([]);
  });

  it('wrote no secret it handed out or minted into any log line', () => {
    const secretsSeen = records.reduce((sum, record) => sum + record.secrets.length, 0);
    const linesSeen = records.reduce((sum, record) => sum + record.logs.length, 0);
    expect(secretsSeen).toBeGreaterThan(100);
    expect(linesSeen).toBeGreaterThan(1000);
    const leaks: string[] = [];
    for (const record of records) {
      if (!record.secrets.length || !record.logs.length) continue;
      const text = record.logs.map((entry) => entry.line).join('\n');
      for (const secret of record.secrets) {
        if (!text.includes(secret)) continue;
        const where = record.logs.find((entry) => entry.line.includes(secret))!;
        leaks.push(`${record.path}: ${secret.slice(0, 14)}… in a ${where.source} line: ${where.line.slice(0, 300)}`);
      }
    }
    expect(leaks).toEqual([]);
  });

  it('wrote no emailed six-digit code into any log line', () => {
    // The pattern is the outbox's real format: every file name the outbox logged in this run is blanked whole.
    const outboxFiles = records.flatMap((record) =>
      record.logs.flatMap((entry) => {
        if (!entry.line.includes('mail written to the outbox')) return [];
        try {
          const file = (JSON.parse(entry.line) as { file?: unknown }).file;
          return typeof file === 'string' ? [file] : [];
        } catch {
          return [];
        }
      }),
    );
    expect(outboxFiles.length).toBeGreaterThan(10);
    expect(outboxFiles.filter((file) => basename(file).replace(OUTBOX_FILE_NAME, '') !== '')).toEqual([]);
    const codesSeen = records.reduce((sum, record) => sum + (record.shortSecrets?.length ?? 0), 0);
    expect(codesSeen).toBeGreaterThan(10);
    const leaks: string[] = [];
    for (const record of records) {
      for (const code of record.shortSecrets ?? []) {
        // As a number of its own: not inside a longer run of digits or an id.
        const standalone = new RegExp(`(?<![0-9A-Za-z_])${code}(?![0-9A-Za-z_])`);
        // An outbox file's name (adapters/mail/outbox.ts: time, a six-digit counter, random hex)
        // is made of nothing a mail holds; its counter can equal a code by chance (000145 did).
        const where = record.logs.find((entry) => standalone.test(entry.line.replace(OUTBOX_FILE_NAME, '<outbox file>')));
        if (where) leaks.push(`${record.path}: ${code} in a ${where.source} line: ${where.line.slice(0, 300)}`);
      }
    }
    expect(leaks).toEqual([]);
  });
});
