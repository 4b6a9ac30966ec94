/**
 * A rebuild's progress: where each partition stands against the target read at the start, how many
 * messages are done out of how many, and whether each half of a split rebuild has caught up.
 */
import { offsetKey } from '../kafka/port.js';
import type { ReadModelWriter } from '../read-model/writer.js';
import type { ProjectorThread } from './projector-thread.js';

export interface RebuildProgress {
  /** messages applied or dead-lettered so far, up to the targets */
  done: number;
  /** messages between the log start and the end offsets read at the start */
  total: number;
  deadLetters: number;
}

/** A partition's log from where it starts to where it ended when the rebuild started. */
export interface Target {
  topic: string;
  partition: number;
  low: number;
  high: number;
}

/** Where a replay stands: the build's stored positions, and the articles' thread's when it builds them. */
export interface ReplayPositions {
  targets: Target[];
  /** the articles' topic, whose positions the thread holds when there is one */
  articlesTopic: string;
  writer: ReadModelWriter;
  thread: ProjectorThread | null;
  deadLetters: number;
  /** when the replay started (Date.now()), and when each half reached its targets, in ms after it */
  started: number;
  reachedMs: Partial<Record<'main' | 'articles', number>>;
}

/**
 * Where a finished replay's wall time went, in ms, for its log: consuming (and when each half was
 * done), the join of the parts, then the indexes and the sync (the file's naming after them is in
 * none).
 */
export interface RebuildPhases {
  consume: number;
  reached: ReplayPositions['reachedMs'];
  join: number;
  finish: number;
}

export function phasesOf(
  state: ReplayPositions,
  at: { consumed: number; joined: number; finished: number },
): RebuildPhases {
  return {
    consume: at.consumed - state.started,
    reached: state.reachedMs,
    join: at.joined - at.consumed,
    finish: at.finished - at.joined,
  };
}

function storedOffset(state: ReplayPositions, topic: string, partition: number): number | undefined {
  return topic === state.articlesTopic && state.thread !== null
    ? state.thread.positions().get(offsetKey(topic, partition))
    : state.writer.storedOffset(topic, partition);
}

export function progressOf(state: ReplayPositions): RebuildProgress {
  return {
    total: state.targets.reduce((sum, t) => sum + (t.high - t.low), 0),
    deadLetters: state.deadLetters,
    done: state.targets.reduce((sum, t) => {
      const stored = storedOffset(state, t.topic, t.partition) ?? t.low;
      return sum + Math.max(0, Math.min(stored, t.high) - t.low);
    }, 0),
  };
}

/** Whether the partitions (of the articles, or of every other topic, if `articles` is given) are caught up. */
export function reachedTargets(state: ReplayPositions, articles?: boolean): boolean {
  return state.targets
    .filter((t) => articles === undefined || (t.topic === state.articlesTopic) === articles)
    .every((t) => t.high <= t.low || (storedOffset(state, t.topic, t.partition) ?? t.low) >= t.high);
}
