/**
 * A request thread's side of the lifecycle's views: the readers of the files the last view names,
 * each on a read-only connection of this thread. Every read first compares the view number in
 * shared memory with the one it follows; when it has moved, the views waiting on the port are taken
 * at once (`receiveMessageOnPort`), so no read of this thread answers from a view older than one
 * the lifecycle has published before it.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { KeyLookup } from '../../keys/key-lookup.js';
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
  /** the view it answers from, with the reader of its served file and the lookup of its keys store */
  private following: { view: ReadView; served: ReadModelReader; keys: KeyLookup };
  /** the newest view received that could not be opened yet (a file still being retired); tried again on each read */
  private pending: ReadView | null = null;
  private readonly readers = new Map<number, ReadModelReader>();
  private keyLookup: { id: number; lookup: KeyLookup } | null = null;
  readonly reads: ApiReads = readsOf(() => this.fresh());

  constructor(
    first: ReadView,
    /** the published view's number, in shared memory (`RequestThreads.publish`) */
    private readonly published: Int32Array,
    private readonly port: MessagePort,
  ) {
    // Views published since the thread was started wait on the port: open the newest (an older
    // one's file may be retired already).
    let newest = first;
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
      const view = (m.message as ViewMessage).view;
      if (view.seq > newest.seq) newest = view;
    }
    this.following = this.open(newest);
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

  close(): void {
    this.port.close();
    for (const reader of this.readers.values()) reader.db.close();
    this.readers.clear();
    this.keyLookup?.lookup.close();
    this.keyLookup = null;
  }

  private fresh(): { served: ReadModelReader; keys: KeyLookup } {
    if (Atomics.load(this.published, 0) !== this.following.view.seq) {
      for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) {
        this.receive((m.message as ViewMessage).view);
      }
      this.followPending();
    }
    return this.following;
  }

  private receive(view: ReadView): void {
    if (view.seq > (this.pending ?? this.following.view).seq) this.pending = view;
  }

  private followPending(): void {
    const view = this.pending;
    if (view === null) return;
    const previousKeys = this.keyLookup;
    this.following = this.open(view);
    this.pending = null;
    // Reads are synchronous: no read of this thread is under way on a connection closed here. A
    // file switched from is closed at once: the lifecycle deletes it once all have followed.
    if (previousKeys !== null && previousKeys !== this.keyLookup) previousKeys.lookup.close();
    const kept = new Set([view.served.id]);
    for (const [id, reader] of this.readers) {
      if (!kept.has(id)) {
        reader.db.close();
        this.readers.delete(id);
      }
    }
    this.acknowledge();
  }

  private open(view: ReadView): { view: ReadView; served: ReadModelReader; keys: KeyLookup } {
    const served = this.readerOf(view.served);
    if (this.keyLookup?.id !== view.keys.id)
      this.keyLookup = { id: view.keys.id, lookup: KeyLookup.open(view.keys) };
    return { view, served, keys: this.keyLookup.lookup };
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
    this.port.postMessage({ type: 'following', seq: this.following.view.seq } satisfies ViewAck);
  }
}
