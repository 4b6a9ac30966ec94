/**
 * What the lifecycle knows of its models' health: the served model's lag, the stall watchdog of
 * each projector, and the partitions stopped at a batch the client cannot read. Commands of the
 * lifecycle record into it; `report` only reads.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { offsetKey, type PartitionEnds, type UnreadableBatch } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import type { Generation } from './generation.js';
import { lagOf, totalLag, type LagMeasure, type PartitionLag } from '../supervision/lag.js';
import { readiness } from './readiness.js';
import type { LifecycleState, ServiceState } from './states.js';
import type { SupervisorStatus } from '../supervision/supervisor.js';

export interface HealthReport {
  ready: boolean;
  reasons: string[];
  /** what threatens the next build but not the served model: a topic that forgets, a candidate that cannot be built */
  warnings: string[];
  state: ServiceState;
  file: string;
  projectionVersion: number;
  candidate: { file: string; progress: number | null } | null;
  /** a catch-up by replay under way: messages done of its total (null before its first report) */
  replay: { done: number; total: number | null } | null;
  projector: SupervisorStatus | null;
  totalLag: number | null;
  partitions: PartitionLag[];
}

interface StallWatch {
  signature: string;
  movedAt: number;
  /** since when the model has lagged without its position moving; null when not lagging */
  stalledSince: number | null;
}

export class Health {
  /** the served model's lag when last measured; null since a switch, or before the first measure */
  private lag: LagMeasure | null = null;
  /** the end offsets of the last measure, for the candidate's progress */
  private ends: readonly PartitionEnds[] | null = null;
  /** partitions of the served model stopped at a batch the client cannot read, until one is read */
  private readonly unreadable = new Map<string, UnreadableBatch & { at: number }>();
  private readonly stall = new Map<Generation, StallWatch>();

  constructor(private readonly options: { logger: Logger; readyMaxLag: number; stallTimeoutMs: number }) {}

  /** Records a measure of the served model (and of a candidate); restarts a projector stalled while lagging. */
  measured(
    ends: readonly PartitionEnds[],
    served: Generation,
    candidate: Generation | null,
    now: number,
  ): PartitionLag[] {
    this.lag = { at: now, partitions: lagOf(ends, served.positions()) };
    this.ends = ends;
    this.watchStall(served, this.lag.partitions, now);
    if (candidate !== null) this.watchStall(candidate, lagOf(ends, candidate.positions()), now);
    return this.lag.partitions;
  }

  totalLag(): number | null {
    return totalLag(this.lag);
  }

  unreadableAt(batch: UnreadableBatch, now: number): void {
    this.unreadable.set(offsetKey(batch.topic, batch.partition), { ...batch, at: now });
  }

  readAgain(topic: string, partition: number): void {
    this.unreadable.delete(offsetKey(topic, partition));
  }

  /** A new projector reports again what it cannot read; an old report may name a batch moved past since. */
  projectorRestarted(): void {
    this.unreadable.clear();
  }

  /** The served model changed: what was measured of the old one no longer holds. */
  switched(previous: Generation): void {
    this.unreadable.clear();
    this.lag = null;
    this.stall.delete(previous);
  }

  /** How far the candidate has read of the topics, as of the last measure; null before one. */
  progressOf(candidate: Generation): number | null {
    if (this.ends === null) return null;
    const positions = candidate.positions();
    let done = 0;
    let total = 0;
    for (const end of this.ends) {
      const at = positions.get(offsetKey(end.topic, end.partition)) ?? end.start;
      total += end.end - end.start;
      done += Math.max(0, Math.min(at, end.end) - end.start);
    }
    return total === 0 ? 1 : done / total;
  }

  report(state: LifecycleState, now: number): HealthReport {
    const served = state.served;
    const candidate = 'candidate' in state ? state.candidate : null;
    const projector = served.projectorStatus();
    const verdict = readiness({
      now,
      state: state.name,
      servedIsCurrentVersion: served.currentVersion,
      projector,
      lag: this.lag,
      stalledSince: this.stall.get(served)?.stalledSince ?? null,
      unreadable: [...this.unreadable.values()],
      readyMaxLag: this.options.readyMaxLag,
      stallTimeoutMs: this.options.stallTimeoutMs,
    });
    const candidateStatus = candidate?.projectorStatus() ?? null;
    return {
      ...verdict,
      warnings:
        candidateStatus !== null && !candidateStatus.running && candidateStatus.lastError !== null
          ? [`the candidate model cannot be built now (${candidateStatus.lastError})`]
          : [],
      state: state.name,
      file: served.file,
      projectionVersion: PROJECTION_VERSION,
      candidate: candidate === null ? null : { file: candidate.file, progress: this.progressOf(candidate) },
      replay: null,
      projector,
      totalLag: totalLag(this.lag),
      partitions: this.lag?.partitions ?? [],
    };
  }

  private watchStall(generation: Generation, partitions: PartitionLag[], now: number): void {
    // A model with no projector (stopped for a replay or a switch) is watched anew once it has one.
    if (!generation.isProjecting()) {
      this.stall.delete(generation);
      return;
    }
    const signature = partitions.map((p) => p.nextOffset).join(',');
    const lagging = partitions.some((p) => p.lag > 0);
    const watch = this.stall.get(generation) ?? { signature, movedAt: now, stalledSince: null };
    if (watch.signature !== signature || generation.projector() === null) {
      watch.signature = signature;
      watch.movedAt = now;
    }
    watch.stalledSince = lagging ? watch.movedAt : null;
    this.stall.set(generation, watch);
    if (lagging && now - watch.movedAt > this.options.stallTimeoutMs) {
      this.options.logger.warn(
        { file: generation.file, lag: partitions.filter((p) => p.lag > 0) },
        'projector stalled while lagging; restarting it',
      );
      watch.movedAt = now;
      generation.restartProjector();
    }
  }
}
