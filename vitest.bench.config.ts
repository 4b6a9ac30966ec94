/**
 * The benchmarks' own test (`npm run test:bench`, run by hand before `bench:peer`): the PostgreSQL
 * peers converge to the service's answers. It follows every change of an answer, so it runs with the
 * benchmarks, not in every CI pass.
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
