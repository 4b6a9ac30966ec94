import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { KeyLookup } from '../../src/keys/key-lookup.js';
import { newCommitCounter, type CommitCounter } from '../../src/read-model/commit-counter.js';
import { openReadModel } from '../../src/read-model/database.js';
import { apiKeyIssued, apiKeyRevoked, at } from '../helpers/events.js';
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
  db: ReturnType<typeof openReadModel>;
  commits: CommitCounter;
} {
  n += 1;
  const file = join(root, `keys-${n}.sqlite`);
  const commits = newCommitCounter();
  const model = memoryReadModel(openReadModel(file), commits);
  opened.push(model.db);
  return { file, apply: model.apply, db: model.db, commits };
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

  it('answers an equal fact held by both', () => {
    const predecessor = storeFile();
    const successor = storeFile();
    for (const store of [predecessor, successor])
      store.apply(apiKeyIssued('k7', 7, hash, { occurred_at: at(1), event_id: 'e1' }));
    expect(lookup(successor, predecessor.file).orgOfKeyHash(hash)).toBe(7);
    expect(lookup(successor, predecessor.file).orgOfKeyHash(sha256Hex('unknown'))).toBeNull();
  });
});
