import { defineConfig } from 'vitest/config';

const campaign = 'test/reliability/campaign.int.test.ts';

/** The unit tests: no broker, no service process of their own. Mutation testing runs these alone. */
export const unitTests = {
  include: ['test/**/*.unit.test.ts'],
  setupFiles: ['test/helpers/no-process-warnings.ts'],
  // Property tests and spawned processes take seconds on a loaded 2-core machine: a bound
  // on time here only measures the machine (figures belong in bench/).
  testTimeout: 60_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          ...unitTests,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts', 'test/**/*.e2e.test.ts'],
          exclude: [campaign],
          globalSetup: ['test/helpers/built-service.ts', 'test/helpers/kafka-global-setup.ts'],
          setupFiles: ['test/helpers/no-process-warnings.ts', 'test/helpers/service-from-dist.ts'],
          // Each test bounds its own waits; the whole test is only kept from hanging for good (at a
          // load average of 30, a broker halted and resumed twice took 156 s end to end).
          testTimeout: 300_000,
          hookTimeout: 120_000,
          // Tests share one broker; files run in parallel against unique topics.
          pool: 'forks',
          sequence: { groupOrder: 0 },
        },
      },
      {
        // The fault campaign runs a broker and replicas of its own and holds them to time bounds
        // (a revocation within 5 s): it runs once every other file is done, alone on the machine.
        test: {
          name: 'campaign',
          include: [campaign],
          globalSetup: ['test/helpers/built-service.ts'],
          setupFiles: ['test/helpers/no-process-warnings.ts', 'test/helpers/service-from-dist.ts'],
          testTimeout: 600_000,
          pool: 'forks',
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
