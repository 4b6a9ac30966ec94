/** Asking a replica from outside, over HTTP, and feeding every answer to the invariants. */
import { request } from 'node:http';
import type { Replica } from './cluster.js';
import type { Invariants, Memory } from './invariants.js';
import type { Oracle } from './oracle.js';
import type { Random } from './random.js';
import { organizations, type World } from './world.js';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

export interface Answer {
  status: number;
  body: unknown;
}

/**
 * GET with a bearer key, on a connection of its own (with HTTP_WORKERS > 1 the kernel hands each
 * connection to any of the replica's request threads, so every thread is looked at); null when
 * nothing answers (the process is starting, stopped or frozen).
 */
export function get(url: string, key?: string, timeoutMs = 3000): Promise<Answer | null> {
  return getWith(url, key === undefined ? {} : { authorization: `Bearer ${key}` }, timeoutMs);
}

/** GET with `headers` on a connection of its own; the body parsed when it is JSON, and the headers. */
export function getWith(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<(Answer & { headers: Record<string, string | string[] | undefined> }) | null> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { agent: false, headers, signal: AbortSignal.timeout(timeoutMs) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', () => resolve(null));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: kept as text for the report
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
        });
      },
    );
    req.on('error', () => resolve(null));
    req.end();
  });
}

export class Prober {
  constructor(
    private readonly world: World,
    private readonly oracle: Oracle,
    private readonly invariants: Invariants,
    private readonly random: Random,
    /** ephemeral keys whose revocation the broker has acknowledged */
    private readonly revokedAcked: ReadonlySet<string>,
  ) {}

  /** True when the replica answers /readyz with 200. */
  async ready(replica: Replica): Promise<boolean> {
    const answer = await get(replica.adminUrl('/readyz'), undefined, 2000);
    return answer?.status === 200;
  }

  /** One look at everything the invariants watch; false when the replica did not answer. */
  async look(replica: Replica, memory: Memory): Promise<boolean> {
    const seenOrders = new Map<number, number[]>();
    for (const org of organizations) {
      const sentAt = performance.now();
      const answer = await get(replica.apiUrl('/orders?limit=200'), this.world.permanentKey(org));
      if (answer === null) return false;
      this.invariants.status(replica.name, `organization ${org}'s page`, answer.status);
      const timing = { sentAt, receivedAt: performance.now(), via: 'a new connection' };
      this.invariants.key(replica.name, memory, `perm-${org}`, answer.status, timing);
      if (answer.status !== 200) continue;
      const body = answer.body as { data: { id: number; press_release_title: string }[]; total: number };
      this.invariants.orders(replica.name, memory, org, body);
      seenOrders.set(
        org,
        body.data.map((row) => row.id),
      );
    }
    const keyIds = [...this.world.keys.keys()];
    const watched = new Set(keyIds.slice(-10));
    for (const id of this.revokedAcked) if (memory.keySeen.get(id) !== 'refused') watched.add(id);
    for (const id of watched) {
      const key = this.world.keys.get(id);
      if (key === undefined) continue;
      const sentAt = performance.now();
      const answer = await get(replica.apiUrl('/orders?limit=1'), key.raw);
      if (answer === null) return false;
      this.invariants.status(replica.name, `key ${id}`, answer.status);
      const timing = { sentAt, receivedAt: performance.now(), via: 'a new connection' };
      this.invariants.key(replica.name, memory, id, answer.status, timing);
    }
    for (const [org, ids] of seenOrders) {
      if (ids.length === 0) continue;
      const id = this.random.pick(ids);
      const own = await get(replica.apiUrl(`/orders/${id}/articles`), this.world.permanentKey(org));
      if (own === null) return false;
      this.invariants.status(replica.name, `order ${id}'s articles`, own.status);
      const other = organizations.find((o) => o !== org) ?? org;
      const foreign = await get(replica.apiUrl(`/orders/${id}/articles`), this.world.permanentKey(other));
      if (foreign === null) return false;
      if (foreign.status === 200 || foreign.status === 404)
        this.invariants.foreignArticles(replica.name, id, foreign.status);
    }
    return true;
  }

  /** Every difference between the replica's answers and the oracle's, up to a few. */
  async differences(replica: Replica): Promise<string[]> {
    const found: string[] = [];
    for (const org of organizations) {
      const key = this.world.permanentKey(org);
      for (const status of ORDER_STATUS_FILTERS) {
        const answer = await get(replica.apiUrl(`/orders?limit=200&status=${status}`), key);
        const expected = this.oracle.ordersOf(org, status);
        const want = { data: expected, total: expected.length, limit: 200, offset: 0 };
        if (answer === null) return ['no answer'];
        if (JSON.stringify(answer.body) !== JSON.stringify(want)) {
          found.push(`organization ${org} status=${status}: ${firstDifference(answer.body, want)}`);
        }
      }
      for (const order of this.oracle.ordersOf(org)) {
        const answer = await get(replica.apiUrl(`/orders/${order.id}/articles`), key);
        const want = this.oracle.articlesOf(org, order.id);
        if (answer === null) return ['no answer'];
        if (JSON.stringify(answer.body) !== JSON.stringify(want))
          found.push(`order ${order.id}'s articles: ${firstDifference(answer.body, want)}`);
        if (found.length > 5) return found;
      }
    }
    for (const [id, key] of this.world.keys) {
      const answer = await get(replica.apiUrl('/orders?limit=1'), key.raw);
      const want = this.oracle.orgOfKey(key.raw) === null ? 401 : 200;
      if (answer === null) return ['no answer'];
      if (answer.status !== want) found.push(`key ${id}: ${answer.status}, expected ${want}`);
    }
    return found;
  }
}

function firstDifference(got: unknown, want: unknown): string {
  const a = JSON.stringify(got);
  const b = JSON.stringify(want);
  let i = 0;
  while (i < a.length && a[i] === b[i]) i += 1;
  return `got …${a.slice(Math.max(0, i - 80), i + 120)}… expected …${b.slice(Math.max(0, i - 80), i + 120)}…`;
}
