/**
 * Test projects:
 * - unit: rules with fake stores, no I/O.
 * - http: the real app in process (supertest), a fresh SQLite database per test file; with it the
 *   admin command line's suites (test/cli), run in process against the same kind of database.
 * - services: the same http and cli suites again on MariaDB (a fresh database per test file), plus the
 *   suites that need MariaDB or Redis themselves. It fails, never skips, when they are missing.
 * - browser: flows a person goes through in headless Chromium (/usr/bin/chromium), one at a time.
 * - deploy: the container image's Dockerfile and the Helm chart, rendered and linted by a real helm
 *   (scripts/helm.mjs), every object checked against the Kubernetes schemas.
 */
const common = {
  testEnvironment: 'node',
  // Every test file records what it answered, minted and logged for the suite-wide checks.
  setupFilesAfterEnv: ['<rootDir>/test/support/suite-setup.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' }, sourceMaps: 'inline' },
    ],
  },
};

export default {
  // A global option: jest ignores testTimeout inside a project.
  testTimeout: 30_000,
  // test/http/suite-checks.test.ts runs last and reads what every other file recorded.
  testSequencer: '<rootDir>/test/support/suite-sequencer.mjs',
  reporters: ['default', '<rootDir>/test/support/suite-reporter.mjs'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'http', testMatch: ['<rootDir>/test/http/**/*.test.ts', '<rootDir>/test/cli/**/*.test.ts'] },
    {
      ...common,
      displayName: 'services',
      testMatch: ['<rootDir>/test/http/**/*.test.ts', '<rootDir>/test/cli/**/*.test.ts', '<rootDir>/test/services/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/services-check.mjs',
      setupFiles: ['<rootDir>/test/support/services-env.mjs'],
    },
    { ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'] },
    { ...common, displayName: 'deploy', testMatch: ['<rootDir>/test/deploy/**/*.test.ts'] },
  ],
};
