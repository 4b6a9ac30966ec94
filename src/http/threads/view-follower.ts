/**
 * A request thread's side of the lifecycle's views: the readers of the files the last view names,
 * each on a read-only connection of this thread. Every read first compares the view number in
 * shared memory with the one it follows; when it has moved, the views waiting on the port are taken
 * at once (`receiveMessageOnPort`), so no read of this thread answers from a view older than one
 * the lifecycle has published before it.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { openRefReader, readsOf, type ModelRef, type ReadView } from '../../read-model/read-view.js';
import type { ApiReads, ReadModelReader } from '../../read-model/reader.js';

/** What the lifecycle's side posts on a thread's view port. */
export interface ViewMessage {
  type: 'view';
  view: ReadView;
}

/** What a thread answers on its view port: the view it now answers from. */
export interface ViewAck {
  type: 'following';
  seq: number;
}

export class ViewFollower {
  private view: ReadView;
  /** the newest view received that could not be opened yet (a file still being retired); tried again on each read */
  private pending: ReadView | null = null;
  private readers = new Map<number, ReadModelReader>();
  private current: { served: ReadModelReader; keys: ReadModelReader };
  readonly reads: ApiReads = readsOf(() => this.fresh());

  constructor(
    first: ReadView,
    /** the published view's number, in shared memory (`ViewPublisher`) */
    private readonly published: Int32Array,
    private readonly port: MessagePort,
  ) {
    this.view = first;
    this.current = this.open(first);
    port.on('message', (message: ViewMessage) => {
      this.receive(message.view);
      try {
        this.followPending();
      } catch {
        // tried again on the next read, which answers the error
      }
    });
    this.acknowledge();
  }

  /** The view it answers from. */
  following(): ReadView {
    return this.view;
  }

  close(): void {
    this.port.close();
    for (const reader of this.readers.values()) reader.db.close();
    this.readers.clear();
  }

  private fresh(): { served: ReadModelReader; keys: ReadModelReader } {
    if (Atomics.load(this.published, 0) !== this.view.seq) {
      for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
        this.receive((m.message as ViewMessage).view);
      }
      this.followPending();
    }
    return this.current;
  }

  private receive(view: ReadView): void {
    if (view.seq > (this.pending ?? this.view).seq) this.pending = view;
  }

  private followPending(): void {
    const view = this.pending;
    if (view === null) return;
    this.current = this.open(view);
    this.view = view;
    this.pending = null;
    // Reads are synchronous: no read of this thread is under way on a connection closed here.
    for (const [id, reader] of this.readers) {
      if (id !== view.served.id && id !== view.keys.id) {
        reader.db.close();
        this.readers.delete(id);
      }
    }
    this.acknowledge();
  }

  private open(view: ReadView): { served: ReadModelReader; keys: ReadModelReader } {
    return { served: this.readerOf(view.served), keys: this.readerOf(view.keys) };
  }

  private readerOf(ref: ModelRef): ReadModelReader {
    let reader = this.readers.get(ref.id);
    if (reader === undefined) {
      reader = openRefReader(ref);
      this.readers.set(ref.id, reader);
    }
    return reader;
  }

  private acknowledge(): void {
    this.port.postMessage({ type: 'following', seq: this.view.seq } satisfies ViewAck);
  }
}
