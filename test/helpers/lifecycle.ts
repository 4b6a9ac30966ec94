/** A read-model lifecycle over the in-memory Kafka port with in-process projectors, for fast tests. */
import { pino } from 'pino';
import type { DomainEvent } from '../../schemas/events.js';
import { systemClock } from '../../src/supervision/clock.js';
import { ReadModelLifecycle, type LifecycleOptions } from '../../src/lifecycle/read-model-lifecycle.js';
import type { ServiceState } from '../../src/lifecycle/states.js';
import type { RestartReason } from '../../src/supervision/supervisor.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { keyOf, roleOf } from './events.js';
import { inProcessProjectors } from './in-process-projector.js';
import { MemoryKafka } from './memory-kafka.js';
import { testTopics } from './read-model.js';

export interface LifecycleFixture {
  kafka: MemoryKafka;
  files: ModelFiles;
  lifecycle: ReadModelLifecycle;
  restarts: { projector: 'served' | 'candidate' | 'keys'; reason: RestartReason }[];
  transitions: { from: ServiceState; to: ServiceState; allowed: boolean }[];
  /** publishes events as the contract keys them; `markers` follows each with a transaction marker */
  publish: (events: readonly DomainEvent[], options?: { markers?: boolean }) => void;
  /** measures lag and checks proposals, as the service's timers do */
  tick: () => Promise<void>;
  /** whether the projectors of a file are told to give way to requests now; null: none was started */
  givesWay: (file: string) => boolean | null;
}

export function lifecycleFixture(
  dataDir: string,
  options: Partial<
    Pick<
      LifecycleOptions,
      'readyMaxLag' | 'stallTimeoutMs' | 'candidateGainWindowMs' | 'keysStallMs' | 'catchUp'
    >
  > & {
    beforeBatch?: (file: string) => void | Promise<void>;
    /** the broker of an earlier fixture, to start again on it */
    kafka?: MemoryKafka;
  } = {},
): LifecycleFixture {
  const kafka = options.kafka ?? new MemoryKafka(Object.values(testTopics));
  const files = new ModelFiles(dataDir);
  const restarts: LifecycleFixture['restarts'] = [];
  const transitions: LifecycleFixture['transitions'] = [];
  const logger = pino({ level: 'silent' });
  const giveWayFlags = new Map<string, Int32Array>();
  const startInProcess = inProcessProjectors(kafka, testTopics, logger, options.beforeBatch);
  const lifecycle = new ReadModelLifecycle({
    files,
    topics: testTopics,
    groupId: 'test',
    clock: systemClock,
    logger,
    readyMaxLag: options.readyMaxLag ?? 0,
    stallTimeoutMs: options.stallTimeoutMs ?? 60_000,
    ...(options.candidateGainWindowMs === undefined
      ? {}
      : { candidateGainWindowMs: options.candidateGainWindowMs }),
    backoff: { initialMs: 20, maxMs: 200 },
    strictTransitions: true,
    endOffsets: (topics) => kafka.endOffsets(topics),
    topicRetention: (topics) => kafka.topicRetention(topics),
    keysBackoff: { initialMs: 20, maxMs: 200 },
    ...(options.keysStallMs === undefined ? {} : { keysStallMs: options.keysStallMs }),
    ...(options.catchUp === undefined ? {} : { catchUp: options.catchUp }),
    startProjector: (spec) => {
      giveWayFlags.set(spec.file, spec.giveWay);
      return startInProcess(spec);
    },
    events: {
      restarted: (projector, reason) => restarts.push({ projector, reason }),
      stateChanged: (from, to, allowed) => transitions.push({ from, to, allowed }),
    },
  });
  return {
    kafka,
    files,
    lifecycle,
    restarts,
    transitions,
    publish: (events, { markers = false } = {}) => {
      for (const event of events) {
        const key = keyOf(event);
        const topic = testTopics[roleOf(event)];
        kafka.append(topic, kafka.partitionOf(key), [
          { key, value: JSON.stringify(event) },
          ...(markers ? [{ key: null, value: null, marker: true }] : []),
        ]);
      }
    },
    tick: async () => {
      await lifecycle.checkLag().catch(() => undefined);
      lifecycle.checkProposals();
      await lifecycle.maybeSwitch();
    },
    givesWay: (file) => {
      const flag = giveWayFlags.get(file);
      return flag === undefined ? null : Atomics.load(flag, 0) === 1;
    },
  };
}
