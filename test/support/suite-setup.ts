import { afterAll, expect } from '@jest/globals';
import { flush } from './suite-record.js';

// Every test file leaves what it saw for the suite-wide checks (test/http/suite-checks.test.ts).
afterAll(() => {
  const { testPath } = expect.getState();
  if (testPath) flush(testPath);
});
