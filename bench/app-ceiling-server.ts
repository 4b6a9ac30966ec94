/**
 * The ceiling for the API figures: this service's own HTTP stack (routing, authentication hook,
 * query validation, serialization of the same response shapes, request ids, metrics) with every
 * read answered by a constant instead of SQLite. No read-model change can make (b) or (e) faster
 * than this; its ratio to the bare route is the most the ratios of (b) and (e) can reach.
 *
 * Given a model file and a read after the port, an articles request first reads from the model file
 * and 404s when that finds nothing for the caller; keys and the answer's content are still constants.
 * The file is larger than the service's memory budget, so no design can hold it all in memory.
 * - `order`: one point lookup of the order by primary key, scoped by organization: the least any
 *   answer read from the file costs (it says nothing of the articles yet).
 * - `articles`: the service's own statement for the answer (the order and its article rows over
 *   the covering index that holds exactly the columns the answer shows), rows read as arrays and
 *   not turned into the answer: what reading the answer costs with this model's layout.
 */
import { buildApp } from '../src/http/app.js';
import { createLogger } from '../src/logger.js';
import { ServiceMetrics } from '../src/metrics.js';
import { openReadModel } from '../src/read-model/database.js';
import type { ApiReads, Positions, ModelRead } from '../src/read-model/reader.js';
import { readSql } from '../projections/orders/read-sql.js';

const orders = Array.from({ length: 50 }, (_, i) => ({
  id: 1_000_000 - i,
  press_release_title: `Quarterly results #${1_000_000 - i}`,
  order_status: i % 3 === 0 ? ('processing' as const) : ('finished' as const),
  distribution_date_utc: '2026-10-27 23:15:46',
  created_at: '2026-10-27 23:15:46',
}));
const articles = Array.from({ length: 5 }, (_, i) => ({
  id: 5_000_000 - i,
  article_url: `https://www.dailywire.example/press/1000000-${i}`,
  published_at: '2026-10-28 07:16:24',
  website_domain: 'dailywire.example',
}));
const [port, modelFile, read] = process.argv.slice(2);
const fileReads = {
  order: `SELECT 1 FROM orders WHERE order_id = @orderId AND org_id = @orgId AND listed_status IS NOT NULL`,
  articles: readSql.articlesOfOrder,
};
const fileRead = read === 'order' || read === 'articles' ? fileReads[read] : undefined;
if (modelFile !== undefined && fileRead === undefined) {
  throw new Error(`usage: app-ceiling-server.ts PORT [MODEL_FILE order|articles]`);
}
const fromFile =
  modelFile === undefined || fileRead === undefined
    ? null
    : openReadModel(modelFile, { readonly: true }).prepare(fileRead).raw(true);
const answer = { title: 'Quarterly results #1000000', articles };
const position: Positions = new Map([['0:orders', 1]]);
const constantModel: ModelRead = {
  orderPage: (query) => ({
    orders: orders.slice(0, query.limit),
    total: 200_000,
    firstKey: null,
    lastKey: null,
    more: false,
  }),
  articlesOfOrder: (orgId, orderId) =>
    fromFile === null || fromFile.all({ orgId, orderId }).length > 0 ? answer : null,
  orgDigest: () => '1',
  orderDigest: () => '1',
  position: () => position,
};
const constantReads: ApiReads = {
  orgOfKeyHash: () => 1,
  inReadTransaction: (read) => read(constantModel),
  orderPage: (query) => constantModel.orderPage(query),
  articlesOfOrder: (orgId, orderId) => constantModel.articlesOfOrder(orgId, orderId),
};

const app = await buildApp({
  readerOf: () => constantReads,
  logger: createLogger('warn'),
  metrics: new ServiceMetrics(() => null),
});
await app.listen({ host: '127.0.0.1', port: Number(port ?? 0) });
console.log('listening');
