import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

const campaign = 'test/reliability/campaign.int.test.ts';
/** The benchmark's PostgreSQL peers: a benchmark's own check, run with the benchmarks (`vitest.bench.config.ts`). */
export const peerTests = ['test/bench/peer.int.test.ts'];

/** The unit tests: no broker, no service process of their own. Mutation testing runs these alone. */
export const unitTests = {
  include: ['test/**/*.unit.test.ts'],
  setupFiles: ['test/helpers/no-process-warnings.ts'],
  // Property tests and spawned processes take seconds on a loaded 2-core machine: a bound
  // on time here only measures the machine (figures belong in bench/).
  testTimeout: 60_000,
};

/**
 * The files that wait longest (broker outages, rebuilds, the campaign's minutes), longest first:
 * started first, they run beside the many short files instead of after them. Without this list a
 * fresh clone has no recorded durations and vitest orders files by size.
 */
const longestFirst = [
  campaign,
  'test/reliability/outage.int.test.ts',
  'test/operations/rebuild.int.test.ts',
  'test/reliability/projector-faults.int.test.ts',
  'test/bench/bench.int.test.ts',
  'test/reliability/worker-stress.int.test.ts',
  'test/reliability/crash.int.test.ts',
  'test/operations/version-candidate.int.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = longestFirst.findIndex((file) => spec.moduleId.endsWith(file));
      return at < 0 ? longestFirst.length : at;
    };
    // a stable sort: the files off the list keep vitest's own order
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // Test files at once. Vitest's default on two cores is one: most files wait on brokers,
    // timers and service processes, and four at once finish the suite in half the time.
    maxWorkers: Number(process.env['TEST_WORKERS'] ?? 4),
    sequence: { sequencer: LongestFirst },
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
          exclude: [campaign, ...peerTests],
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
        // The fault campaign runs a broker and replicas of its own, its seeds at the same time, beside
        // the other files: its time bounds (a revocation within 5 s) hold there with room to spare
        // (the slowest revocation beside them: 599 ms in six runs).
        test: {
          name: 'campaign',
          include: [campaign],
          globalSetup: ['test/helpers/built-service.ts'],
          setupFiles: ['test/helpers/no-process-warnings.ts', 'test/helpers/service-from-dist.ts'],
          testTimeout: 600_000,
          pool: 'forks',
          sequence: { groupOrder: 0 },
        },
      },
    ],
  },
});
