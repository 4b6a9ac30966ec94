/**
 * The promises, checked from outside on every answer a replica gives:
 * - never older: a title's tick never falls; an order seen never vanishes without a deletion
 *   published after it; a deleted order never comes back with a title older than its deletion; the
 *   insert-only organization's total never falls; a key seen valid is never refused before its
 *   revocation;
 * - revoked stays refused: a key seen valid and then refused after its revocation never answers 200
 *   again, through any request thread, to a request sent after the refusal was read;
 * - isolation: no answer holds an order of another organization;
 * - no answer is a 5xx.
 * The revocation bound, liveness and convergence are checked by the campaign around these.
 */
import type { Oracle } from './oracle.js';
import { insertOnlyOrg, titleTick, type World } from './world.js';

export interface Violation {
  step: number;
  replica: string;
  invariant: string;
  detail: string;
}

interface OrderRow {
  id: number;
  press_release_title: string;
}

/** What one replica (one incarnation of its data directory) has shown so far. */
export class Memory {
  readonly titleTick = new Map<number, number>();
  /** orders seen gone after a deletion: the tick a title must pass to show again */
  readonly deletedAt = new Map<number, number>();
  readonly keySeen = new Map<string, 'valid' | 'refused'>();
  /** revoked keys seen refused after answering 200: when the refusal was read, and through what */
  readonly refusedAt = new Map<string, { at: number; via: string }>();
  insertOnlyTotal = 0;
}

export class Invariants {
  readonly violations: Violation[] = [];
  step = 0;

  constructor(
    private readonly world: World,
    private readonly oracle: Oracle,
    /** key ids whose revocation the broker has acknowledged */
    private readonly revokedAcked: ReadonlySet<string>,
  ) {}

  /** Records a violation, once: the same one seen again by a later look adds nothing. */
  violate(replica: string, invariant: string, detail: string): void {
    const same = (v: Violation): boolean =>
      v.replica === replica && v.invariant === invariant && v.detail === detail;
    if (!this.violations.some(same)) this.violations.push({ step: this.step, replica, invariant, detail });
  }

  status(replica: string, what: string, status: number): void {
    if (status >= 500) this.violate(replica, 'no 5xx', `${what} answered ${status}`);
  }

  /**
   * A request of a permanent key with nothing wrong in it (the rate limit is off): a 400 is
   * `refused` (its own invariant); any other 4xx is a violation too, never a step that just ends.
   */
  permanentKeyStatus(
    replica: string,
    what: string,
    answer: { status: number; body: unknown },
    refused: string,
  ): void {
    this.status(replica, what, answer.status);
    if (answer.status < 400 || answer.status >= 500) return;
    this.violate(
      replica,
      answer.status === 400 ? refused : 'a permanent key is answered',
      `${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`,
    );
  }

  /** A full first page (limit 200) of `org`'s orders, as the replica answered it. */
  orders(replica: string, memory: Memory, org: number, body: { data: OrderRow[]; total: number }): void {
    const seen = new Set<number>();
    for (const row of body.data) {
      seen.add(row.id);
      const owner = this.oracle.orgOfOrder(row.id);
      if (owner !== org) {
        this.violate(
          replica,
          'isolation',
          `order ${row.id} of organization ${owner} in organization ${org}'s page`,
        );
        continue;
      }
      const tick = titleTick(row.press_release_title);
      if (tick === null) {
        this.violate(
          replica,
          'nothing lost',
          `order ${row.id} has a title no fact set: ${row.press_release_title}`,
        );
        continue;
      }
      const before = memory.titleTick.get(row.id);
      if (before !== undefined && tick < before)
        this.violate(
          replica,
          'never older',
          `order ${row.id}'s title went back from rev ${before} to rev ${tick}`,
        );
      const deleted = memory.deletedAt.get(row.id);
      if (deleted !== undefined && tick <= deleted)
        this.violate(
          replica,
          'never older',
          `order ${row.id}, seen deleted (tick ${deleted}), came back with rev ${tick}`,
        );
      memory.titleTick.set(row.id, Math.max(before ?? 0, tick));
    }
    for (const [id, tick] of memory.titleTick) {
      if (seen.has(id) || this.oracle.orgOfOrder(id) !== org) continue;
      const cls = this.world.classOf(id);
      if (cls === 'C') continue;
      const deletion = this.world.deletionsOf(id).find((d) => d > tick);
      if (deletion === undefined) {
        this.violate(
          replica,
          'never older',
          `order ${id} (seen at rev ${tick}) vanished with no deletion after it`,
        );
      } else {
        memory.deletedAt.set(id, Math.max(memory.deletedAt.get(id) ?? 0, deletion));
        memory.titleTick.delete(id);
      }
    }
    if (org === insertOnlyOrg) {
      if (body.total < memory.insertOnlyTotal)
        this.violate(
          replica,
          'never older',
          `organization ${org}'s total fell from ${memory.insertOnlyTotal} to ${body.total}`,
        );
      memory.insertOnlyTotal = Math.max(memory.insertOnlyTotal, body.total);
    }
  }

  /**
   * What the replica answered for a key (200 or 401), sent at `sentAt` and read at `receivedAt`
   * (performance.now) through `via` (a new connection, or a request thread's own).
   */
  key(
    replica: string,
    memory: Memory,
    keyId: string,
    status: number,
    probe: { sentAt: number; receivedAt: number; via: string },
  ): void {
    const seen = memory.keySeen.get(keyId);
    const revoked = this.revokedAcked.has(keyId);
    if (status === 200) {
      const refused = memory.refusedAt.get(keyId);
      // only a request sent after the refusal was read: two answers in flight at once are not ordered
      if (refused !== undefined && probe.sentAt > refused.at)
        this.violate(
          replica,
          'revoked stays refused',
          `key ${keyId} answered 200 through ${probe.via}, asked ${Math.round(probe.sentAt - refused.at)} ms after ${refused.via} had refused it following its revocation`,
        );
      else if (seen !== 'refused') memory.keySeen.set(keyId, 'valid');
    } else if (status === 401) {
      // A 401 before the replica has applied the key's issue says nothing: only valid → refused counts.
      if (revoked) {
        if (seen === 'valid') {
          memory.keySeen.set(keyId, 'refused');
          memory.refusedAt.set(keyId, { at: probe.receivedAt, via: probe.via });
        }
      } else if (seen === 'valid')
        this.violate(
          replica,
          'never older',
          `key ${keyId} was refused after answering 200, and it is not revoked`,
        );
    }
  }

  /** An articles answer for an order of another organization. */
  foreignArticles(replica: string, orderId: number, status: number): void {
    if (status !== 404)
      this.violate(
        replica,
        'isolation',
        `order ${orderId}'s articles answered ${status} to another organization`,
      );
  }
}
