import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/** What src/ never imports, whatever the folder. */
const srcOutside = ['tools', 'test', 'bench', 'scripts'];

// OpenTelemetry is loaded only when tracing is on: one module imports it, and only by import().
const otelLoadedLazily = [
  { group: ['@opentelemetry/*'], message: 'only src/tracing/otel.ts imports OpenTelemetry' },
  {
    regex: '(^|/)tracing/otel\\.js$',
    message: 'load tracing/otel.ts with startTracing (tracing/tracing.ts), never statically',
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'coverage/**',
      '.kafka-local/**',
      'dist/**',
      'reports/**',
      '.stryker-tmp/**',
      // openapi-typescript's output, compared with a fresh generation by its test
      'test/http/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
    },
  },
  // Dependencies point one way (README, "Layout"): schemas <- projections <- src <- tools <- test, bench
  // (test/ may import bench/: its smoke test runs the benchmarks in miniature), and inside src/ as
  // well: kafka <- read-model <- projector <- lifecycle <- service; http reads the model and the
  // lifecycle's health, never a projector or the broker. kafkajs is imported by its adapter only
  // (kafka/kafkajs-client.ts), better-sqlite3 by the read-model store only, and a projection touches no
  // Node.js API.
  ...boundaryRules([
    {
      files: ['schemas/**/*.ts'],
      folders: ['projections', 'src', 'tools', 'test', 'bench', 'scripts'],
      node: true,
    },
    { files: ['projections/**/*.ts'], folders: ['src', 'tools', 'test', 'bench', 'scripts'], node: true },
    {
      files: ['src/**/*.ts'],
      folders: srcOutside,
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    // the one module that imports OpenTelemetry (loaded by import() when tracing is on)
    {
      files: ['src/tracing/otel.ts'],
      folders: [...srcOutside, 'projector', 'lifecycle', 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
    },
    {
      files: ['src/kafka/**/*.ts'],
      folders: [...srcOutside, 'read-model', 'projector', 'keys', 'lifecycle', 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/kafka/kafkajs-client.ts'],
      folders: [...srcOutside, 'read-model', 'projector', 'keys', 'lifecycle', 'http', 'cli'],
      packages: ['better-sqlite3'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/read-model/**/*.ts'],
      folders: [...srcOutside, 'projector', 'keys', 'lifecycle', 'http', 'cli'],
      packages: ['kafkajs'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/projector/**/*.ts'],
      folders: [...srcOutside, 'keys', 'lifecycle', 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/keys/**/*.ts'],
      folders: [...srcOutside, 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/lifecycle/**/*.ts'],
      folders: [...srcOutside, 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    {
      files: ['src/http/**/*.ts'],
      folders: [...srcOutside, 'projector', 'kafka', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    { files: ['tools/**/*.ts', 'scripts/**/*.ts'], folders: ['test', 'bench'] },
  ]),
  {
    // No import cycle anywhere, between files or (with the layers above) between folders.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // Tests index into fixtures they just built; a failed assertion is the better error there.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    files: ['eslint.config.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { process: 'readonly' } },
  },
  {
    // The Node.js check runs before a supported Node is known: CommonJS in the oldest syntax.
    files: ['**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      ecmaVersion: 5,
      sourceType: 'commonjs',
      globals: { process: 'readonly', require: 'readonly', module: 'readonly', __dirname: 'readonly' },
    },
    rules: { 'no-var': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
);

/**
 * One `no-restricted-imports` rule per group of files: imports of the folders (`folders`), the
 * packages (`packages`) or Node.js's own modules (`node`) it must not depend on fail lint. A later
 * group replaces an earlier one for the files both match, so each states all of its limits.
 */
function boundaryRules(groups) {
  return groups.map(({ files, folders, packages = [], node = false, extra = [] }) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: packages.map((name) => ({
            name,
            message: `${name} is imported in one place only (README, "Layout")`,
          })),
          patterns: [
            ...folders.map((folder) => ({
              regex: `^(\\.\\./)+${folder}/`,
              message: `this folder may not import ${folder}/ (README, "Layout")`,
            })),
            ...(node
              ? [
                  {
                    regex: '^node:',
                    message: 'a projection or schema touches no Node.js API (README, "Layout")',
                  },
                ]
              : []),
            ...extra,
          ],
        },
      ],
    },
  }));
}
