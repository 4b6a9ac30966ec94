/**
 * The floor's answers: what the service must do for a request of the External Orders API, and
 * nothing else. The key is checked as the service checks it (`authenticate`: SHA-256 of the key,
 * the keys store's own statement on the service's keys file, a Map of the keys found); the service's
 * own statements (`projections/orders/read-sql.ts`) run prepared on the same model file, without a read
 * transaction around them; the rows become answers through the service's own row mapping and JSON
 * writers. No ETag, Link or position header, no request id, no metrics, no log.
 *
 * The Map never forgets a key: nothing revokes one while the benchmark measures (the service's
 * lookup forgets at every commit of the keys store). Unknown keys are not remembered, as there.
 */
import { readSql } from '../../projections/orders/read-sql.js';
import { keysSql } from '../../projections/keys/sql.js';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { deepOffsetFrom, pageStart, type OrdersOfDay } from '../../projections/orders/paging.js';
import { LIMIT_DEFAULT, LIMIT_MAX, LIMIT_MIN, toSafeInteger, type OrderStatus } from '../../schemas/api.js';
import { ApiError, orderNotFound, statusError } from '../../src/http/api-error.js';
import { authenticate } from '../../src/http/bearer-key.js';
import { orderIdOf } from '../../src/http/routes/common.js';
import { orderListQueryErrors } from '../../src/http/routes/orders-list.js';
import { articleListJson, orderListJson } from '../../src/http/serializer.js';
import {
  articleListOrderOfRow,
  articleListOrderWidth,
  articleOfRow,
  orderOfRow,
} from '../../src/read-model/answer-rows.js';
import { openReadModel } from '../../src/read-model/database.js';

/** An answer: its status, its headers beside Content-Type and Content-Length, its JSON text. */
export interface FloorAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** A query as node:querystring and Fastify's parser give it: repeated names as arrays. */
export type Query = Readonly<Record<string, string | readonly string[] | undefined>>;

export interface FloorAnswers {
  orders: (authorization: string | string[] | undefined, query: Query) => FloorAnswer;
  articles: (authorization: string | string[] | undefined, id: string) => FloorAnswer;
  /** a path no route has: 401 without a valid key, else 404 */
  noRoute: (authorization: string | string[] | undefined, method: string, path: string) => FloorAnswer;
  close: () => void;
}

export const apiPrefix = '/api/external-api/v1';

const noHeaders: Readonly<Record<string, string>> = {};
const errorAnswer = (error: ApiError): FloorAnswer => ({
  status: error.statusCode,
  headers: error.headers,
  body: JSON.stringify(error.body()),
});
const ok = (body: string): FloorAnswer => ({ status: 200, headers: noHeaders, body });

/** What the service's query schema accepts as an integer (`schemas/api.ts`, `integerParam`). */
const integerText = /^[+-]?\d+$/;

type RawRow = readonly unknown[];

export function floorAnswers(modelFile: string, keysFile: string): FloorAnswers {
  const model = openReadModel(modelFile, { readonly: true });
  const keys = openReadModel(keysFile, { readonly: true, store: keysStoreSchema });
  const prepared = {
    countOrders: model.prepare(readSql.countOrders),
    countOrdersByStatus: model.prepare(readSql.countOrdersByStatus),
    listOrders: model.prepare(readSql.listOrders).raw(true),
    listOrdersByStatus: model.prepare(readSql.listOrdersByStatus).raw(true),
    listOrdersFromDay: model.prepare(readSql.listOrdersFromDay).raw(true),
    listOrdersByStatusFromDay: model.prepare(readSql.listOrdersByStatusFromDay).raw(true),
    ordersPerDay: model.prepare(readSql.ordersPerDay).raw(true),
    ordersPerDayByStatus: model.prepare(readSql.ordersPerDayByStatus).raw(true),
    articlesOfOrder: model.prepare(readSql.articlesOfOrder).raw(true),
  };
  const activeByHash = keys.prepare(keysSql.activeKeyByHash);
  const known = new Map<string, number>();
  const orgOfKeyHash = (keySha256: string): number | null => {
    const remembered = known.get(keySha256);
    if (remembered !== undefined) return remembered;
    const org = (activeByHash.get(keySha256) as { org_id: number | null } | undefined)?.org_id ?? null;
    if (org !== null) known.set(keySha256, org);
    return org;
  };
  const queryErrors = orderListQueryErrors();
  const invalid = {
    limit: errorAnswer(queryErrors['limit']!),
    offset: errorAnswer(queryErrors['offset']!),
    status: errorAnswer(queryErrors['status']!),
  };
  const notFound = errorAnswer(orderNotFound);
  /** An integer parameter: its value, the default when absent, null when not an integer. */
  const integer = (value: Query[string], absent: number): number | null =>
    value === undefined
      ? absent
      : typeof value === 'string' && integerText.test(value)
        ? toSafeInteger(value)
        : null;

  const page = (orgId: number, status: OrderStatus | null, limit: number, offset: number): string => {
    const query = { orgId, status, limit, offset };
    const all = status === null;
    const { total } = (all ? prepared.countOrders : prepared.countOrdersByStatus).get(query) as {
      total: number;
    };
    const list = all ? prepared.listOrders : prepared.listOrdersByStatus;
    let rows: RawRow[] = [];
    if (offset < deepOffsetFrom) {
      rows = list.all(query) as RawRow[];
    } else if (offset < total) {
      const days = (all ? prepared.ordersPerDay : prepared.ordersPerDayByStatus).iterate(query);
      const start = pageStart(days as Iterable<OrdersOfDay>, offset);
      rows = (
        start === null
          ? list.all(query)
          : (all ? prepared.listOrdersFromDay : prepared.listOrdersByStatusFromDay).all({
              ...query,
              day: start.day,
              offset: offset - start.newer,
            })
      ) as RawRow[];
    }
    return orderListJson({ data: rows.map(orderOfRow), total, limit, offset });
  };

  return {
    orders: (authorization, query) => {
      const caller = authenticate(authorization, orgOfKeyHash);
      if (caller instanceof ApiError) return errorAnswer(caller);
      // the order of the service's query schema's fields: limit, offset, status
      const limit = integer(query['limit'], LIMIT_DEFAULT);
      if (limit === null) return invalid.limit;
      const offset = integer(query['offset'], 0);
      if (offset === null) return invalid.offset;
      const status = query['status'] ?? 'all';
      if (status !== 'all' && status !== 'finished' && status !== 'processing') return invalid.status;
      const applied = Math.min(LIMIT_MAX, Math.max(LIMIT_MIN, limit));
      return ok(page(caller.orgId, status === 'all' ? null : status, applied, Math.max(0, offset)));
    },
    articles: (authorization, id) => {
      const caller = authenticate(authorization, orgOfKeyHash);
      if (caller instanceof ApiError) return errorAnswer(caller);
      const orderId = orderIdOf(id);
      const rows = prepared.articlesOfOrder.all({ orgId: caller.orgId, orderId }) as RawRow[];
      const first = rows[0];
      if (first === undefined) return notFound;
      const title = articleListOrderOfRow(first).press_release_title;
      const articles = first[articleListOrderWidth] === null ? [] : rows.map(articleOfRow);
      return ok(articleListJson({ order_id: orderId, press_release_title: title, data: articles }));
    },
    noRoute: (authorization, method, path) => {
      const caller = authenticate(authorization, orgOfKeyHash);
      return errorAnswer(
        caller instanceof ApiError ? caller : statusError(404, `No route ${method} ${path}.`),
      );
    },
    close: () => {
      model.close();
      keys.close();
    },
  };
}
