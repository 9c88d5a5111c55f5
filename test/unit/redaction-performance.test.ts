import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { RedactionBudget, RedactionBudgetExceeded, redactSteps, type Steps } from '../../src/modules/ingest/redaction.js';
import { TEXT_RULES } from '../../src/modules/ingest/redaction-rules.js';
import { isMemoryRead, memoryReadRule } from '../../policies/memory-reads.js';

/**
 * Ingest redaction is linear and keeps within its budget (INGEST_REDACTION_BUDGET_MS, 2,000 ms by
 * default): each worst case known, at the largest size an envelope allows (strings of 1 MiB,
 * INGEST_MAX_STRING_LENGTH; 250,000 keys, INGEST_MAX_KEYS; nesting to JSON_MAX_DEPTH), and inputs
 * built from every text rule's own hints, must finish well within the budget, and no single step
 * (the work between two chances to give the event loop back) may take longer than 250 ms.
 *
 * Times are the CPU time of this process (a busy machine slows the clock on the wall, not the
 * work), the best of three runs (a collection of a heap other test files left behind, or a burst
 * of contention, lands in one run, not in all three; super-linear work is in every run), and the
 * bounds are generous: they guard against super-linear work (seconds to hours on a megabyte), not
 * against a slow machine. The figures on an idle machine are far lower (`npm run bench -- --only
 * redaction`).
 */

const MB = 1 << 20;
const BUDGET_MS = 2_000;
const STEP_MS = 250;
const fill = (unit: string, size = MB): string => unit.repeat(Math.ceil(size / unit.length)).slice(0, size);

/** CPU time of this process, in milliseconds. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Runs steps as the service does (slices, the event loop given back between them); answers the CPU time spent and the longest step. */
async function measure<T>(steps: Steps<T>): Promise<{ spent: number; longest: number }> {
  let longest = 0;
  let spent = 0;
  const timed = (function* () {
    for (;;) {
      const started = cpuMs();
      const step = steps.next();
      const took = cpuMs() - started;
      spent += took;
      longest = Math.max(longest, took);
      if (step.done) return step.value;
      yield;
    }
  })();
  await new RedactionBudget(60_000).run(timed);
  return { spent, longest };
}

const event = (data: unknown) => ({ seq: 1, id: 'e1', at: '2026-01-01T00:00:00.000Z', kind: 'tool.called', data });

const WORST: [string, () => unknown][] = [
  ['1 MiB of "cookie:" (quadratic before)', () => event({ s: fill('cookie:') })],
  ['1 MiB of "cookie: a" lines without pairs', () => event({ s: fill('cookie: a small file ') })],
  ['1 MiB of refused Authorization values', () => event({ s: fill('Authorization:<x>') })],
  ['1 MiB of "password="', () => event({ s: fill('password=') })],
  ['1 MiB of "token: " (every one replaced)', () => event({ s: fill('token: ') })],
  ['1 MiB of quoted names with kept values', () => event({ s: fill('"token": "a b ') })],
  ['1 MiB of escaped quotes at every level', () => event({ s: fill('\\"token\\": \\\\\\"a \\\\\\\\\\\\\\"b ') })],
  ['1 MiB of user flags', () => event({ s: fill('-u a ') })],
  ['1 MiB of open XML names', () => event({ s: fill('<password>') })],
  ['1 MiB of unbalanced brackets', () => event({ s: `password: ${fill('{[')}` })],
  ['1 MiB of commas after a name', () => event({ s: `password=${fill(',')}` })],
  ['1 MiB of URL credentials (every one replaced)', () => event({ s: fill('a://b:c@') })],
  ['1 MiB of JWT look-alikes', () => event({ s: fill('eyJhbGci.') })],
  ['1 MiB of one name run', () => event({ s: `${fill('a')}=x` })],
  ['a 1 MiB JSON string of secrets', () => event({ s: JSON.stringify(Array.from({ length: 20_000 }, (_, i) => ({ a: 'x'.repeat(30), password: `p${i}` }))) })],
  ['JSON in JSON in JSON, 1 MiB', () => event({ s: JSON.stringify(JSON.stringify(JSON.stringify(Array.from({ length: 8_000 }, (_, i) => ({ token: `aB3${i}xyzXYZ123`, n: i }))))) })],
  ['four 1 MiB strings of "cookie:" in one envelope (4 MiB)', () => [1, 2, 3, 4].map(() => event({ s: fill('cookie:') }))],
  ['250,000 keys', () => event(Object.fromEntries(Array.from({ length: 250_000 }, (_, i) => [`key_${i}_token`, `v${i}`])))],
  ['250,000 array items', () => event({ list: Array.from({ length: 250_000 }, (_, i) => (i % 2 === 0 ? 'password' : `v${i}`)) })],
  [
    'nesting to the depth limit, 4,000 times',
    () =>
      Array.from({ length: 4_000 }, (_, i) => {
        let value: unknown = { password: `p${i}`, note: 'cookie: a' };
        for (let level = 0; level < 31; level++) value = level % 2 === 0 ? { password: value } : [value];
        return event(value);
      }),
  ],
];

/** The best of three runs: the least work spent, and the least of the runs' longest steps. */
async function bestOf<T>(input: T): Promise<{ spent: number; longest: number }> {
  const runs = [await measure(redactSteps(input)), await measure(redactSteps(input)), await measure(redactSteps(input))];
  return { spent: Math.min(...runs.map((run) => run.spent)), longest: Math.min(...runs.map((run) => run.longest)) };
}

describe('worst cases against the budget', () => {
  it.each(WORST)('%s', async (_name, build) => {
    const { spent, longest } = await bestOf(build());
    expect(spent).toBeLessThan(BUDGET_MS);
    expect(longest).toBeLessThan(STEP_MS);
  });

  it('stops past its budget with RedactionBudgetExceeded, after giving the event loop back in slices', async () => {
    const budget = new RedactionBudget(40, 5);
    let turns = 0;
    const ticker = setInterval(() => (turns += 1), 0);
    try {
      const envelope = Array.from({ length: 200 }, (_, i) => event({ s: fill(`password=${i} cookie: a `, 64 * 1024) }));
      await expect(budget.run(redactSteps(envelope))).rejects.toBeInstanceOf(RedactionBudgetExceeded);
    } finally {
      clearInterval(ticker);
    }
    expect(budget.spent).toBeGreaterThan(40);
    expect(turns).toBeGreaterThan(0);
  });
});

describe('every text rule on inputs built from its own hints', () => {
  // For each rule: its hints (and their upper-case forms) repeated, glued to runs of the
  // characters its pattern consumes, to 256 KiB; a linear rule stays far within the budget.
  // CPU time is the process's (GC threads included), so a busy machine inflates it: each input is
  // also held to 30 times plain text of the same size measured just before it, on the same
  // machine at the same moment. A rule that backtracks on 256 KiB takes minutes, not 30 times as
  // long, and fails either way.
  const pieces = fc.constantFrom('a', 'A', '0', '_', '-', '.', '=', ':', '/', '+', ' ', '"', '\\', '@', '\n', 'aB3', '==', '://', '-----');
  it.each(TEXT_RULES.map((rule) => [rule.kind, rule] as const))('%s', async (_kind, rule) => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...rule.hints, ...rule.hints.map((hint) => hint.toUpperCase())), fc.array(pieces, { minLength: 1, maxLength: 6 }), async (hint, glue) => {
        const unit = `${hint}${glue.join('')}`;
        const plain = await bestOf({ s: fill('plain text ', 256 * 1024) });
        const { spent, longest } = await bestOf({ s: fill(unit, 256 * 1024) });
        expect(spent).toBeLessThan(Math.max(BUDGET_MS / 2, 30 * plain.spent));
        expect(longest).toBeLessThan(Math.max(STEP_MS, 30 * plain.longest));
      }),
      { numRuns: 3 },
    );
  });
});

describe('memory-read classification', () => {
  it('is linear in the action: 100,000 actions of the longest size in well under a second', () => {
    const rule = memoryReadRule({ include: ['*recall*'], exclude: ['kb.*'] });
    const started = performance.now();
    for (let i = 0; i < 100_000; i++) {
      const action = `${'memory'.repeat(16)}${i}`.slice(0, 100);
      rule(action);
      isMemoryRead(`${'A'.repeat(99)}${i % 10}`);
    }
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});
