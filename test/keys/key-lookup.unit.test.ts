import { existsSync } from 'node:fs';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { apiReadsOfOneFile, KeyLookup } from '../../src/keys/key-lookup.js';
import { newCommitCounter, type CommitCounter } from '../../src/read-model/commit-counter.js';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { apiKeyIssued, apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import { descriptorsOn } from '../helpers/open-files.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const hash = sha256Hex('key-of-org-7');
const newHash = sha256Hex('new-key-of-org-7');
const root = tempDir('key-lookup');
let n = 0;
const opened: { close(): void }[] = [];
afterEach(() => {
  for (const o of opened.splice(0)) o.close();
});

/** A keys store file with a writer connection and its commit counter, as the keys consumer's thread has. */
function storeFile(): {
  file: string;
  apply: ReturnType<typeof memoryReadModel>['apply'];
  applyInBatches: ReturnType<typeof memoryReadModel>['applyInBatches'];
  db: ReturnType<typeof openReadModel>;
  commits: CommitCounter;
} {
  n += 1;
  const file = join(root, `keys-${n}.sqlite`);
  const commits = newCommitCounter();
  const model = memoryReadModel(openReadModel(file, { store: keysStoreSchema }), commits);
  opened.push(model.db);
  return { file, apply: model.apply, applyInBatches: model.applyInBatches, db: model.db, commits };
}

function lookup(
  store: { file: string; commits: CommitCounter },
  predecessor: string | null = null,
): KeyLookup {
  const l = KeyLookup.open({ id: n, file: store.file, predecessor, commits: store.commits });
  opened.push(l);
  return l;
}

describe('a key lookup', () => {
  it('sees a revocation committed by another connection at its next lookup', () => {
    const store = storeFile();
    const reads = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    store.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    expect(reads.orgOfKeyHash(hash)).toBeNull();
  });

  it('never accepts in one thread a key another thread has refused after its revocation', () => {
    // Two request threads, each with its own connection: both have answered the key before.
    const store = storeFile();
    const first = lookup(store);
    const second = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(first.orgOfKeyHash(hash)).toBe(7);
    expect(second.orgOfKeyHash(hash)).toBe(7);
    store.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    expect(first.orgOfKeyHash(hash)).toBeNull();
    expect(second.orgOfKeyHash(hash)).toBeNull();
  });

  it('answers a key from memory while no commit has happened since it was read', () => {
    const store = storeFile();
    const reads = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    // a change behind the writer's back (no commit counted) is not seen: the answer was remembered
    store.db.prepare('DELETE FROM api_keys').run();
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    // a counted commit, of anything, makes every thread read again
    store.apply(apiKeyIssued('k8', 8, newHash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBeNull();
  });

  it('remembers nothing while a commit may be under way, or after a writer died inside one', () => {
    const store = storeFile();
    const reads = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    // the writer's thread died inside a transaction: the counter stays odd
    Atomics.add(store.commits, 0, 1);
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    store.db.prepare('DELETE FROM api_keys').run();
    expect(reads.orgOfKeyHash(hash)).toBeNull();
    // its successor's next transaction ends: remembering starts again
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(3) }));
    expect(Atomics.load(store.commits, 0) % 2).toBe(0);
    expect(reads.orgOfKeyHash(hash)).toBe(7);
  });

  it('forgets every remembered key at a commit, not only the one looked up next', () => {
    const store = storeFile();
    const reads = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    store.apply(apiKeyIssued('k8', 8, newHash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    expect(reads.orgOfKeyHash(newHash)).toBe(8);
    store.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    expect(reads.orgOfKeyHash(newHash)).toBe(8);
    expect(reads.orgOfKeyHash(hash)).toBeNull();
  });

  it('does not let unknown keys fill its memory: a known key stays remembered', () => {
    const store = storeFile();
    const reads = lookup(store);
    store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    for (let i = 0; i < 10_001; i += 1) expect(reads.orgOfKeyHash(sha256Hex(`random-${i}`))).toBeNull();
    store.db.prepare('DELETE FROM api_keys').run();
    expect(reads.orgOfKeyHash(hash)).toBe(7);
  });

  it('remembers up to 10 000 keys, and starts over past them', () => {
    const store = storeFile();
    const reads = lookup(store);
    const hashes = Array.from({ length: 10_001 }, (_, i) => sha256Hex(`key-${i}`));
    store.applyInBatches(
      2000,
      hashes.map((h, i) => apiKeyIssued(`k${i}`, 7, h, { occurred_at: at(1) })),
    );
    for (const h of hashes.slice(0, 10_000)) expect(reads.orgOfKeyHash(h)).toBe(7);
    // behind the writer's back: only what is read from the file sees it
    store.db.prepare(`DELETE FROM api_keys WHERE key_id != 'k10000'`).run();
    expect(reads.orgOfKeyHash(hashes[0]!)).toBe(7);
    expect(reads.orgOfKeyHash(hashes[9_999]!)).toBe(7);
    // the 10 001st key: the memory starts over with it
    expect(reads.orgOfKeyHash(hashes[10_000]!)).toBe(7);
    expect(reads.orgOfKeyHash(hashes[0]!)).toBeNull();
  });

  it('opens the store read-only: a store that is not there is an error, not created', () => {
    n += 1;
    const file = join(root, `missing-${n}.sqlite`);
    expect(() => KeyLookup.open({ id: n, file, predecessor: null, commits: newCommitCounter() })).toThrow();
    expect(existsSync(file)).toBe(false);
  });

  it('closes its connections to the store and its predecessor', () => {
    const predecessor = storeFile();
    const store = storeFile();
    // the writers closed: SQLite holds a closed connection's descriptor while another of the
    // process has the file open
    predecessor.db.close();
    store.db.close();
    const reads = KeyLookup.open({
      id: n,
      file: store.file,
      predecessor: predecessor.file,
      commits: store.commits,
    });
    expect(descriptorsOn(store.file)).toBeGreaterThan(0);
    expect(descriptorsOn(predecessor.file)).toBeGreaterThan(0);
    reads.close();
    expect([descriptorsOn(store.file), descriptorsOn(predecessor.file)]).toEqual([0, 0]);
  });

  it('closes the store again when its predecessor cannot be opened', () => {
    const store = storeFile();
    store.db.close();
    n += 1;
    const missing = join(root, `missing-${n}.sqlite`);
    expect(() =>
      KeyLookup.open({ id: n, file: store.file, predecessor: missing, commits: store.commits }),
    ).toThrow();
    expect(descriptorsOn(store.file)).toBe(0);
    expect(existsSync(missing)).toBe(false);
  });
});

describe('a key lookup in one database', () => {
  it('answers from it as it is at each lookup, remembering nothing', () => {
    const model = memoryReadModel(openOneFileModel(':memory:'));
    const reads = KeyLookup.of(model.db);
    model.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    model.db.prepare('DELETE FROM api_keys').run();
    expect(reads.orgOfKeyHash(hash)).toBeNull();
  });

  it("gives the API the orders and the keys of the database's one file", () => {
    const model = memoryReadModel(openOneFileModel(':memory:'));
    model.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    model.apply(orderCreated({ order_id: 1, organization_id: 7 }));
    const reads = apiReadsOfOneFile(new ReadModelReader(model.db));
    expect(reads.orgOfKeyHash(hash)).toBe(7);
    expect(reads.orderPage({ orgId: 7, status: null, limit: 10, offset: 0 }).total).toBe(1);
  });
});

describe('a key lookup while a successor store is built beside its predecessor', () => {
  it('keeps refusing a key the predecessor holds revoked, though the successor has read only its issue', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    predecessor.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    const successor = storeFile();
    successor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBeNull();
  });

  it('accepts a key the predecessor holds issued before the successor has read it', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    const successor = storeFile();
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBe(7);
  });

  it('refuses a key the successor has read revoked after the predecessor was frozen', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    const successor = storeFile();
    successor.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBeNull();
  });

  it('answers the newer fact of the two stores: a key issued again with a new hash', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    const successor = storeFile();
    successor.apply(apiKeyIssued('k7', 7, newHash, { occurred_at: at(3) }));
    const reads = lookup(successor, predecessor.file);
    expect(reads.orgOfKeyHash(hash)).toBeNull();
    expect(reads.orgOfKeyHash(newHash)).toBe(7);
  });

  it('answers the predecessor when it holds the newer fact: issued again after an older revocation', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(5) }));
    const successor = storeFile();
    successor.apply(apiKeyRevoked('k7', { occurred_at: at(2) }));
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBe(7);
  });

  it('answers from a predecessor of an older projection version', () => {
    const predecessor = storeFile();
    predecessor.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1) }));
    predecessor.db.prepare(`UPDATE projection_meta SET value = '1' WHERE key = 'projection_version'`).run();
    const successor = storeFile();
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBe(7);
  });

  it('opens the predecessor read-only: one that is not there is an error, not created', () => {
    const successor = storeFile();
    n += 1;
    const missing = join(root, `missing-${n}.sqlite`);
    expect(() => lookup(successor, missing)).toThrow();
    expect(existsSync(missing)).toBe(false);
  });

  it('answers an equal fact held by both', () => {
    const predecessor = storeFile();
    const successor = storeFile();
    for (const store of [predecessor, successor])
      store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1), event_id: 'e1' }));
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBe(7);
    expect(lookup(successor, predecessor.file).orgOfKeyHash(sha256Hex('unknown'))).toBeNull();
  });
});
