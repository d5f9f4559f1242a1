import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

// Module boundaries (shared STYLE.md): apps use contracts, adapters and utils; adapters only
// utils; contracts nothing internal; utils only utils; no app imports an app.

/**
 * `no-restricted-syntax` entries refusing a module, by a regex over its name, where the import
 * rules do not look: `import('…')` and `require('…')`.
 */
const refuseDynamic = (regex, message) => [
  { selector: `ImportExpression[source.value=${regex}]`, message },
  { selector: `CallExpression[callee.name='require'][arguments.0.value=${regex}]`, message },
];
const TESTING_ONLY = 'test code only: services and tools must not import @sluice/testing';
const CONTRACTS_PURE = 'libs/contracts imports nothing but avsc and its own files (no Kafka, DuckDB, HTTP or file-system library).';

export default [
  { ignores: ['**/node_modules/**', '**/dist/**', '**/tmp/**', '**/*.js', '**/*.cjs', '**/*.mjs', '.nx/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          // type:testing (libs/testing) is for test code only; the rule below keeps it out of src/.
          depConstraints: [
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:contracts', 'type:adapter', 'type:util', 'type:testing'] },
            { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:util', 'type:testing'] },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:testing'] },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util', 'type:testing'] },
            { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['type:contracts', 'type:adapter', 'type:util', 'type:testing'] },
            { sourceTag: 'type:testing', onlyDependOnLibsWithTags: [] },
          ],
        },
      ],
    },
  },
  {
    // A skipped, pending or focused test never reaches CI: a test that should not run is
    // deleted, or fails with its reason (tools/test-all.sh counts what ran).
    files: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['describe', 'it', 'test'].flatMap((object) =>
          ['skip', 'only', 'todo', 'failing'].map((property) => ({ object, property, message: `${object}.${property} skips tests silently or focuses a run` })),
        ),
      ],
      'no-restricted-globals': ['error', ...['xit', 'xtest', 'xdescribe', 'fit', 'fdescribe'].map((name) => ({ name, message: `${name} skips tests silently or focuses a run` }))],
    },
  },
  {
    // Test-support code (the test services' settings) never ships: no service or tool source
    // imports it, only tests and benchmarks' test helpers.
    // The one exception is the local stack the benchmarks and chaos scenarios run: it takes its
    // services' ports from freePort, as the tests do.
    files: ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts', 'tools/src/**/*.ts'],
    ignores: ['**/*.test.ts', 'libs/testing/**', 'tools/src/bench/stack.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: '@sluice/testing', message: TESTING_ONLY }] }],
      'no-restricted-syntax': ['error', ...refuseDynamic('/^@sluice\\u002Ftesting$/', TESTING_ONLY)],
    },
  },
  {
    // libs/contracts is pure data and functions (issue 3): besides its own files it may import
    // only avsc, so no Kafka, DuckDB, HTTP, file-system or other library can creep in. Tests may
    // read files.
    files: ['libs/contracts/src/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*.type-test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(?!avsc$|\\.{1,2}/)',
              message: CONTRACTS_PURE,
            },
          ],
        },
      ],
      // Replaces the block above's setting for these files, so it refuses @sluice/testing too.
      'no-restricted-syntax': ['error', ...refuseDynamic('/^(?!avsc$|\\.{1,2}\\u002F)/', CONTRACTS_PURE)],
    },
  },
];
