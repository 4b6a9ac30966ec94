/**
 * Cursor walks (docs/api.md "Cursors: pages that survive inserts"): an organization's orders walked
 * by the `next` links from the first page, a small `limit` a page, each page asked of any running
 * replica (as a balancer would send it) presenting the newest position the walk was given, while
 * orders are created between pages (and now and then other facts: deletions, status changes).
 *
 * - No order twice in one walk, and the walk only goes down the list: every order shown comes after
 *   the one before it (`created_at` descending, then `id`), since a cursor names the last one shown
 *   and an order's `created_at` only moves up (a re-creation is newer).
 * - None missed that existed when the walk began: its full listing read first (one page of 200: an
 *   organization has at most 150 orders) at position P0. An order of it is held to be seen when no
 *   fact touching its listing (creation, deletion, status) was published during the walk, and the
 *   oracle still lists it at the end with the same `created_at`; and either P0 had read every
 *   partition up to its end when the walk began (so the replica had applied every fact published
 *   before: nothing pending can unlist it meanwhile), or it is an order of the insert-only
 *   organization walked with `status=all` (never deleted, never unlisted).
 * - Each answer's position is at least the one presented; a 503 with Retry-After is retried on a
 *   replica, a few times, then the walk ends (undecided: nothing held missed).
 */
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import type { Replica } from './cluster.js';
import type { Invariants } from './invariants.js';
import type { Oracle } from './oracle.js';
import { covers, givenPosition, topicIdOf } from './positions.js';
import { getWith } from './probe.js';
import type { Random } from './random.js';
import { insertOnlyOrg, organizations, type Draw, type World } from './world.js';
import type { RequiredPosition } from '../../src/http/position.js';

export interface WalkCounts {
  walks: number;
  /** walks that reached a page without `next` */
  complete: number;
  pages: number;
  /** orders created in the walked organization during walks */
  inserted: number;
  /** orders held to be seen by a complete walk */
  heldSeen: number;
  /** walks begun at a position that had not read every partition to its end */
  unsettled: number;
  /** 503s with Retry-After */
  notReached: number;
}

export interface WalkHost {
  replicas: readonly Replica[];
  world: World;
  oracle: Oracle;
  invariants: Invariants;
  random: Random;
  brokerUp: () => boolean;
  publish: (draw: Draw) => Promise<void>;
  /** the end offset of every partition of the orders model's topics, by topic name (null: unknown) */
  endOffsets: () => Promise<Map<string, number[]> | null>;
}

interface Row {
  id: number;
  order_status: string;
  created_at: string;
}

type Status = (typeof ORDER_STATUS_FILTERS)[number];
/** `all` three times as often as each status. */
const statusWeights = Object.fromEntries(
  ORDER_STATUS_FILTERS.map((status) => [status, status === 'all' ? 3 : 1]),
) as Record<Status, number>;

const prefix = '/api/external-api/v1';
const maxPages = 200;

export class CursorWalks {
  readonly counts: WalkCounts = {
    walks: 0,
    complete: 0,
    pages: 0,
    inserted: 0,
    heldSeen: 0,
    unsettled: 0,
    notReached: 0,
  };
  /** the newest position the current walk was given */
  private position: string | null = null;

  constructor(private readonly host: WalkHost) {}

  async walk(): Promise<string> {
    const { random, world, oracle } = this.host;
    const org = random.pick(organizations);
    const status = random.weighted<Status>(statusWeights);
    const limit = random.int(2, 12);
    this.position = null;
    const said = `a cursor walk of organization ${org}'s orders (status=${status}, limit=${limit})`;
    const start = await this.startListing(org, status);
    if (start === null) return `${said}: no listing to begin with`;
    this.counts.walks += 1;
    if (!start.settled) this.counts.unsettled += 1;
    const touched = new Set<number>();
    const seen = new Set<number>();
    let last: Row | null = null;
    let path: string | null = `/orders?limit=${limit}&status=${status}`;
    let pages = 0;
    let inserted = 0;
    while (path !== null && pages < maxPages) {
      const got = await this.page(path, org);
      if (got === null) return `${said}: ended after ${pages} pages (no answer at its position)`;
      pages += 1;
      this.counts.pages += 1;
      const name = `cursor walk via ${got.replica.name}`;
      for (const row of got.rows) {
        this.check(name, org, status, row, seen, last);
        seen.add(row.id);
        last = row;
      }
      path = nextOf(got.link);
      if (path !== null && !path.includes('cursor='))
        this.host.invariants.violate(
          name,
          'a cursor walk goes down the list',
          `a next link not by cursor: ${path}`,
        );
      if (path !== null && this.host.brokerUp() && random.chance(0.6)) {
        const draw = random.chance(0.8)
          ? world.newOrdersOf(org, random.int(1, 3))
          : world.draw(random.int(3, 10), false);
        await this.host.publish(draw);
        for (const event of draw.events) {
          if (event.type === 'order.created' && event.data.organization_id === org) {
            inserted += 1;
            this.counts.inserted += 1;
          }
          if (
            event.type === 'order.created' ||
            event.type === 'order.deleted' ||
            event.type === 'order.status_changed'
          )
            touched.add(event.data.order_id);
        }
      }
    }
    if (path !== null) return `${said}: stopped after ${pages} pages`;
    this.counts.complete += 1;
    let held = 0;
    for (const [id, createdAt] of start.rows) {
      if (touched.has(id)) continue;
      const now = oracle.ordersOf(org, status).find((o) => o.id === id);
      if (now?.created_at !== createdAt) continue;
      if (!start.settled && !(status === 'all' && org === insertOnlyOrg && world.classOf(id) === 'A'))
        continue;
      held += 1;
      if (!seen.has(id))
        this.host.invariants.violate(
          `cursor walk of organization ${org}`,
          'a cursor walk misses nothing',
          `order ${id} (created ${createdAt}), listed at ${start.replica} when the walk (status=${status}, limit=${limit}) began and untouched since, was not shown in ${pages} pages`,
        );
    }
    this.counts.heldSeen += held;
    return `${said}: ${pages} pages, ${seen.size} orders shown, ${inserted} created meanwhile; ${held} of the ${start.rows.size} listed at its start held to be seen${start.settled ? '' : ' (begun behind the end of the log)'}`;
  }

  private check(
    name: string,
    org: number,
    status: Status,
    row: Row,
    seen: Set<number>,
    last: Row | null,
  ): void {
    const { invariants, oracle } = this.host;
    if (oracle.orgOfOrder(row.id) !== org)
      invariants.violate(
        name,
        'isolation',
        `order ${row.id} of organization ${oracle.orgOfOrder(row.id)} in organization ${org}'s walk`,
      );
    if (status !== 'all' && row.order_status !== status)
      invariants.violate(
        name,
        'a cursor walk goes down the list',
        `a ${row.order_status} order ${row.id} in a walk of status=${status}`,
      );
    if (seen.has(row.id)) {
      invariants.violate(
        name,
        'a cursor walk shows no order twice',
        `order ${row.id} shown again (created ${row.created_at})`,
      );
      return;
    }
    if (
      last !== null &&
      !(row.created_at < last.created_at || (row.created_at === last.created_at && row.id < last.id))
    )
      invariants.violate(
        name,
        'a cursor walk goes down the list',
        `order ${row.id} (created ${row.created_at}) shown after order ${last.id} (created ${last.created_at})`,
      );
  }

  /** The organization's full listing, read again (3 s at most) until its position has read every partition to its end. */
  private async startListing(
    org: number,
    status: Status,
  ): Promise<{ rows: Map<number, string>; settled: boolean; replica: string } | null> {
    const ends = this.host.brokerUp() ? await this.host.endOffsets() : null;
    const need = new Map([...(ends ?? [])].map(([topic, offsets]) => [topicIdOf(topic), offsets]));
    const deadline = Date.now() + 3000;
    for (;;) {
      const got = await this.page(`/orders?limit=200&status=${status}`, org);
      if (got === null) return null;
      const settled = ends !== null && covers(got.position, need);
      if (settled || Date.now() > deadline) {
        // a listing not whole (more than one page: never at the campaign's scale) holds nothing to be seen
        const whole = got.total === got.rows.length;
        const rows = new Map(whole ? got.rows.map((row) => [row.id, row.created_at]) : []);
        return { rows, settled, replica: got.replica.name };
      }
      await sleep(300);
    }
  }

  /** One page, from a running replica presenting the walk's position; retried a few times, else null. */
  private async page(
    path: string,
    org: number,
  ): Promise<{
    rows: Row[];
    total: number;
    link: string;
    replica: Replica;
    position: RequiredPosition;
  } | null> {
    const { invariants, world, random } = this.host;
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const running = this.host.replicas.filter((r) => r.running);
      if (running.length === 0) return null;
      const replica = random.pick(running);
      const name = `cursor walk via ${replica.name}`;
      const presented = this.position;
      const headers: Record<string, string> = { authorization: `Bearer ${world.permanentKey(org)}` };
      if (presented !== null) headers['x-read-position'] = presented;
      const answer = await getWith(replica.apiUrl(path), headers, 5000);
      const notReached = answer?.status === 503 && answer.headers['retry-after'] !== undefined;
      if (notReached) this.counts.notReached += 1;
      if (answer === null || notReached) {
        await sleep(300);
        continue;
      }
      invariants.permanentKeyStatus(
        name,
        `organization ${org}'s page ${path}`,
        answer,
        'a cursor walk goes down the list',
      );
      if (answer.status !== 200) return null;
      const given = givenPosition(answer.headers['x-read-position'], presented);
      if ('problem' in given) {
        invariants.violate(name, 'never older for a caller', `${path}: ${given.problem}`);
        return null;
      }
      this.position = given.token;
      const link = answer.headers.link;
      const { data: rows, total } = answer.body as { data: Row[]; total: number };
      return { rows, total, link: typeof link === 'string' ? link : '', replica, position: given.position };
    }
    return null;
  }
}

/** The `next` target of a Link header, as a path below the API's prefix, or null. */
function nextOf(link: string): string | null {
  const target = /<([^>]*)>;\s*rel="next"/.exec(link)?.[1];
  if (target === undefined) return null;
  return target.startsWith(prefix) ? target.slice(prefix.length) : target;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
