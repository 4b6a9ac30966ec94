/**
 * What the API must answer once every published event is applied, computed from docs/events.md alone and
 * written apart from the projection (`projections/`), so that a shared mistake cannot hide.
 *
 * The campaign's generator keeps to a subset of the contract that makes this short: timestamps are
 * ISO strings of one width (so they compare as strings), event ids are unique, an article never
 * moves to another order and a key is issued once and revoked at most once.
 */
import { createHash } from 'node:crypto';
import type { OrderStatus } from '../../schemas/api.js';
import type { DomainEvent } from '../../schemas/events.js';

interface Stamp {
  at: string;
  id: string;
}

/** Rule 1: the fact with the later `occurred_at` wins; ties go to the greater `event_id`. */
function newer(a: Stamp, b: Stamp | undefined): boolean {
  if (b === undefined) return true;
  return a.at === b.at ? a.id > b.id : a.at > b.at;
}

interface Valued<T> {
  stamp: Stamp;
  value: T;
}

function take<T>(slot: Valued<T> | undefined, stamp: Stamp, value: T): Valued<T> {
  return newer(stamp, slot?.stamp) ? { stamp, value } : (slot as Valued<T>);
}

interface OrderFacts {
  org?: Valued<{ org: number; createdAt: string }>;
  title?: Valued<string>;
  distribution?: Valued<string | null>;
  status?: Valued<string>;
  /** `occurred_at` of the latest deletion */
  deletedAt?: string;
}

interface ArticleFacts {
  published?: Valued<{ orderId: number; url: string; domain: string; publishedAt: string }>;
  removedAt?: string;
}

interface KeyFacts {
  issued?: Valued<{ org: number; sha: string }>;
  revoked?: Stamp;
}

export interface ExpectedOrder {
  id: number;
  press_release_title: string;
  order_status: OrderStatus;
  distribution_date_utc: string;
  created_at: string;
}

export interface ExpectedArticle {
  id: number;
  article_url: string;
  published_at: string;
  website_domain: string;
}

// The oracle's own reading of the event contract, kept apart from the service's mapping on purpose.
const shown: Record<string, OrderStatus> = {
  publishing: 'processing',
  publishing_ended: 'processing',
  finished: 'finished',
};

/** `YYYY-MM-DD HH:MM:SS` in UTC, as the API shows timestamps. */
export function apiTime(rfc3339: string): string {
  return new Date(rfc3339).toISOString().slice(0, 19).replace('T', ' ');
}

export function sha256(raw: string): string {
  return createHash('sha256').update(raw).digest('hex');
}

export class Oracle {
  private readonly orders = new Map<number, OrderFacts>();
  private readonly articles = new Map<number, ArticleFacts>();
  private readonly keys = new Map<string, KeyFacts>();

  apply(event: DomainEvent): void {
    const stamp = { at: event.occurred_at, id: event.event_id };
    switch (event.type) {
      case 'order.created': {
        const o = this.order(event.data.order_id);
        const d = event.data;
        o.org = take(o.org, stamp, { org: d.organization_id, createdAt: d.created_at });
        o.title = take(o.title, stamp, d.press_release_title);
        o.distribution = take(o.distribution, stamp, d.distribution_date);
        o.status = take(o.status, stamp, d.status);
        return;
      }
      case 'order.updated': {
        const o = this.order(event.data.order_id);
        if (event.data.press_release_title !== undefined)
          o.title = take(o.title, stamp, event.data.press_release_title);
        if (event.data.distribution_date !== undefined)
          o.distribution = take(o.distribution, stamp, event.data.distribution_date);
        return;
      }
      case 'order.deleted': {
        const o = this.order(event.data.order_id);
        if (o.deletedAt === undefined || event.occurred_at > o.deletedAt) o.deletedAt = event.occurred_at;
        return;
      }
      case 'order.status_changed': {
        const o = this.order(event.data.order_id);
        o.status = take(o.status, stamp, event.data.status);
        return;
      }
      case 'article.published': {
        const a = this.article(event.data.article_id);
        const d = event.data;
        a.published = take(a.published, stamp, {
          orderId: d.order_id,
          url: d.article_url,
          domain: d.website_domain ?? new URL(d.article_url).hostname.replace(/^www\./, ''),
          publishedAt: d.published_at,
        });
        return;
      }
      case 'article.removed': {
        const a = this.article(event.data.article_id);
        if (a.removedAt === undefined || event.occurred_at > a.removedAt) a.removedAt = event.occurred_at;
        return;
      }
      case 'api_key.issued': {
        const k = this.key(event.data.key_id);
        k.issued = take(k.issued, stamp, { org: event.data.organization_id, sha: event.data.key_sha256 });
        return;
      }
      case 'api_key.revoked': {
        const k = this.key(event.data.key_id);
        if (newer(stamp, k.revoked)) k.revoked = stamp;
        return;
      }
    }
  }

  /** The organization a raw key answers for, or null (401). */
  orgOfKey(raw: string): number | null {
    const sha = sha256(raw);
    for (const k of this.keys.values()) {
      if (k.issued?.value.sha !== sha) continue;
      if (k.revoked !== undefined && newer(k.revoked, k.issued.stamp)) return null;
      return k.issued.value.org;
    }
    return null;
  }

  /** Rule 3: an order exists while its latest creation is later than its latest deletion. */
  private listed(id: number): { org: number; order: ExpectedOrder } | null {
    const o = this.orders.get(id);
    if (o?.org === undefined || o.title === undefined || o.status === undefined) return null;
    if (o.deletedAt !== undefined && o.org.stamp.at <= o.deletedAt) return null;
    const status = shown[o.status.value];
    if (status === undefined) return null;
    const createdAt = apiTime(o.org.value.createdAt);
    const scheduled = o.distribution?.value ?? null;
    return {
      org: o.org.value.org,
      order: {
        id,
        press_release_title: o.title.value,
        order_status: status,
        distribution_date_utc: scheduled === null ? createdAt : apiTime(scheduled),
        created_at: createdAt,
      },
    };
  }

  /** Every listed order of `org` with `status` (`all` or a shown status), newest first. */
  ordersOf(org: number, status: 'all' | OrderStatus = 'all'): ExpectedOrder[] {
    const rows: { order: ExpectedOrder; createdAt: string }[] = [];
    for (const [id, facts] of this.orders) {
      const listed = this.listed(id);
      if (listed === null || listed.org !== org) continue;
      if (status !== 'all' && listed.order.order_status !== status) continue;
      rows.push({ order: listed.order, createdAt: facts.org?.value.createdAt ?? '' });
    }
    rows.sort((a, b) =>
      a.createdAt === b.createdAt ? b.order.id - a.order.id : a.createdAt < b.createdAt ? 1 : -1,
    );
    return rows.map((row) => row.order);
  }

  /** The organization of an order as last created (listed or not), or null if never created. */
  orgOfOrder(id: number): number | null {
    return this.orders.get(id)?.org?.value.org ?? null;
  }

  /** The article list envelope of a listed order of `org`, or null (404). */
  articlesOf(
    org: number,
    orderId: number,
  ): { order_id: number; press_release_title: string; data: ExpectedArticle[] } | null {
    const listed = this.listed(orderId);
    if (listed?.org !== org) return null;
    const data: (ExpectedArticle & { raw: string })[] = [];
    for (const [id, a] of this.articles) {
      const p = a.published;
      if (p?.value.orderId !== orderId) continue;
      if (a.removedAt !== undefined && p.stamp.at <= a.removedAt) continue;
      data.push({
        id,
        article_url: p.value.url,
        published_at: apiTime(p.value.publishedAt),
        website_domain: p.value.domain,
        raw: p.value.publishedAt,
      });
    }
    data.sort((a, b) => (a.raw === b.raw ? b.id - a.id : a.raw < b.raw ? 1 : -1));
    return {
      order_id: orderId,
      press_release_title: listed.order.press_release_title,
      data: data.map(({ raw: _raw, ...article }) => article),
    };
  }

  private order(id: number): OrderFacts {
    let o = this.orders.get(id);
    if (o === undefined) this.orders.set(id, (o = {}));
    return o;
  }

  private article(id: number): ArticleFacts {
    let a = this.articles.get(id);
    if (a === undefined) this.articles.set(id, (a = {}));
    return a;
  }

  private key(id: string): KeyFacts {
    let k = this.keys.get(id);
    if (k === undefined) this.keys.set(id, (k = {}));
    return k;
  }
}
