/** What a batch does to the digests of what the answers show (`projections/orders/digests.ts`). */
import { digestValue, isZero, xorInto, zeroDigest, type Digest } from '../../projections/orders/digests.js';
import type { ManyRows } from './multi-row-insert.js';

/** A batch's net change to the digests of one table, by id (XOR: the order of the changes is irrelevant). */
export class DigestChanges {
  private readonly changes = new Map<number, Digest>();

  xor(id: number, hash: Digest): void {
    let digest = this.changes.get(id);
    if (digest === undefined) {
      digest = zeroDigest();
      this.changes.set(id, digest);
    }
    xorInto(digest, hash);
  }

  /** Adds the changes that move a digest to `rows`; returns their ids. */
  writeTo(rows: ManyRows): number[] {
    const ids: number[] = [];
    for (const [id, digest] of this.changes) {
      if (isZero(digest)) continue;
      rows.add([id, digestValue(digest)]);
      ids.push(id);
    }
    return ids;
  }
}
