/**
 * Authentication's one rule: a key is answered from the keys store's committed state as it is now.
 * A thread remembers an answer only while the store's commit counter (shared memory, moved by its
 * writer around every commit: `read-model/commit-counter.ts`) is even and unchanged since before
 * the answer was read; any commit since, or one under way, sends the next lookup to the file. So
 * once any thread has refused a key after its revocation (the revocation is committed), every
 * thread reads that commit at its next lookup; and the store only moves forward (`keys-store.ts`),
 * so no later read sees an older state.
 *
 * While a successor store of a new keys store version is built, the predecessor (frozen at its
 * positions) answers beside it: for each key the newer fact of the two counts, as the projection's
 * convergence rule says, so what either has applied is never forgotten.
 */
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { keysSqlFor } from '../../projections/keys/sql.js';
import { supersedes, type FactStamp } from '../../projections/facts/fact-stamp.js';
import { settledCount, type CommitCounter } from '../read-model/commit-counter.js';
import { columnsOf, openReadModel, type ReadModelDatabase } from '../read-model/database.js';
import { readsOf, type KeysRef } from '../read-model/read-view.js';
import type { ApiReads, ReadModelReader } from '../read-model/reader.js';

export type { KeysRef };

type Statement = ReturnType<ReadModelDatabase['prepare']>;

interface KeyRow {
  key_id: string;
  org_id: number | null;
  revoked: number;
  v_at: number;
  v_sub: number;
  v_rank: 0 | 1;
  v_id: string;
}

/** One store's statements, on a connection of this thread. */
class StoreReads {
  readonly activeByHash: Statement;
  readonly byId: Statement;

  constructor(readonly db: ReadModelDatabase) {
    // prepared against the columns this store has: a predecessor of an earlier version may lack some
    const sql = keysSqlFor(columnsOf(db, 'api_keys'));
    this.activeByHash = db.prepare(sql.activeKeyByHash);
    this.byId = db.prepare(sql.keyById);
  }
}

function stampOf(row: KeyRow): FactStamp {
  return { at: row.v_at, sub: row.v_sub, rank: row.v_rank, id: row.v_id };
}

/** Bound on remembered keys; past it the cache starts over (an organization has a few keys). */
const maxRemembered = 10_000;

export class KeyLookup {
  /** key SHA-256 → organization, active keys only, valid while the counter reads `rememberedAt` */
  private readonly remembered = new Map<string, number>();
  private rememberedAt: number | null = null;

  private constructor(
    private readonly store: StoreReads,
    private readonly predecessor: StoreReads | null,
    /** the store's commit counter; none: nothing is remembered */
    private readonly commits: CommitCounter | null,
  ) {}

  /** Read-only connections of this thread to the files `ref` names. */
  static open(ref: KeysRef): KeyLookup {
    const store = new StoreReads(openReadModel(ref.file, { readonly: true, store: keysStoreSchema }));
    if (ref.predecessor === null) return new KeyLookup(store, null, ref.commits);
    try {
      const predecessor = openReadModel(ref.predecessor, {
        readonly: true,
        anyProjectionVersion: true,
        store: keysStoreSchema,
      });
      return new KeyLookup(store, new StoreReads(predecessor), ref.commits);
    } catch (error) {
      store.db.close();
      throw error;
    }
  }

  /** A lookup in a database that holds the keys table, remembering nothing (tests, one-file tools). */
  static of(db: ReadModelDatabase): KeyLookup {
    return new KeyLookup(new StoreReads(db), null, null);
  }

  /** The organization of an active key with this SHA-256, or null: unknown, revoked or malformed. */
  orgOfKeyHash(keySha256: string): number | null {
    if (this.commits === null) return this.read(keySha256);
    const before = settledCount(this.commits);
    // A commit may be under way: nothing remembered is used, nothing read is remembered. What was
    // remembered before it is dropped at the first lookup after it, which finds another count.
    if (before === null) return this.read(keySha256);
    if (before === this.rememberedAt) {
      const known = this.remembered.get(keySha256);
      if (known !== undefined) return known;
    } else {
      this.remembered.clear();
      this.rememberedAt = before;
    }
    const org = this.read(keySha256);
    // Unknown keys are not remembered: a caller sending random keys cannot grow the cache.
    if (
      org !== null &&
      // Stryker disable next-line ConditionalExpression: an answer read across a commit would be remembered under the count before it, which no later lookup finds again: it is dropped unused
      settledCount(this.commits) === before
    ) {
      if (this.remembered.size >= maxRemembered) this.remembered.clear();
      this.remembered.set(keySha256, org);
    }
    return org;
  }

  private read(keySha256: string): number | null {
    const predecessor = this.predecessor;
    if (predecessor === null) {
      return (this.store.activeByHash.get(keySha256) as KeyRow | undefined)?.org_id ?? null;
    }
    for (const [mine, other] of [
      [this.store, predecessor],
      [predecessor, this.store],
    ] as const) {
      const row = mine.activeByHash.get(keySha256) as KeyRow | undefined;
      if (row === undefined) continue;
      const there = other.byId.get(row.key_id) as KeyRow | undefined;
      if (there === undefined || !supersedes(stampOf(there), stampOf(row))) return row.org_id;
    }
    return null;
  }

  close(): void {
    this.store.db.close();
    this.predecessor?.db.close();
  }
}

/** The API's reads from one database that holds the orders and the keys tables (tests, benchmarks, tools). */
export function apiReadsOfOneFile(reader: ReadModelReader): ApiReads {
  const keys = KeyLookup.of(reader.db);
  return readsOf(() => ({ served: reader, keys }));
}
