// Runs the suite-wide checks (test/http/suite-checks.test.ts) after every other test file has
// been handed to a worker, and tells them which files the run holds.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Sequencer from '@jest/test-sequencer';
import { appending, startRun } from './suite-run.mjs';

const BaseSequencer = Sequencer.default ?? Sequencer;
const CHECKS = /suite-checks\.test\.ts$/;

export default class SuiteSequencer extends BaseSequencer {
  async sort(tests) {
    const sorted = await super.sort(tests);
    const checks = sorted.filter((test) => CHECKS.test(test.path));
    const others = sorted.filter((test) => !CHECKS.test(test.path));
    const dir = startRun();
    const file = join(dir, 'expected.json');
    // Adding to a run begun by another invocation: its files are expected too (they have finished).
    const before = appending() && existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : [];
    writeFileSync(file, JSON.stringify([...new Set([...before, ...others.map((test) => test.path)])]));
    return [...others, ...checks];
  }
}
