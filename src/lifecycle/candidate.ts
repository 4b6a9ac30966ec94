/**
 * Candidates: a model proposed in `NEXT` (adopted once, refused for good if it cannot be served),
 * or this process's own rebuild after a projection version change (under the rebuild lock); and
 * how a candidate catching up paces itself against the requests.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { offsetKey, type PartitionEnds } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openReadModel } from '../read-model/database.js';
import { RebuildLocked, type ModelFiles } from '../read-model/files.js';
import { distanceTo, Generation } from './generation.js';
import type { LifecycleOptions } from './options.js';
import type { CatchingUpCandidate, GainMark, ReleaseLock } from './states.js';
import type { Health } from './health.js';

export class Candidates {
  /** proposals that cannot be served (another version, unreadable): never opened again */
  private readonly refused = new Set<string>();
  /** who held the rebuild lock when the version candidate last had to wait for it (logged once per holder) */
  private lockHeldBy: string | null = null;

  constructor(
    private readonly options: { files: ModelFiles; logger: Logger; modelTopics: ReadonlySet<string> },
  ) {}

  /**
   * What to catch up next: a new proposal (the candidate it supersedes retired, its lock kept), or
   * this version's own rebuild when the served model is of an older one and nothing is proposed;
   * null when the candidate, or the lack of one, stays.
   */
  next(
    served: Generation,
    candidate: Generation | null,
    lock: ReleaseLock | null,
  ): { candidate: Generation; lock: ReleaseLock | null } | null {
    const proposal = this.proposal(served, candidate);
    if (proposal !== null) {
      if (candidate !== null) this.retire(candidate);
      this.options.logger.info(
        { file: proposal.file, served: served.file },
        'catching up a proposed model before serving it',
      );
      return { candidate: proposal, lock };
    }
    return candidate === null && !served.currentVersion ? this.versionCandidate() : null;
  }

  /** A newly proposed model to catch up, opened; null when `NEXT` names nothing new that can be served. */
  private proposal(served: Generation, candidate: Generation | null): Generation | null {
    const { files, logger } = this.options;
    const proposed = files.nextFile();
    if (proposed === served.file) files.clearNext(proposed);
    if (proposed === null || proposed === served.file || proposed === candidate?.file) return null;
    if (this.refused.has(proposed)) return null;
    try {
      const generation = Generation.open(proposed, this.options.modelTopics);
      if (generation.currentVersion) return generation;
      generation.close();
      logger.error(
        { file: proposed, expected: PROJECTION_VERSION },
        'the proposed model is of another projection version; it is not served (rebuild it with this version)',
      );
    } catch (error) {
      logger.error({ err: error, file: proposed }, 'the proposed model cannot be opened; it is not served');
    }
    this.refused.add(proposed);
    return null;
  }

  /** Starts this process's rebuild for this projection version: a new file, proposed, under the lock; null while another rebuild holds it. */
  private versionCandidate(): { candidate: Generation; lock: ReleaseLock } | null {
    const { files, logger } = this.options;
    let lock: ReleaseLock;
    try {
      lock = files.acquireRebuildLock(`version ${PROJECTION_VERSION} rebuild by the service`);
    } catch (error) {
      if (!(error instanceof RebuildLocked)) throw error;
      if (this.lockHeldBy !== error.message)
        logger.warn({ reason: error.message }, 'the version candidate waits for the running rebuild');
      this.lockHeldBy = error.message;
      return null;
    }
    this.lockHeldBy = null;
    const file = files.newGenerationFile();
    openReadModel(file).close();
    files.proposeNext(file);
    logger.info(
      { file, projectionVersion: PROJECTION_VERSION },
      'building a candidate model for this projection version',
    );
    return { candidate: Generation.open(file, this.options.modelTopics), lock };
  }

  /** Stops and deletes a candidate superseded by a newer proposal: this process retires it. */
  private retire(old: Generation): void {
    const { files, logger } = this.options;
    const retire = async (): Promise<void> => {
      await old.stopProjecting();
      old.close();
      files.remove(old.file);
      logger.info({ file: old.file }, 'retired a candidate superseded by a newer proposal');
    };
    retire().catch((error: unknown) =>
      logger.error({ err: error, file: old.file }, 'retiring a superseded candidate failed'),
    );
  }
}

/** A lag measure while a candidate catches up: its progress reported, its pace set; the state after it. */
export function candidateMeasured(
  state: CatchingUpCandidate,
  ends: readonly PartitionEnds[],
  now: number,
  options: Pick<LifecycleOptions, 'readyMaxLag' | 'candidateGainWindowMs' | 'logger' | 'events'>,
  health: Pick<Health, 'progressOf'>,
): CatchingUpCandidate {
  const ratio = health.progressOf(state.candidate);
  if (ratio !== null) options.events?.candidateProgress?.(ratio);
  return { ...state, gainMark: paceCandidate(state, ends, now, options) };
}

/**
 * A candidate gives way to requests only while that costs nothing but time: once it is within
 * READY_MAX_LAG messages of the served model, or when it has gained less than a tenth of its
 * distance to it over a window (the served model takes events about as fast as the candidate
 * applies them at its share), it runs at full speed until it is served. Otherwise a replica under
 * steady ingest and requests could take hours to switch, or never. Returns the next gain mark.
 */
export function paceCandidate(
  pace: { served: Generation; candidate: Generation; gainMark: GainMark | null },
  ends: readonly PartitionEnds[],
  now: number,
  options: Pick<LifecycleOptions, 'readyMaxLag' | 'candidateGainWindowMs' | 'logger'>,
): GainMark | null {
  const { candidate, served } = pace;
  const windowMs = options.candidateGainWindowMs ?? 30_000;
  let mark = pace.gainMark;
  if (!candidate.givesWay() || candidate.projector() === null) return mark;
  const logStarts = new Map(ends.map((end) => [offsetKey(end.topic, end.partition), end.start]));
  const distance = distanceTo(candidate.positions(), served.positions(), logStarts);
  let why: string | null = null;
  if (distance <= options.readyMaxLag) {
    why = 'it is within READY_MAX_LAG of the served model';
  } else if (mark === null) {
    mark = { distance, at: now };
  } else if (now - mark.at >= windowMs) {
    if (distance > mark.distance * 0.9) {
      why = `it gained less than a tenth of its distance to the served model in ${windowMs} ms`;
    }
    mark = { distance, at: now };
  }
  if (why === null) return mark;
  candidate.setGiveWay(false);
  options.logger.info(
    { file: candidate.file, distance },
    `the candidate stops giving way to requests: ${why}`,
  );
  return mark;
}
