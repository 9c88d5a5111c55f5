import js from '@eslint/js';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

/** Code that runs only in development, tests and CI (the chart checks and the helm download among it): it may import devDependencies. */
const DEVELOPMENT_FILES = ['test/**', 'scripts/dev/**', 'scripts/chart.mjs', 'scripts/helm.mjs', '*.config.js', '*.config.mjs'];

export default tseslint.config(
  { ignores: ['dist/', 'dist-bench/', 'node_modules/', 'data/', 'coverage/', 'charts/', '.scratch/', '.ci/out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
    },
  },
  {
    // Every package the code imports is declared in package.json: what the service, the command
    // line and the start scripts import at run time under `dependencies`, what only tests and
    // development tools import under `devDependencies`. Type-only imports are erased at build.
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-extraneous-dependencies': [
        'error',
        { devDependencies: DEVELOPMENT_FILES, optionalDependencies: false, peerDependencies: false, includeTypes: false },
      ],
    },
  },
  {
    // Every regular expression is linear in its input: no backtracking that grows with it, no
    // scan that a failed match repeats from each later position. Regexes used through `.source`
    // count too (ignorePartial: false). test/unit/regexes.test.ts runs a ReDoS checker (recheck)
    // over every regex the code builds, those assembled at run time included.
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential', ignoreSticky: false, ignorePartial: false }],
    },
  },
  {
    // Modules receive their settings (src/app.ts builds them from the configuration); the
    // configuration may read a module's word lists to validate values, never the other way.
    files: ['src/modules/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)config(\\.js|/.*)$',
              message: 'A module receives its settings from src/app.ts; it does not read the configuration (src/config.ts, src/config/).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**', 'scripts/**', 'bin/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
