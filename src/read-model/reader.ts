/** Executes the read-model queries for the API; every query is scoped by organization in SQL. */
import type { Statement } from 'better-sqlite3';
import type { ListedStatus } from '../../projections/orders/status.js';
import { readSql } from '../../projections/orders/sql.js';
import type { Article, Order } from '../../schemas/api.js';
import type { ReadModelDatabase } from './database.js';

interface OrderListRow {
  id: number;
  title: string;
  listed_status: ListedStatus;
  distribution_ms: number | null;
  created_at_ms: number;
}

interface ArticleListRow {
  id: number;
  article_url: string;
  website_domain: string;
  published_at_ms: number;
}

/** `YYYY-MM-DD HH:MM:SS` in UTC. */
export function formatApiTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');
}

export interface OrderPageQuery {
  orgId: number;
  status: ListedStatus | null;
  limit: number;
  offset: number;
}

export class ReadModelReader {
  private readonly statements: { [K in keyof typeof readSql]: Statement };

  constructor(readonly db: ReadModelDatabase) {
    this.statements = Object.fromEntries(
      Object.entries(readSql).map(([name, sql]) => [name, db.prepare(sql)]),
    ) as { [K in keyof typeof readSql]: Statement };
  }

  orgOfKeyHash(keySha256: string): number | null {
    const row = this.statements.orgOfActiveKey.get(keySha256) as { org_id: number } | undefined;
    return row?.org_id ?? null;
  }

  /** One page of the organization's listed orders and the total before paging, read in one snapshot. */
  orderPage(query: OrderPageQuery): { orders: Order[]; total: number } {
    return this.db.transaction(() => {
      const rows = (
        query.status === null
          ? this.statements.listOrders.all(query)
          : this.statements.listOrdersByStatus.all(query)
      ) as OrderListRow[];
      const { total } = (
        query.status === null
          ? this.statements.countOrders.get(query)
          : this.statements.countOrdersByStatus.get(query)
      ) as { total: number };
      return {
        total,
        orders: rows.map((row) => ({
          id: row.id,
          press_release_title: row.title,
          order_status: row.listed_status,
          distribution_date_utc: formatApiTimestamp(row.distribution_ms ?? row.created_at_ms),
          created_at: formatApiTimestamp(row.created_at_ms),
        })),
      };
    })();
  }

  /** The order's title and articles, or null when the order is not listed for this organization. */
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null {
    return this.db.transaction(() => {
      const order = this.statements.listedOrderOfOrg.get({ orgId, orderId }) as
        { id: number; title: string } | undefined;
      if (order === undefined) return null;
      const rows = this.statements.articlesOfOrder.all({ orgId, orderId }) as ArticleListRow[];
      return {
        title: order.title,
        articles: rows.map((row) => ({
          id: row.id,
          article_url: row.article_url,
          published_at: formatApiTimestamp(row.published_at_ms),
          website_domain: row.website_domain,
        })),
      };
    })();
  }
}
