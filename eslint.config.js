import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
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
    // what the keys store and the lifecycle both run on: a supervisor, a clock, lag
    {
      files: ['src/supervision/**/*.ts'],
      folders: [...srcOutside, 'read-model', 'keys', 'lifecycle', 'http', 'cli'],
      packages: ['kafkajs', 'better-sqlite3'],
      extra: otelLoadedLazily,
    },
    // the lifecycle runs the keys store through the keys' port (KeysHost), never the other way
    {
      files: ['src/keys/**/*.ts'],
      folders: [...srcOutside, 'lifecycle', 'http', 'cli'],
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
    // Nor between the folders of src/: no import of a folder that imports this one back, directly
    // or through others (a new cycle fails here even where no folder rule above names it).
    files: ['src/**/*.ts'],
    plugins: { local: { rules: { 'no-folder-cycle': noFolderCycle(srcFolderGraph()) } } },
    rules: { 'local/no-folder-cycle': 'error' },
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

/**
 * The unit of src/ a file belongs to: its folder below src/ (`keys`, `lifecycle`), or for a file
 * directly in src/ the file itself (`config.ts`); null outside src/.
 */
function srcUnitOf(file) {
  const path = relative(join(import.meta.dirname, 'src'), file);
  if (path.startsWith('..') || path === '') return null;
  return path.split(sep)[0];
}

/** The relative imports of a source text: static, re-exports and import(). */
function specifiersOf(text) {
  const found = [];
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.[^'"]+)['"]/gm;
  for (const match of text.matchAll(pattern)) found.push(match[1]);
  return found;
}

/** Which units of src/ each unit imports, read from the files on disk once per lint run. */
function srcFolderGraph() {
  const graph = new Map();
  const root = join(import.meta.dirname, 'src');
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !/\.(ts|mts)$/.test(entry.name)) continue;
    const file = join(entry.parentPath, entry.name);
    const from = srcUnitOf(file);
    for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
      const to = srcUnitOf(resolve(dirname(file), specifier).replace(/\.js$/, '.ts'));
      if (to === null || to === from) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from).add(to);
    }
  }
  return graph;
}

/** True when `to` imports `from`, directly or through other units. */
function reaches(graph, to, from) {
  const seen = new Set([to]);
  const queue = [to];
  while (queue.length > 0) {
    for (const next of graph.get(queue.shift()) ?? []) {
      if (next === from) return true;
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return false;
}

/** Fails an import of a unit of src/ that imports the importing file's unit back. */
function noFolderCycle(graph) {
  return {
    meta: { type: 'problem', schema: [] },
    create(context) {
      const from = srcUnitOf(context.filename);
      const check = (node) => {
        const specifier = node.source?.value;
        if (from === null || typeof specifier !== 'string' || !specifier.startsWith('.')) return;
        const to = srcUnitOf(resolve(dirname(context.filename), specifier).replace(/\.js$/, '.ts'));
        if (to === null || to === from || !reaches(graph, to, from)) return;
        context.report({
          node: node.source,
          message: `src/${from} imports src/${to}, which imports src/${from} back: make the dependency one-way (docs/development.md, "Lint boundaries")`,
        });
      };
      return {
        ImportDeclaration: check,
        ExportNamedDeclaration: check,
        ExportAllDeclaration: check,
        ImportExpression: check,
      };
    },
  };
}
