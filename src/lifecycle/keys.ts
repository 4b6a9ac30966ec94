/**
 * Keys: which model a key is looked up in, and the keys watch that reads the keys topic while the
 * served model gets no events (it is of an older projection version and its successor is built).
 */
import type { KeysWatch } from '../consumer/keys-watch.js';
import type { Positions } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { newRefId, type ModelRef } from '../read-model/read-view.js';
import { hasReached, type Generation } from './generation.js';

type KeyLookup = Pick<Generation['reader'], 'orgOfKeyHash'>;

/** Where keys are looked up: the reader in this thread, and the file as other request threads open it. */
export interface KeySource {
  reader: KeyLookup;
  ref: ModelRef;
}

/** The keys watch: none, starting (its consumer joining), or running. */
type WatchSlot =
  { kind: 'none' } | { kind: 'starting' } | { kind: 'running'; watch: KeysWatch; ref: ModelRef };

export class Keys {
  private slot: WatchSlot = { kind: 'none' };

  constructor(
    private readonly options: {
      apiKeysTopic: string;
      logger: Logger;
      startKeysWatch?: (() => Promise<KeysWatch>) | undefined;
      /** hands a watch that has started back to the lifecycle's queue (`started`) */
      post: (command: () => void) => void;
      /** the watch started or ended: the source of keys may change */
      changed?: () => void;
    },
  ) {}

  /**
   * Keys are looked up in whichever model has read furthest on the keys topic, so an issue or a
   * revocation counts as soon as any of them has applied it: the served model, the candidate, or,
   * while the served model gets no events, the keys watch.
   */
  sourceFor(served: Generation, candidate: Generation | null): KeySource {
    const ofGeneration = (generation: Generation): { positions: Positions; source: KeySource } => ({
      positions: generation.positions(),
      source: { reader: generation.reader, ref: generation.ref() },
    });
    let best = ofGeneration(served);
    const slot = this.slot;
    const others = [
      ...(candidate === null ? [] : [ofGeneration(candidate)]),
      ...(slot.kind === 'running'
        ? [{ positions: slot.watch.positions(), source: { reader: slot.watch, ref: slot.ref } }]
        : []),
    ];
    for (const other of others) {
      if (hasReached(other.positions, best.positions, this.options.apiKeysTopic)) best = other;
    }
    return best.source;
  }

  /** Whether `candidate` holds every key the watch may have answered from (all of them, with no watch). */
  heldBy(candidate: Positions): boolean {
    const watch = this.running();
    return watch === null || hasReached(candidate, watch.positions());
  }

  /** Keeps the watch running while `needed` (the served model is of an older version); ends it otherwise. */
  tend(needed: boolean): void {
    const start = this.options.startKeysWatch;
    if (!needed || start === undefined) {
      this.end();
      return;
    }
    if (this.slot.kind !== 'none') return;
    this.slot = { kind: 'starting' };
    start().then(
      (watch) => this.options.post(() => this.started(watch)),
      (error: unknown) =>
        this.options.post(() => {
          this.slot = { kind: 'none' };
          this.options.logger.warn({ err: error }, 'the keys watch did not start; it is tried again');
        }),
    );
  }

  /** Stops the watch, and lets one still starting end when it has started. */
  end(): void {
    const watch = this.running();
    this.slot = { kind: 'none' };
    if (watch !== null) {
      this.options.changed?.();
      this.stopWatch(watch);
    }
  }

  /**
   * Stops the watch and waits for it (the service stops). Its file stays: the next start resumes
   * it, so that the keys it answered from are not forgotten across a restart.
   */
  async stop(): Promise<void> {
    const watch = this.running();
    this.slot = { kind: 'none' };
    await watch?.stop({ keepFile: true });
  }

  private started(watch: KeysWatch): void {
    if (this.slot.kind !== 'starting') {
      // ended, or the service stopped, while it opened: its file stays, since a stop cannot be told
      // from an end here and it may hold a revocation it resumed (a later start resumes it)
      this.stopWatch(watch, { keepFile: true });
      return;
    }
    // It outlives its consumer's failures (it resumes from its own positions), so that the keys
    // it has answered are never forgotten while it is needed.
    this.slot = {
      kind: 'running',
      watch,
      ref: { id: newRefId(), file: watch.file, currentVersion: true, epochs: null },
    };
    this.options.changed?.();
  }

  private running(): KeysWatch | null {
    return this.slot.kind === 'running' ? this.slot.watch : null;
  }

  private stopWatch(watch: KeysWatch, options?: { keepFile: boolean }): void {
    watch
      .stop(options)
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'stopping the keys watch failed'));
  }
}
