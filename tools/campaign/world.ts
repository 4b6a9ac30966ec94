/**
 * The campaign's upstream: draws batches of facts (orders, status changes, articles, deletions and
 * re-creations, key issues and revocations, redeliveries, late facts, poison) and remembers what it
 * published, for the invariants that need more than the oracle's end state.
 *
 * Every title names the tick of the fact that set it (`Order 12 rev 340`): the title a model shows
 * is the one of its latest applied title fact, so that tick can only grow as a model applies more.
 */
import type { DomainEvent } from '../../schemas/events.js';
import { streamRoles, type TopicRole } from '../../schemas/streams.js';
import { sha256 } from './oracle.js';
import type { Random } from './random.js';

/** A: never deleted, always listed (its organization's total never falls); B: deleted and re-created; C: unlisted statuses too. */
type OrderClass = 'A' | 'B' | 'C';

interface OrderPlan {
  org: number;
  cls: OrderClass;
  exists: boolean;
  articles: number[];
  /** ticks of its published deletions */
  deletions: number[];
}

export interface Poison {
  role: TopicRole;
  key: string;
  raw: Buffer;
}

export interface Draw {
  events: DomainEvent[];
  poison: Poison[];
  /** key ids revoked in this draw */
  revoked: string[];
}

const origin = Date.UTC(2026, 0, 1);
const listedStatuses = ['publishing', 'publishing_ended', 'finished'];
const otherStatuses = ['draft', 'pending', 'cancelled'];
/** The organization whose orders are never deleted nor unlisted. */
export const insertOnlyOrg = 1;
export const organizations = [1, 2, 3, 4];
const maxOrdersPerOrg = 150;
/** Orders of an aborted transaction: ids no committed fact uses. */
const abortedIdBase = 1_000_000;

export function titleTick(title: string): number | null {
  const match = / rev (\d+)$/.exec(title);
  return match === null ? null : Number(match[1]);
}

export class World {
  private tick = 0;
  private eventSeq = 0;
  private nextOrder = 1;
  private nextArticle = 1;
  private nextKey = 1;
  private abortedSeq = 0;
  readonly orders = new Map<number, OrderPlan>();
  /** ephemeral keys: id → raw key and organization; revoked once at most */
  readonly keys = new Map<string, { raw: string; org: number; revoked: boolean }>();
  private readonly sent: DomainEvent[] = [];
  /** each key's issue as first published, by key id: what the upstream sends again once the log has lost it */
  readonly issues = new Map<string, DomainEvent>();
  /** each revoked key's revocation, by key id: sent again with the issues, or the key would come back */
  readonly revocations = new Map<string, DomainEvent>();

  constructor(
    private readonly seed: number,
    private readonly random: Random,
  ) {}

  /** The never-revoked key each organization is observed with. */
  permanentKey(org: number): string {
    return `campaign-${this.seed}-org-${org}`;
  }

  /** The facts every run starts with: a permanent key per organization. */
  genesis(): DomainEvent[] {
    return organizations.map((org) =>
      this.event('api_key.issued', {
        key_id: `perm-${org}`,
        organization_id: org,
        key_sha256: sha256(this.permanentKey(org)),
      }),
    );
  }

  /** Ticks of the deletions of `orderId` published so far. */
  deletionsOf(orderId: number): readonly number[] {
    return this.orders.get(orderId)?.deletions ?? [];
  }

  classOf(orderId: number): OrderClass | null {
    return this.orders.get(orderId)?.cls ?? null;
  }

  /** A batch of facts, committed as drawn (the caller publishes all of it or aborts all of it). */
  draw(size: number, withPoison: boolean, withRevocation = false): Draw {
    const events: DomainEvent[] = [];
    const revoked: string[] = [];
    for (let i = 0; i < size; i += 1) {
      const kind = this.random.weighted({
        create: 4,
        update: 3,
        late: 1,
        status: 3,
        publish: 4,
        remove: 1,
        delete: 1,
        recreate: 1,
        issue: 1,
        revoke: 1,
        redeliver: 1,
      });
      events.push(...this.fact(kind, revoked));
    }
    if (withRevocation && revoked.length === 0) events.push(...this.fact('revoke', revoked));
    this.sent.push(...events);
    const poison: Poison[] = [];
    if (withPoison) {
      const role = this.random.pick<TopicRole>(streamRoles);
      poison.push({
        role,
        key: String(this.random.int(1, 999)),
        raw: Buffer.from(`{"not json ${this.tick}`),
      });
    }
    return { events, poison, revoked };
  }

  /** New orders, of the insert-only organization while it has room: a loss of them shows at once. */
  newOrders(count: number): Draw {
    const events: DomainEvent[] = [];
    for (let i = 0; i < count; i += 1) events.push(...this.createOrder(insertOnlyOrg));
    this.sent.push(...events);
    return { events, poison: [], revoked: [] };
  }

  /** New orders of `org` while it has room (else of a random organization, or none). */
  newOrdersOf(org: number, count: number): Draw {
    const events: DomainEvent[] = [];
    for (let i = 0; i < count; i += 1) events.push(...this.createOrder(org));
    this.sent.push(...events);
    return { events, poison: [], revoked: [] };
  }

  /** A new title for order `id`: the fact newer than every one before it, so the title it shows. */
  retitle(id: number): Draw {
    this.tick += 1;
    const events = [
      this.event(
        'order.updated',
        { order_id: id, press_release_title: `Order ${id} rev ${this.tick}` },
        this.tick,
      ),
    ];
    this.sent.push(...events);
    return { events, poison: [], revoked: [] };
  }

  /** A new key issued to a random organization, its id and the raw key. */
  issueKey(): { draw: Draw; id: string; raw: string } {
    const events = this.fact('issue', []);
    this.sent.push(...events);
    const id = `eph-${this.nextKey - 1}`;
    return { draw: { events, poison: [], revoked: [] }, id, raw: this.keys.get(id)?.raw ?? '' };
  }

  /** The revocation of key `id` (not revoked before). */
  revokeKey(id: string): Draw {
    const key = this.keys.get(id);
    if (key === undefined || key.revoked) throw new Error(`${id} cannot be revoked`);
    key.revoked = true;
    const events = [this.event('api_key.revoked', { key_id: id })];
    this.revocations.set(id, events[0] as DomainEvent);
    this.sent.push(...events);
    return { events, poison: [], revoked: [id] };
  }

  /**
   * Facts an aborted transaction carries: new orders of every organization and a revocation of each
   * permanent key. If a replica ever applied them, the permanent keys would fail and the pages differ.
   */
  aborted(): DomainEvent[] {
    const events: DomainEvent[] = [];
    for (const org of organizations) {
      this.abortedSeq += 1;
      const id = abortedIdBase + this.abortedSeq;
      events.push(this.created(id, org, 'publishing'));
      events.push(this.event('api_key.revoked', { key_id: `perm-${org}` }));
    }
    return events;
  }

  private fact(kind: string, revoked: string[]): DomainEvent[] {
    const existing = [...this.orders.entries()];
    const pickOrder = (accept: (plan: OrderPlan) => boolean): [number, OrderPlan] | null => {
      const candidates = existing.filter(([, plan]) => accept(plan));
      return candidates.length === 0 ? null : this.random.pick(candidates);
    };
    switch (kind) {
      case 'create':
        return this.createOrder();
      case 'update': {
        const found = pickOrder(() => true);
        if (found === null) return this.createOrder();
        const [id] = found;
        const data: Record<string, unknown> = { order_id: id };
        this.tick += 1;
        if (this.random.chance(0.7)) data['press_release_title'] = `Order ${id} rev ${this.tick}`;
        if (this.random.chance(0.5) || data['press_release_title'] === undefined)
          data['distribution_date'] = this.random.chance(0.3) ? null : this.time(this.tick + 3600);
        return [this.event('order.updated', data, this.tick)];
      }
      case 'late': {
        // An older title fact arriving late: it changes nothing where a newer one was applied.
        const found = pickOrder(() => true);
        if (found === null || this.tick < 2) return [];
        const [id] = found;
        const old = this.random.int(Math.max(1, this.tick - 30), this.tick - 1);
        return [
          this.event('order.updated', { order_id: id, press_release_title: `Order ${id} rev ${old}` }, old),
        ];
      }
      case 'status': {
        const found = pickOrder(() => true);
        if (found === null) return [];
        const [id, plan] = found;
        const status =
          plan.cls === 'C' && this.random.chance(0.4)
            ? this.random.pick(otherStatuses)
            : this.random.pick(listedStatuses);
        return [this.event('order.status_changed', { order_id: id, status })];
      }
      case 'publish': {
        const found = pickOrder(() => true);
        if (found === null) return [];
        const [orderId, plan] = found;
        const reuse = plan.articles.length > 0 && this.random.chance(0.3);
        const articleId = reuse ? this.random.pick(plan.articles) : this.nextArticle++;
        if (!reuse) plan.articles.push(articleId);
        this.tick += 1;
        return [
          this.event(
            'article.published',
            {
              article_id: articleId,
              order_id: orderId,
              article_url: `https://www.site-${articleId % 7}.example/a/${articleId}?v=${this.tick}`,
              website_domain: `site-${articleId % 7}.example`,
              published_at: this.time(this.tick),
            },
            this.tick,
          ),
        ];
      }
      case 'remove': {
        const found = pickOrder((plan) => plan.cls !== 'A' && plan.articles.length > 0);
        if (found === null) return [];
        const [orderId, plan] = found;
        return [
          this.event('article.removed', { article_id: this.random.pick(plan.articles), order_id: orderId }),
        ];
      }
      case 'delete': {
        const found = pickOrder((plan) => plan.cls === 'B' && plan.exists);
        if (found === null) return [];
        const [id, plan] = found;
        this.tick += 1;
        plan.exists = false;
        plan.deletions.push(this.tick);
        return [this.event('order.deleted', { order_id: id }, this.tick)];
      }
      case 'recreate': {
        const found = pickOrder((plan) => plan.cls === 'B' && !plan.exists);
        if (found === null) return [];
        const [id, plan] = found;
        plan.exists = true;
        return [this.created(id, plan.org, this.random.pick(listedStatuses))];
      }
      case 'issue': {
        const id = `eph-${this.nextKey++}`;
        const org = this.random.pick(organizations);
        const raw = `campaign-${this.seed}-${id}`;
        this.keys.set(id, { raw, org, revoked: false });
        return [this.event('api_key.issued', { key_id: id, organization_id: org, key_sha256: sha256(raw) })];
      }
      case 'revoke': {
        const live = [...this.keys.entries()].filter(([, k]) => !k.revoked);
        if (live.length === 0) return [];
        const [id, key] = this.random.pick(live);
        key.revoked = true;
        revoked.push(id);
        const revocation = this.event('api_key.revoked', { key_id: id });
        this.revocations.set(id, revocation);
        return [revocation];
      }
      case 'redeliver':
        // At-least-once delivery: the same fact again, same event id, later offset.
        return this.sent.length === 0 ? [] : [this.random.pick(this.sent)];
      default:
        throw new Error(`unknown fact ${kind}`);
    }
  }

  private createOrder(wanted?: number): DomainEvent[] {
    const countOf = (org: number): number => [...this.orders.values()].filter((p) => p.org === org).length;
    const org =
      wanted !== undefined && countOf(wanted) < maxOrdersPerOrg ? wanted : this.random.pick(organizations);
    const count = countOf(org);
    if (count >= maxOrdersPerOrg) return [];
    const id = this.nextOrder++;
    const cls: OrderClass = org === insertOnlyOrg ? 'A' : this.random.chance(0.3) ? 'C' : 'B';
    this.orders.set(id, { org, cls, exists: true, articles: [], deletions: [] });
    const status =
      cls === 'C' && this.random.chance(0.5)
        ? this.random.pick(otherStatuses)
        : this.random.pick(listedStatuses);
    const created = this.created(id, org, status);
    if (this.random.chance(0.2)) {
      // A later fact about the order published before it (docs/events.md rule 2): kept until it arrives.
      const early = this.event('order.status_changed', {
        order_id: id,
        status:
          cls === 'C'
            ? this.random.pick([...listedStatuses, ...otherStatuses])
            : this.random.pick(listedStatuses),
      });
      return [early, created];
    }
    return [created];
  }

  private created(id: number, org: number, status: string): DomainEvent {
    this.tick += 1;
    return this.event(
      'order.created',
      {
        order_id: id,
        organization_id: org,
        member_id: 100 + org,
        press_release_title: `Order ${id} rev ${this.tick}`,
        status,
        distribution_date: this.random.chance(0.5) ? null : this.time(this.tick + 7200),
        created_at: this.time(this.tick),
      },
      this.tick,
    );
  }

  private time(tick: number): string {
    return new Date(origin + tick * 1000).toISOString();
  }

  private event(type: DomainEvent['type'], data: Record<string, unknown>, tick?: number): DomainEvent {
    if (tick === undefined) this.tick += 1;
    this.eventSeq += 1;
    const event = {
      event_id: `c${this.seed}-${String(this.eventSeq).padStart(7, '0')}`,
      type,
      occurred_at: this.time(tick ?? this.tick),
      data,
    } as DomainEvent;
    if (event.type === 'api_key.issued' && !this.issues.has(event.data.key_id))
      this.issues.set(event.data.key_id, event);
    return event;
  }
}
