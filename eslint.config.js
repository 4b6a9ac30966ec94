import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'coverage/**', '.kafka-local/**', 'dist/**'] },
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
  // Dependencies point one way (README, "Layout"): schemas <- projections <- src <- tools <- test, bench.
  // (test/ may import bench/: its smoke test runs the benchmarks in miniature.)
  ...layerRules([
    { files: ['schemas/**/*.ts'], forbidden: ['projections', 'src', 'tools', 'test', 'bench', 'scripts'] },
    { files: ['projections/**/*.ts'], forbidden: ['src', 'tools', 'test', 'bench', 'scripts'] },
    {
      files: ['src/**/*.ts'],
      forbidden: ['tools', 'test', 'bench', 'scripts'],
      // OpenTelemetry is loaded only when tracing is on: one module imports it, and only by import().
      extra: [
        { group: ['@opentelemetry/*'], message: 'only src/tracing/otel.ts imports OpenTelemetry' },
        {
          regex: '(^|/)tracing/otel\\.js$',
          message: 'load tracing/otel.ts with startTracing (tracing/tracing.ts), never statically',
        },
      ],
    },
    { files: ['src/tracing/otel.ts'], forbidden: ['tools', 'test', 'bench', 'scripts'] },
    { files: ['tools/**/*.ts', 'scripts/**/*.ts'], forbidden: ['test', 'bench'] },
  ]),
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

/** One `no-restricted-imports` rule per layer: imports of the folders it must not depend on fail lint. */
function layerRules(layers) {
  return layers.map(({ files, forbidden, extra = [] }) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...forbidden.map((folder) => ({
              regex: `^(\\.\\./)+${folder}/`,
              message: `this folder may not import ${folder}/ (README, "Layout")`,
            })),
            ...extra,
          ],
        },
      ],
    },
  }));
}
