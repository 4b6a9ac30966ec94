import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.unit.test.ts'],
          setupFiles: ['test/helpers/no-process-warnings.ts'],
        },
      },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts', 'test/**/*.e2e.test.ts'],
          globalSetup: ['test/helpers/kafka-global-setup.ts'],
          setupFiles: ['test/helpers/no-process-warnings.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Tests share one broker; files run in parallel against unique topics.
          pool: 'forks',
        },
      },
    ],
  },
});
