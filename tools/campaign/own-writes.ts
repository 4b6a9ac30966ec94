/**
 * "A position a publisher builds" (docs/api.md): a new order published through the campaign's
 * producer, then every running replica asked for its organization's page presenting
 * `X-Read-Position: topic=…;partition=…;offset=…` for each record of it, as the producer got them
 * back (its creation, and a status published before it now and then, on another topic).
 *
 * A 200 has applied those records, and only they decide a new order: it must show the order exactly
 * as the oracle has it, or not at all when the oracle does not list it (created with an unlisted
 * status); its position must be at least the one built; and, a replica never going back, its page
 * is held to what that replica showed before (`Invariants.orders`). A 503 with Retry-After (not
 * reached within READ_POSITION_WAIT_MS) is allowed, asked again once after it; a stopped replica
 * is skipped; a 400 is a violation (the position is one the producer got back), as is any other 4xx.
 */
import type { Replica } from './cluster.js';
import type { Invariants, Memory } from './invariants.js';
import type { Oracle } from './oracle.js';
import { builtPosition, givenPosition, type AckedRecord } from './positions.js';
import { getWith } from './probe.js';
import type { Random } from './random.js';
import { organizations, type Draw, type World } from './world.js';

export interface OwnWriteCounts {
  /** orders published and asked for by their built position */
  published: number;
  /** 200s checked to show the order as published */
  held: number;
  /** 503s with Retry-After: a replica that had not applied the records within its wait */
  notReached: number;
  /** replicas stopped, or not answering, when asked */
  skipped: number;
}

export interface OwnWriteHost {
  replicas: readonly Replica[];
  world: World;
  oracle: Oracle;
  invariants: Invariants;
  random: Random;
  publishAcked: (draw: Draw) => Promise<AckedRecord[]>;
  /** what the invariants remember of a replica */
  memoryOf: (replica: Replica) => Memory;
}

const invariant = 'a built position holds the write';

export class OwnWrites {
  readonly counts: OwnWriteCounts = { published: 0, held: 0, notReached: 0, skipped: 0 };

  constructor(private readonly host: OwnWriteHost) {}

  /** One to three new orders, one after the other, each asked for at its built position. */
  async ownWrites(): Promise<string> {
    const said: string[] = [];
    for (let i = this.host.random.int(1, 3); i > 0; i -= 1) said.push(await this.ownWrite());
    return said.join('; ');
  }

  private async ownWrite(): Promise<string> {
    const { world, oracle, random } = this.host;
    const draw = world.newOrdersOf(random.pick(organizations), 1);
    const created = draw.events.find((e) => e.type === 'order.created');
    if (created?.type !== 'order.created') return 'no room for a new order';
    const records = await this.host.publishAcked(draw);
    if (records.length !== draw.events.length)
      return `order ${created.data.order_id} published, not all acknowledged`;
    this.counts.published += 1;
    const org = created.data.organization_id;
    const id = created.data.order_id;
    const position = builtPosition(records);
    const expected = oracle.ordersOf(org).find((o) => o.id === id);
    const outcomes: string[] = [];
    for (const replica of [...this.host.replicas].sort(() => (random.chance(0.5) ? 1 : -1)))
      outcomes.push(`${replica.name} ${await this.ask(replica, org, id, position, expected)}`);
    return `order ${id} of organization ${org} (${expected === undefined ? 'unlisted' : 'listed'}) published, asked at X-Read-Position: ${position}: ${outcomes.join(', ')}`;
  }

  private async ask(
    replica: Replica,
    org: number,
    id: number,
    position: string,
    expected: object | undefined,
  ): Promise<string> {
    const { invariants } = this.host;
    const name = `publisher via ${replica.name}`;
    for (let attempt = 0; ; attempt += 1) {
      if (!replica.running) {
        this.counts.skipped += 1;
        return 'stopped';
      }
      const headers = {
        authorization: `Bearer ${this.host.world.permanentKey(org)}`,
        'x-read-position': position,
      };
      const answer = await getWith(replica.apiUrl('/orders?limit=200'), headers, 5000);
      if (answer === null) {
        this.counts.skipped += 1;
        return 'no answer';
      }
      if (answer.status === 503 && answer.headers['retry-after'] !== undefined) {
        this.counts.notReached += 1;
        if (attempt > 0) return '503 twice';
        await sleep(1000 * Number(answer.headers['retry-after'] ?? 1));
        continue;
      }
      invariants.permanentKeyStatus(name, `organization ${org}'s page at ${position}`, answer, invariant);
      if (answer.status !== 200) return String(answer.status);
      const given = givenPosition(answer.headers['x-read-position'], position);
      if ('problem' in given) invariants.violate(name, invariant, `at ${position}: ${given.problem}`);
      const body = answer.body as { data: { id: number; press_release_title: string }[]; total: number };
      const shown = body.data.find((row) => row.id === id);
      if (expected === undefined && shown !== undefined)
        invariants.violate(
          name,
          invariant,
          `order ${id}, created unlisted, is listed at ${position}: ${JSON.stringify(shown)}`,
        );
      else if (expected !== undefined && JSON.stringify(shown) !== JSON.stringify(expected))
        invariants.violate(
          name,
          invariant,
          `a 200 at ${position}, which names every record of order ${id}, shows ${shown === undefined ? 'no such order' : JSON.stringify(shown)}; published: ${JSON.stringify(expected)}`,
        );
      invariants.orders(replica.name, this.host.memoryOf(replica), org, body);
      this.counts.held += 1;
      return '200';
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
