/** Prometheus metrics of one service process (prom-client), served on the admin listener. */
import { statSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './request-metrics.js';
import type { LifecycleEvents } from './lifecycle/read-model-lifecycle.js';
import { serviceStates } from './lifecycle/states.js';

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly partitionLag = new Gauge({
    name: 'orders_read_model_partition_lag',
    help: 'Messages between the partition end offset and the position stored with the served model',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly partitionOffset = new Gauge({
    name: 'orders_read_model_partition_next_offset',
    help: 'Position per partition as stored with the served model (the next offset to read)',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly logStart = new Gauge({
    name: 'orders_read_model_partition_log_start_offset',
    help: "Where each partition's log starts on the broker; above 0, its first events are gone",
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly historyLost = new Gauge({
    name: 'orders_read_model_partition_history_lost',
    help: "1 when the partition's log no longer starts where a build must read it (no acceptance covers it): a rebuild, a version change or a new replica would be refused",
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly topicForgets = new Gauge({
    name: 'orders_read_model_topic_forgets_events',
    help: "1 when the topic's settings delete or compact events (retention.ms, retention.bytes, cleanup.policy); a rebuild needs every event",
    labelNames: ['topic'] as const,
    registers: [this.registry],
  });
  readonly eventsApplied = new Counter({
    name: 'orders_read_model_events_applied_total',
    help: 'Events projected, by type (including duplicates and stale facts that changed nothing)',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'orders_read_model_dead_letters_total',
    help: 'Messages recorded as dead letters, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly batchApplySeconds = new Histogram({
    name: 'orders_read_model_batch_apply_seconds',
    help: 'Time to apply one Kafka batch and its offset in one SQLite transaction',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });
  readonly rebuildProgress = new Gauge({
    name: 'orders_read_model_rebuild_progress_ratio',
    help: 'Progress of the running rebuild (0–1); 1 when none runs',
    registers: [this.registry],
  });
  readonly consumerRestarts = new Counter({
    name: 'orders_read_model_consumer_restarts_total',
    help: 'Projector restarts by its supervisor, by projector (served, candidate) and reason (start_failed, failed, stalled)',
    labelNames: ['projector', 'reason'] as const,
    registers: [this.registry],
  });
  readonly serviceState = new Gauge({
    name: 'orders_read_model_state',
    help: 'The service state: 1 for the current one, 0 for the others',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly invalidTransitions = new Counter({
    name: 'orders_read_model_invalid_state_transitions_total',
    help: 'State changes the lifecycle table does not allow (a bug if ever above 0)',
    registers: [this.registry],
  });
  readonly unreadableBatches = new Counter({
    name: 'orders_read_model_unreadable_batches_total',
    help: 'Record batches the Kafka client could not read (a codec it lacks, corrupt data), by partition; the partition waits and is retried with backoff',
    labelNames: ['topic', 'partition'] as const,
    registers: [this.registry],
  });
  readonly switches = new Counter({
    name: 'orders_read_model_switches_total',
    help: 'Switches of the served model to a caught-up candidate',
    registers: [this.registry],
  });
  /** this thread's API request metrics; other request threads keep their own (`request-metrics.ts`) */
  readonly requests = new RequestMetrics();
  get httpDuration(): RequestMetrics['httpDuration'] {
    return this.requests.httpDuration;
  }

  constructor(modelFile: () => string | null) {
    collectDefaultMetrics({ register: this.registry });
    const registry = this.registry;
    new Gauge({
      name: 'orders_read_model_sqlite_file_bytes',
      help: 'Size of the live SQLite model, main file plus WAL',
      registers: [registry],
      collect() {
        const file = modelFile();
        if (file === null) return;
        let bytes = 0;
        for (const suffix of ['', '-wal']) {
          try {
            bytes += statSync(file + suffix).size;
          } catch {
            // no WAL file right now
          }
        }
        this.set(bytes);
      },
    });
    this.rebuildProgress.set(1);
    for (const state of serviceStates) this.serviceState.set({ state }, state === 'starting' ? 1 : 0);
  }

  /** The gauge of requests held for a change (`Prefer: wait`), over every request thread. */
  countHeld(held: () => number): void {
    new Gauge({
      name: 'orders_read_model_http_waiting_requests',
      help: 'Requests held until their answer changes (Prefer: wait), on every request thread',
      registers: [this.registry],
      collect() {
        this.set(held());
      },
    });
  }

  /** The lifecycle's reports as metrics. */
  lifecycleEvents(): LifecycleEvents {
    return {
      batchApplied: (outcome) => {
        for (const [type, n] of Object.entries(outcome.appliedByType)) this.eventsApplied.inc({ type }, n);
        for (const [reason, n] of Object.entries(outcome.deadLettersByReason))
          this.deadLetters.inc({ reason }, n);
        this.batchApplySeconds.observe(outcome.durationMs / 1000);
      },
      restarted: (projector, reason) => this.consumerRestarts.inc({ projector, reason }),
      lagMeasured: (partitions) => {
        for (const p of partitions) {
          const labels = { topic: p.topic, partition: String(p.partition) };
          this.partitionLag.set(labels, p.lag);
          this.partitionOffset.set(labels, p.nextOffset);
        }
      },
      candidateProgress: (ratio) => this.rebuildProgress.set(ratio),
      logChecked: (report) => {
        const forgetful = new Set(report.forgetful.map((t) => t.topic));
        const lost = new Set(report.lost.map((gap) => `${gap.partition}:${gap.topic}`));
        for (const p of report.starts) {
          const labels = { topic: p.topic, partition: String(p.partition) };
          this.logStart.set(labels, p.start);
          this.historyLost.set(labels, lost.has(`${p.partition}:${p.topic}`) ? 1 : 0);
          this.topicForgets.set({ topic: p.topic }, forgetful.has(p.topic) ? 1 : 0);
        }
      },
      unreadable: (batch) =>
        this.unreadableBatches.inc({ topic: batch.topic, partition: String(batch.partition) }),
      switched: () => {
        this.switches.inc();
        this.rebuildProgress.set(1);
      },
      stateChanged: (from, to, allowed) => {
        // A refused transition leaves the state where it was.
        if (!allowed) {
          this.invalidTransitions.inc();
          return;
        }
        this.serviceState.set({ state: from }, 0);
        this.serviceState.set({ state: to }, 1);
      },
    };
  }
}
