// Marks each test file of the run as finished (passed, failed or unable to run), so the
// suite-wide checks know when every other file is done.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyOf, runDir } from './suite-run.mjs';

export default class SuiteReporter {
  onTestFileResult(test, result) {
    const dir = runDir();
    if (!dir) return;
    writeFileSync(join(dir, 'finished', `${keyOf(test.path)}.json`), JSON.stringify({ path: test.path, failedToRun: Boolean(result.testExecError) }));
  }
}
