import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

/** Code that runs only in development, tests and CI (the chart checks and the helm download among it): it may import devDependencies. */
const DEVELOPMENT_FILES = ['test/**', 'examples/**', 'scripts/dev/**', 'scripts/chart.mjs', 'scripts/helm.mjs', '*.config.js', '*.config.mjs'];

/** The feature modules (src/modules/<name>): each its own room, with a store only it may import. */
const MODULES = readdirSync(new URL('./src/modules/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

/**
 * The layers, as import-x/no-restricted-paths zones: `target` may not import `from`. Type-only
 * imports count as well: a type names another layer's shape and ties the two as surely as a
 * value does. Each inversion these walls needed is an interface declared by the layer that uses
 * it and wired in src/app.ts (the composition root, which may import anything).
 * scripts/dev/import-graph.mjs draws the same graph and counts arrows against the same walls.
 */
const LAYER_ZONES = [
  {
    target: 'src/http',
    from: 'src/modules',
    message:
      'The HTTP layer knows no module: it declares what it needs (e.g. TenantLookup in src/http/tenancy.ts) and src/app.ts wires a module service in; shared record shapes live in src/domain/.',
  },
  {
    target: 'src/auth',
    from: 'src/modules',
    message:
      'Authentication knows no module: the token resolvers read through the interfaces of src/auth/lookups.ts, which src/app.ts wires with the module services; token prefixes live in src/auth/token-formats.ts.',
  },
  {
    target: 'adapters',
    from: ['src/http', 'src/modules'],
    message:
      'An adapter implements a port declared outside the modules and the HTTP layer (src/identity, src/state, src/mail, src/readiness.ts); it imports neither.',
  },
  {
    target: 'policies',
    from: ['src/http', 'src/modules'],
    message:
      'Policies are rules the modules and routes apply; they import neither (refusals come from src/errors.ts, the policy document is policies/policy-document.ts).',
  },
  {
    target: 'src/modules',
    from: ['src/config.ts', 'src/config'],
    message: 'A module receives its settings from src/app.ts; it does not read the configuration (src/config.ts, src/config/).',
  },
  {
    target: ['src/domain', 'src/identity', 'src/state', 'src/mail', 'src/util', 'src/readiness.ts', 'src/errors.ts', 'src/error-codes.ts'],
    from: ['src/modules', 'src/http', 'src/auth', 'adapters', 'policies'],
    message: 'Shared types and ports sit below every layer that uses them: they import none of those layers.',
  },
  // A module's store is its own: another module that needs its rows declares the methods it uses
  // (e.g. src/modules/teams/ports.ts) and src/app.ts passes the store in. Its entities (record
  // types and table definitions), services, schemas and routes are its public surface: the tables
  // are one database, and stores join across them.
  ...MODULES.map((name) => ({
    target: `src/modules/${name}`,
    from: MODULES.filter((other) => other !== name).map((other) => `src/modules/${other}/store.ts`),
    message: `A module never imports another module's store: declare the rows you need as an interface in src/modules/${name}/ and let src/app.ts pass the store.`,
  })),
];

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
    // Relative imports name the compiled `.js`; the resolver finds the `.ts` beside it.
    settings: { 'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.mts', '.js', '.mjs', '.json', '.node'], extensionAlias: { '.js': ['.ts', '.js'], '.mjs': ['.mts', '.mjs'] } })] },
    rules: {
      'import-x/no-extraneous-dependencies': [
        'error',
        { devDependencies: DEVELOPMENT_FILES, optionalDependencies: false, peerDependencies: false, includeTypes: false },
      ],
    },
  },
  {
    // Rules that read the types (typescript-eslint's project service: tsconfig.json for src/,
    // adapters/, policies/ and test/; a default project for the JavaScript of bin/ and scripts/).
    // Chosen for the bugs they catch, not for style: a promise nobody awaits or handles (an
    // unhandled rejection, or work that races the answer), a promise where a callback's result is
    // ignored (Express, event emitters), `await` on what is not a promise, a `return` of a promise
    // inside `try` that the `catch` never sees, a `throw` of what is not an Error, a switch over a
    // union that misses a member, and casts that change nothing.
    files: ['**/*.ts', '**/*.mts', 'bin/**/*.js', 'scripts/**/*.mjs'],
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['bin/*.js', 'scripts/*.mjs', 'scripts/dev/*.mjs', 'scripts/dev/schema-diff.mts'],
          defaultProject: 'tsconfig.json',
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/return-await': ['error', 'error-handling-correctness-only'],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
    },
  },
  {
    // The layers (LAYER_ZONES above).
    files: ['src/**', 'adapters/**', 'policies/**'],
    rules: { 'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: LAYER_ZONES }] },
  },
  {
    // Sign-in and devices do not import each other: the approval pages live in
    // src/web/device-approval, the token-endpoint helpers both use in src/modules/oauth.
    files: ['src/modules/signin/**', 'src/modules/devices/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '^\\.\\./(signin|devices)/', message: 'Sign-in and devices do not import each other: what both need lives in one place outside both.' },
          ],
        },
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
    files: ['test/**', 'scripts/**', 'bin/**', 'examples/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
