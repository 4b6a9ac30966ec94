/**
 * The benchmarks' own tests (`npm run test:bench`): the PostgreSQL peers of `bench:peer` converge to
 * the service's answers, and the check guarding the benchmark's timings reports one that differs.
 * They follow every change of an answer, so they run with the benchmarks, not in every CI pass.
 */
import { defineConfig } from 'vitest/config';
import { peerTests } from './vitest.config.js';

export default defineConfig({
  test: {
    include: peerTests,
    globalSetup: ['test/helpers/built-service.ts', 'test/helpers/kafka-global-setup.ts'],
    setupFiles: ['test/helpers/no-process-warnings.ts', 'test/helpers/service-from-dist.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
