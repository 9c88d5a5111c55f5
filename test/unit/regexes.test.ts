import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { check } from 'recheck';
import type { FoundRegex, Inventory } from '../support/regex-inventory.js';

/**
 * Every regular expression the code builds is linear in its input, by a ReDoS checker (recheck:
 * automata theory where it can, fuzzing where it cannot). The regexes are collected, not listed:
 * test/support/regex-inventory.ts finds every literal in src/, adapters/ and policies/ with the
 * TypeScript compiler, and every RegExp constructed while it imports each module and builds the
 * app for both deployments (patterns assembled at run time, the routes' schema patterns, the
 * router's path matchers), with the `format`s the schemas name. A regex added anywhere is checked
 * here without anyone writing it down; lint (eslint-plugin-regexp) catches most of them earlier.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

let inventory: Inventory;

beforeAll(async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'test/support/regex-inventory.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test' },
    maxBuffer: 64 * 1024 * 1024,
  });
  inventory = JSON.parse(stdout) as Inventory;
}, 120_000);

const has = (predicate: (regex: FoundRegex) => boolean) => inventory.regexes.some(predicate);

describe('the inventory of regexes', () => {
  it('finds every kind: literals, patterns built at run time, exports, schema patterns and formats', () => {
    expect(inventory.files).toBeGreaterThan(150);
    expect(inventory.regexes.length).toBeGreaterThan(200);
    // A literal (log redaction's query parameter rule).
    expect(has((r) => r.source.startsWith('([?&])') && r.origins.some((o) => o.startsWith('src/log-redaction.ts:') && o.endsWith('(literal)')))).toBe(true);
    // Built at run time from a template (a join key's shape).
    expect(has((r) => r.source.startsWith('^platform_jk_') && r.origins.some((o) => o.startsWith('src/modules/devices/join-keys.ts:') && o.endsWith('(built)')))).toBe(true);
    // A schema pattern as ajv compiles it (the PKCE challenge), and a path matcher of the router.
    expect(has((r) => r.source === '^[A-Za-z0-9_-]{43}$' && r.flags === 'u')).toBe(true);
    expect(has((r) => r.source.includes('\\/projects\\/v1\\/') && r.origins.some((o) => o.includes('through a library')))).toBe(true);
    expect(has((r) => r.origins.some((o) => o.startsWith('format email')))).toBe(true);
  });

  it('saw every run-time RegExp(...) call site of the code build its regex (none hides inside a request)', () => {
    expect(inventory.dynamicSites.length).toBeGreaterThan(0);
    const unseen = inventory.dynamicSites.filter((site) => !inventory.observedSites.includes(site));
    // Build such a regex when its module loads (a module constant), so that it is collected here.
    expect(unseen).toEqual([]);
  });
});

describe('the ReDoS checker', () => {
  it(
    'finds no regex whose matching time grows faster than its input',
    async () => {
      const verdicts: { regex: FoundRegex; status: string; detail: string }[] = [];
      const queue = [...inventory.regexes];
      const worker = async () => {
        for (let regex = queue.shift(); regex; regex = queue.shift()) {
          // `d` (match indices) changes what a match reports, not how it is found; recheck does not take it.
          const flags = regex.flags.replace('d', '');
          // A fixed seed; but the fuzzing checker's search also depends on its time limits, so on a
          // loaded machine it can come back with a string that only its own interpreter finds slow.
          let diagnostics = await check(regex.source, flags, { timeout: 60_000, randomSeed: 23 });
          // The automaton checker decides exactly (no search, no clock) every regex it can take
          // (no back-references); a 'safe' from it settles what the fuzzing search suspected.
          if (diagnostics.status === 'vulnerable' && diagnostics.checker === 'fuzz') {
            const exact = await check(regex.source, flags, { timeout: 60_000, checker: 'automaton' });
            if (exact.status === 'safe') diagnostics = exact;
          }
          const detail = diagnostics.status === 'vulnerable' ? `${diagnostics.complexity.summary}, attack ${diagnostics.attack.pattern.slice(0, 120)}` : diagnostics.status === 'unknown' ? JSON.stringify(diagnostics.error) : '';
          verdicts.push({ regex, status: diagnostics.status, detail });
        }
      };
      await Promise.all([worker(), worker()]);
      expect(verdicts).toHaveLength(inventory.regexes.length);
      const failing = verdicts.filter((v) => v.status !== 'safe');
      expect(failing.map((v) => `/${v.regex.source}/${v.regex.flags} is ${v.status} (${v.detail}) at ${v.regex.origins.join(', ')}`)).toEqual([]);
    },
    600_000,
  );
});
