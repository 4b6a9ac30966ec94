/**
 * Keys: which model a key is looked up in, and the keys watch that reads the keys topic while the
 * served model gets no events (it is of an older projection version and its successor is built).
 */
import type { KeysWatch } from '../consumer/keys-watch.js';
import type { Positions } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { hasReached, type Generation } from './generation.js';

type KeyLookup = Pick<Generation['reader'], 'orgOfKeyHash'>;

/** The keys watch: none, starting (its consumer joining), or running. */
type WatchSlot = { kind: 'none' } | { kind: 'starting' } | { kind: 'running'; watch: KeysWatch };

export class Keys {
  private slot: WatchSlot = { kind: 'none' };

  constructor(
    private readonly options: {
      apiKeysTopic: string;
      logger: Logger;
      startKeysWatch?: () => Promise<KeysWatch>;
      /** hands a watch that has started back to the lifecycle's queue (`started`) */
      post: (command: () => void) => void;
    },
  ) {}

  /**
   * Keys are looked up in whichever model has read furthest on the keys topic, so an issue or a
   * revocation counts as soon as any of them has applied it: the served model, the candidate, or,
   * while the served model gets no events, the keys watch.
   */
  readerFor(served: Generation, candidate: Generation | null): KeyLookup {
    let best: { positions: Positions; reader: KeyLookup } = {
      positions: served.positions(),
      reader: served.reader,
    };
    const watch = this.running();
    const others = [
      ...(candidate === null ? [] : [{ positions: candidate.positions(), reader: candidate.reader }]),
      ...(watch === null ? [] : [{ positions: watch.positions(), reader: watch }]),
    ];
    for (const other of others) {
      if (hasReached(other.positions, best.positions, this.options.apiKeysTopic)) best = other;
    }
    return best.reader;
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
    if (watch !== null) this.stopWatch(watch);
  }

  /** Stops the watch and waits for it (the service stops). */
  async stop(): Promise<void> {
    const watch = this.running();
    this.slot = { kind: 'none' };
    await watch?.stop();
  }

  private started(watch: KeysWatch): void {
    if (this.slot.kind !== 'starting') {
      // ended (or the service stopped) while its consumer joined
      this.stopWatch(watch);
      return;
    }
    // It outlives its consumer's failures (it resumes from its own positions), so that the keys
    // it has answered are never forgotten while it is needed.
    this.slot = { kind: 'running', watch };
  }

  private running(): KeysWatch | null {
    return this.slot.kind === 'running' ? this.slot.watch : null;
  }

  private stopWatch(watch: KeysWatch): void {
    watch
      .stop()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'stopping the keys watch failed'));
  }
}
