/**
 * What the API answers from, as data every request thread can follow: the served model file, and
 * the keys store's files. The lifecycle publishes a new view, numbered, whenever either changes;
 * request threads open their own read-only connections to the files it names.
 */
import { openReadModel } from './database.js';
import { ReadModelReader, type ApiReads, type ModelReads } from './reader.js';

export interface ModelRef {
  /** this process's number for the generation: a file opened anew gets a new one */
  id: number;
  file: string;
  /** false: a file of an older projection version, opened as it is, never projected into */
  currentVersion: boolean;
  /** the generation's cache epochs (shared memory, `newCacheEpochs`); null: nothing is cached */
  epochs: Int32Array | null;
}

/** The keys store's files as a request thread opens them (`keys/key-lookup.ts`); a new `id` whenever they change. */
export interface KeysRef {
  id: number;
  file: string;
  /** the store of an older projection version, answering beside `file` until `file` has reached it */
  predecessor: string | null;
  /** `file`'s commits (`commit-counter.ts`), moved by its writer: what a cache of keys rests on */
  commits: Int32Array;
}

export interface ReadView {
  /** grows by one with each published view */
  seq: number;
  served: ModelRef;
  keys: KeysRef;
}

let lastRefId = 0;

/** A number for a model opened in this process, for its `ModelRef`. */
export function newRefId(): number {
  lastRefId += 1;
  return lastRefId;
}

/** Where the lifecycle publishes its views: the request threads (none when one thread serves). */
export interface ViewSink {
  publish(view: ReadView): void;
  /** resolves once every request thread answers from the last published view */
  settled(): Promise<void>;
}

/** A read-only reader of `ref`'s file for a request thread, caching only where the epochs say when to forget. */
export function openRefReader(ref: ModelRef): ReadModelReader {
  const db = openReadModel(ref.file, { readonly: true, anyProjectionVersion: !ref.currentVersion });
  const caching = ref.epochs !== null;
  return new ReadModelReader(db, {
    cacheChanges: caching,
    ...(ref.epochs === null ? {} : { epochs: ref.epochs }),
  });
}

/** The API's reads from a view: the page, articles and counters from the served model, keys from the keys store. */
export function readsOf(
  current: () => { served: ModelReads; keys: Pick<ApiReads, 'orgOfKeyHash'> },
): ApiReads {
  return {
    orderPage: (query) => current().served.orderPage(query),
    articlesOfOrder: (orgId, orderId) => current().served.articlesOfOrder(orgId, orderId),
    orgOfKeyHash: (hash) => current().keys.orgOfKeyHash(hash),
    inReadTransaction: (read, how) => current().served.inReadTransaction(read, how),
    commitEpochs: () => current().served.commitEpochs?.() ?? null,
  };
}
