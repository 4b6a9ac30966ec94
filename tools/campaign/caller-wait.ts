/**
 * Waiting requests (docs/api.md "Waiting for a change"), asked by the campaign's caller
 * (`caller.ts`) with the newest position it has: an organization's full first page read for its
 * tag, then the same request with `If-None-Match: <tag>` and `Prefer: wait=N` (1–3 s), while a
 * change of that page is published (usually) or nothing is.
 *
 * - A 200 has a tag other than the one presented, a position at least the one presented, and a
 *   page no older than anything the caller saw (`Caller.take`, `Invariants.orders`).
 * - A 304 carries the presented tag and a position at least the one presented; held
 *   (`Preference-Applied: wait=N`), it came no sooner than N s after it was asked.
 * - Never a 304 once the answer changed. Two checks, each sound on its own:
 *   - the change published during the wait (a new title of an order the tagged page shows, or a
 *     new listed order) was not in the tagged page, read before it existed; an answer whose position
 *     has applied its record differs from that page (the order shows the new title or is gone, or
 *     the new order is listed), so its tag differs: a 304 there is a violation, and a 200 there
 *     must show the change;
 *   - a 304 carrying position P says the answer at P has the presented tag: the same replica asked
 *     at once for the same query presenting P must answer with that tag if it answers at P itself
 *     (a position is one state of the model: the same data, the same tag). Answered beyond P, it
 *     may have moved on; answered from another model file (`CURRENT` moved meanwhile), its tags
 *     may be made otherwise: not compared.
 * - Woken by the change, not by the end of the wait: while it waits, another request of the same
 *   replica looks every 100 ms whether its position has applied the change. Once one has, the held
 *   request must be answered within `wakeSlackMs` (a watcher also looks for a new file once a
 *   second); a 200 that comes later was never woken, only read again at its end.
 */
import { ModelFiles } from '../../src/read-model/files.js';
import type { Caller, HeadersAnswer } from './caller.js';
import type { Replica } from './cluster.js';
import type { Invariants } from './invariants.js';
import type { Oracle } from './oracle.js';
import { coversRecord, samePosition, givenPosition, type AckedRecord } from './positions.js';
import { getWith } from './probe.js';
import type { Random } from './random.js';
import { organizations, titleTick, type Draw, type World } from './world.js';

export interface WaitCounts {
  asked: number;
  /** 200s after the wait (held until the tag moved, or at once: the tag no longer current) */
  changed: number;
  /** 304s: after the wait, or at once past a bound */
  notModified: number;
  /** answers held (`Preference-Applied`) */
  held: number;
  /** 304s followed at once by the same query at their position, answered at that very position */
  samePosition: number;
  /** answers whose position had applied the change published during their wait */
  changeCovered: number;
  /** 503s: a replica that had not reached the caller's position */
  notReached: number;
  /** held 200s after a change published during their wait, watched by another request for a prompt wake */
  wakeChecked: number;
}

export interface WaitHost {
  replicas: readonly Replica[];
  world: World;
  oracle: Oracle;
  invariants: Invariants;
  caller: Caller;
  random: Random;
  brokerUp: () => boolean;
  /** publishes a draw of at most one event per topic: where each event's record lies */
  publishAcked: (draw: Draw) => Promise<AckedRecord[]>;
}

interface Row {
  id: number;
  press_release_title: string;
}

/** A change of the tagged page published during the wait, and what an answer that applied it shows. */
interface Change {
  what: string;
  /** its records: an answer has applied the change once its position covers every one */
  records: AckedRecord[];
  /** a problem when `rows` (an answer that applied the change) do not show it, else null */
  shownIn: (rows: readonly Row[]) => string | null;
}

const invariant = 'no 304 once the answer changed';
/** How late after its change is seen applied a held request may still be answered. */
const wakeSlackMs = 1200;

export class CallerWaits {
  readonly counts: WaitCounts = {
    asked: 0,
    changed: 0,
    notModified: 0,
    held: 0,
    samePosition: 0,
    changeCovered: 0,
    notReached: 0,
    wakeChecked: 0,
  };

  constructor(private readonly host: WaitHost) {}

  /** Two waits, one while a change is published (the broker up) and one while nothing is, in a random order. */
  async wait(): Promise<string> {
    const changeFirst = this.host.random.chance(0.5);
    const first = await this.once(changeFirst);
    return `${first}; ${await this.once(!changeFirst)}`;
  }

  private async once(withChange: boolean): Promise<string> {
    const { random, invariants } = this.host;
    const running = this.host.replicas.filter((r) => r.running);
    if (running.length === 0) return 'no replica running';
    const replica = random.pick(running);
    const org = random.pick(organizations);
    const name = `caller waiting via ${replica.name}`;
    const url = replica.apiUrl('/orders?limit=200');
    const tagged = await this.ask(name, org, url, {});
    if (tagged === null || tagged.status !== 200)
      return `organization ${org}'s page from ${replica.name}: ${tagged?.status ?? 'no answer'}, no wait`;
    const tag = tagged.headers.etag;
    if (typeof tag !== 'string') {
      invariants.violate(
        name,
        'waiting for a change',
        `organization ${org}'s page answered 200 without ETag`,
      );
      return `organization ${org}'s page from ${replica.name} had no tag`;
    }
    const rows = (tagged.body as { data: Row[] }).data;
    const seconds = random.int(1, 3);
    const publishing = withChange && this.host.brokerUp();
    this.counts.asked += 1;
    const servedBefore = servedFile(replica);
    const sentAt = performance.now();
    const held = this.ask(name, org, url, { 'if-none-match': tag, prefer: `wait=${seconds}` }, seconds);
    let change: Change | null = null;
    const timing: { answeredAt: number | null } = { answeredAt: null };
    void held.then(() => (timing.answeredAt = performance.now()));
    let seenAt: Promise<number | null> = Promise.resolve(null);
    if (publishing) {
      await sleep(random.int(50, seconds * 1000 - 400));
      change = await this.change(org, rows);
      const records = change?.records;
      if (records !== undefined)
        seenAt = this.seenApplied(org, url, records, () => timing.answeredAt !== null);
    }
    const answer = await held;
    const took = Math.round(performance.now() - sentAt);
    const seen = await seenAt;
    const said = `a wait of ${seconds} s at ${replica.name} for organization ${org}'s page${change === null ? '' : ` while ${change.what}`}`;
    if (answer === null) return `${said}: no answer`;
    if (answer.status !== 200 && answer.status !== 304) return `${said}: ${answer.status}`;
    const applied = answer.headers['preference-applied'];
    if (applied !== undefined) {
      this.counts.held += 1;
      if (applied !== `wait=${seconds}`)
        invariants.violate(
          name,
          'waiting for a change',
          `Prefer: wait=${seconds} applied as ${String(applied)}`,
        );
    }
    const given = givenPosition(answer.headers['x-read-position'], null);
    const covered =
      change !== null && 'position' in given && change.records.every((r) => coversRecord(given.position, r));
    if (covered) this.counts.changeCovered += 1;
    if (answer.status === 200) {
      this.counts.changed += 1;
      if (answer.headers.etag === tag)
        invariants.violate(
          name,
          'waiting for a change',
          `a 200 after a wait carries the tag presented, ${tag}`,
        );
      const problem = covered ? change?.shownIn((answer.body as { data: Row[] }).data) : null;
      if (problem !== null && problem !== undefined)
        invariants.violate(name, 'a change within the position is shown', `${said}: ${problem}`);
      if (applied !== undefined && change !== null) {
        // watched: answered before the watcher saw its change applied, or within the slack after
        this.counts.wakeChecked += 1;
        const late = seen === null || timing.answeredAt === null ? 0 : Math.round(timing.answeredAt - seen);
        if (late > wakeSlackMs)
          invariants.violate(
            name,
            'a held request is woken by its change',
            `${said}: answered ${late} ms after another request saw the change applied`,
          );
      }
      return `${said}: 200 after ${took} ms${applied === undefined ? ' (at once)' : ''}`;
    }
    this.counts.notModified += 1;
    if (answer.headers.etag !== tag)
      invariants.violate(
        name,
        'waiting for a change',
        `a 304 carries ${String(answer.headers.etag)}, not the tag presented (${tag})`,
      );
    if (applied !== undefined && took < seconds * 1000 - 50)
      invariants.violate(
        name,
        'waiting for a change',
        `held for wait=${seconds}, a 304 came after ${took} ms`,
      );
    if (covered)
      invariants.violate(
        name,
        invariant,
        `${said}: a 304 with the tag of a page read before the change, at a position (${String(answer.headers['x-read-position'])}) that has applied it (${change?.records.map((r) => `${r.topic}[${r.partition}] offset ${r.offset}`).join(', ')})`,
      );
    return `${said}: 304 after ${took} ms; ${await this.atSamePosition(name, org, url, answer, () => servedFile(replica) === servedBefore)}`;
  }

  /** The caller's request for `org`'s page with `extra` headers, its answer taken by the caller. */
  private async ask(
    name: string,
    org: number,
    url: string,
    extra: Record<string, string>,
    waitSeconds = 0,
  ): Promise<HeadersAnswer | null> {
    const presented = this.host.caller.newest;
    const answer = await getWith(
      url,
      { ...this.host.caller.headers(org), ...extra },
      waitSeconds * 1000 + 5000,
    );
    if (answer === null) return null;
    if (this.host.caller.take(name, org, answer, presented) === 'notReached') this.counts.notReached += 1;
    return answer;
  }

  /** After a 304 at P: the same query at once on the same replica, presenting P (the caller's newest). */
  private async atSamePosition(
    name: string,
    org: number,
    url: string,
    notModified: HeadersAnswer,
    sameFile: () => boolean,
  ): Promise<string> {
    const at = givenPosition(notModified.headers['x-read-position'], null);
    if (!('position' in at)) return 'no position to ask at';
    const again = await this.ask(name, org, url, {});
    if (again === null || again.status !== 200) return `then ${again?.status ?? 'no answer'} at its position`;
    const now = givenPosition(again.headers['x-read-position'], null);
    if (!('position' in now) || !samePosition(now.position, at.position))
      return 'then answered beyond its position';
    // another file (a projection version, a rebuild) may tag the same data otherwise
    if (!sameFile()) return 'then answered at its position from another model file: not compared';
    this.counts.samePosition += 1;
    if (again.headers.etag !== notModified.headers.etag)
      this.host.invariants.violate(
        name,
        invariant,
        `a 304 with ${String(notModified.headers.etag)} at position ${at.token}, and the same query answered at that same position with ${String(again.headers.etag)}`,
      );
    return 'then the same tag at the same position';
  }

  /**
   * When another request of the same replica (`url`; no position presented, not the caller's) first answered at a
   * position that has applied `records`: looked at every 100 ms until the held request is answered.
   * Null when none did before it was.
   */
  private async seenApplied(
    org: number,
    url: string,
    records: readonly AckedRecord[],
    answered: () => boolean,
  ): Promise<number | null> {
    const headers = { authorization: `Bearer ${this.host.world.permanentKey(org)}` };
    while (!answered()) {
      const answer = await getWith(url, headers, 2000);
      const at = performance.now();
      if (answered()) return null;
      if (answer?.status === 200) {
        const given = givenPosition(answer.headers['x-read-position'], null);
        if ('position' in given && records.every((r) => coversRecord(given.position, r))) return at;
      }
      await sleep(100);
    }
    return null;
  }

  /** Publishes a change of `org`'s page: a new title of an order it shows, or a new order. */
  private async change(org: number, rows: readonly Row[]): Promise<Change | null> {
    const { world, oracle, random } = this.host;
    const shown = rows.filter((row) => titleTick(row.press_release_title) !== null);
    if (shown.length > 0 && random.chance(0.6)) {
      const id = random.pick(shown).id;
      const draw = world.retitle(id);
      const records = await this.host.publishAcked(draw);
      const title = (draw.events[0]?.data as { press_release_title?: string }).press_release_title;
      if (records.length !== 1 || title === undefined) return null;
      return {
        what: `order ${id} was retitled ${title}`,
        records,
        shownIn: (after) => {
          const row = after.find((r) => r.id === id);
          return row === undefined || row.press_release_title === title
            ? null
            : `order ${id} shows ${row.press_release_title}, not ${title}`;
        },
      };
    }
    const draw = world.newOrdersOf(org, 1);
    const created = draw.events.find((e) => e.type === 'order.created');
    if (created?.type !== 'order.created' || created.data.organization_id !== org) {
      if (draw.events.length > 0) await this.host.publishAcked(draw);
      return null;
    }
    const id = created.data.order_id;
    // with a status published before it (`World.createOrder`): once both are applied, the order is
    // as the oracle has it, listed or not
    const records = await this.host.publishAcked(draw);
    if (records.length !== draw.events.length || !oracle.ordersOf(org).some((o) => o.id === id)) return null;
    return {
      what: `order ${id} was created`,
      records,
      shownIn: (after) => (after.some((r) => r.id === id) ? null : `new order ${id} is not listed`),
    };
  }
}

/** The model file the replica's `CURRENT` names: it changes at every switch, and never back. */
function servedFile(replica: Replica): string | null {
  return new ModelFiles(replica.dataDir).currentFile();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
