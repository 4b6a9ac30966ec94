/**
 * What the API answers from: the served model, and keys from the keys store. Worked out again
 * whenever either may change (a move of the state, the keys store's successor taking over),
 * numbered, and published to the request threads as it changes; a generation switched away from is
 * closed and deleted once no request thread reads it.
 */
import type { Logger } from '../logger.js';
import type { ModelFiles } from '../read-model/files.js';
import { readsOf, type ReadView, type ViewSink } from '../read-model/read-view.js';
import type { ApiReads, ModelReads } from '../read-model/reader.js';
import type { KeyLookup, KeysRef } from '../keys/key-lookup.js';
import type { KeysStore } from '../keys/keys-store.js';
import type { Generation } from './generation.js';
import type { LifecycleState } from './states.js';

interface View {
  seq: number;
  served: Generation;
  keys: KeysRef;
  reads: { served: ModelReads; keys: KeyLookup };
}

export class ServedView {
  private view: View | null = null;
  private readonly retiring = new Set<Promise<void>>();

  /** What the HTTP API of this thread reads (`readView()` for the request threads). */
  readonly reads: ApiReads = readsOf(() => this.current().reads);

  constructor(
    private readonly deps: {
      state: () => LifecycleState;
      keys: KeysStore;
      files: ModelFiles;
      logger: Logger;
      /** the request threads (none: this thread alone answers) */
      views?: ViewSink | undefined;
    },
  ) {}

  /** The view the API answers from now, as request threads open it. */
  readView(): ReadView {
    const view = this.current();
    return { seq: view.seq, served: view.served.ref(), keys: view.keys };
  }

  /** Works out what the API answers from, and publishes it when that changed. */
  refresh(): View {
    const state = this.deps.state();
    const last = this.view;
    // Stopping closes the models: the API answers from the last view until it has stopped.
    if (last !== null && (state.name === 'stopping' || state.name === 'stopped')) return last;
    const served = state.served;
    const keys = this.deps.keys.ref();
    if (last !== null && last.served === served && last.keys.id === keys.id) return last;
    const view = {
      seq: (last?.seq ?? 0) + 1,
      served,
      keys,
      reads: { served: served.reader, keys: this.deps.keys.lookup() },
    };
    this.view = view;
    this.deps.views?.publish(this.readView());
    return view;
  }

  /** Closes and deletes a generation switched away from, once no request thread reads it. */
  retire(previous: Generation): void {
    const retired = (async () => {
      await this.deps.views?.settled();
      // Reads are synchronous: once this tick ends, no request of this thread holds the connection.
      await new Promise((resolve) => setImmediate(resolve));
      previous.close();
      this.deps.files.remove(previous.file);
    })().catch((error: unknown) =>
      this.deps.logger.error({ err: error, file: previous.file }, 'retiring a switched-from model failed'),
    );
    this.retiring.add(retired);
    void retired.finally(() => this.retiring.delete(retired));
  }

  /** The generations being retired, settled. */
  async retired(): Promise<void> {
    await Promise.all(this.retiring);
  }

  private current(): View {
    return this.view ?? this.refresh();
  }
}
