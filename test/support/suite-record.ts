import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyOf, runDir } from './suite-run.mjs';

/**
 * What one test file saw, for the suite-wide checks (test/http/suite-checks.test.ts): every
 * answer of `call()` (operation, status, error code), every secret the service handed out (in any
 * answer's body or headers, or a mail) or the test minted, and every log line the service wrote. Written when the file ends
 * (test/support/suite-setup.ts); each test file has its own copy of this module.
 */

const answers = new Set<string>();
const secrets = new Set<string>();
/** Secrets too short to search for as text (emailed six-digit codes): searched as whole numbers. */
const shortSecrets = new Set<string>();
const logSources: { name: string; lines: readonly unknown[] }[] = [];

/** `operationId status code` (`-` for a success), as the checks compare them. */
export function answerKey(operationId: string, status: number, code: string | undefined): string {
  return `${operationId} ${status} ${code ?? '-'}`;
}

export function recordAnswer(operationId: string, status: number, code: string | undefined): void {
  answers.add(answerKey(operationId, status, code));
}

/** A value no log line may ever hold (shorter than 8 characters: too short to search for). */
export function recordSecret(value: unknown): void {
  if (typeof value !== 'string' || value.length < 8) return;
  secrets.add(value);
  // A platform secret's random part is as secret without its prefix (and a join key's secret
  // without its lookup part): a line holding only that part leaks it too.
  const prefixed = /^platform_[a-z]{2}_(.+)$/.exec(value);
  if (prefixed) {
    secrets.add(prefixed[1]!);
    const last = prefixed[1]!.split('_').pop()!;
    if (last.length >= 16) secrets.add(last);
  }
}

/** Names of answer fields that always carry a secret, wherever they appear in a body. */
const SECRET_FIELDS = new Set(['access_token', 'refresh_token', 'device_code', 'user_code', 'userCode']);
/** Names that carry one when the value looks like one (long, no white space): a policy rule may be called `key`. */
const MAYBE_SECRET_FIELDS = new Set(['key', 'token', 'ticket', 'code', 'secret', 'id_token', 'assertion']);
const PLATFORM_SECRET = /platform_[a-z]{2}_[A-Za-z0-9_-]{8,}/g;

/** Records the secrets an answer hands out: by field name, and any platform_xx_ token anywhere. */
export function recordSecretsOf(body: unknown): void {
  const pending: unknown[] = [body];
  for (let seen = 0; pending.length && seen < 10_000; seen++) {
    const value = pending.pop();
    if (typeof value === 'string') for (const match of value.matchAll(PLATFORM_SECRET)) recordSecret(match[0]);
    else if (Array.isArray(value)) pending.push(...value);
    else if (value && typeof value === 'object') {
      for (const [name, field] of Object.entries(value)) {
        if (MAYBE_SECRET_FIELDS.has(name) && typeof field === 'string' && field.length >= 16 && !/\s/.test(field)) recordSecret(field);
        if (SECRET_FIELDS.has(name) && typeof field === 'string') {
          recordSecret(field);
          // A user code is matched without its dash, so both spellings are secret.
          if (name === 'user_code' || name === 'userCode') recordSecret(field.replace(/-/g, ''));
        }
        pending.push(field);
      }
    }
  }
}

/** The six-digit codes of a mail's text (a sign-in code, standing on a line of its own). */
export function recordShortSecretsOf(text: string): void {
  for (const match of text.matchAll(/^[\t ]*(\d{6})[\t ]*$/gm)) shortSecrets.add(match[1]!);
}

/** A place log lines of this file accumulate (a platform's logs, the command line's stderr). */
export function recordLogs(name: string, lines: readonly unknown[]): void {
  logSources.push({ name, lines });
}

export function flush(testPath: string): void {
  const dir = runDir();
  if (!dir) return;
  const logs = logSources.flatMap(({ name, lines }) => lines.map((line) => ({ source: name, line: typeof line === 'string' ? line : JSON.stringify(line) })));
  writeFileSync(join(dir, 'files', `${keyOf(testPath)}.json`), JSON.stringify({ path: testPath, answers: [...answers], secrets: [...secrets], shortSecrets: [...shortSecrets], logs }));
}
