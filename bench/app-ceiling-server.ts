/**
 * The ceiling for the API figures: this service's own HTTP stack (routing, authentication hook,
 * query validation, serialization of the same response shapes, request ids, metrics) with every
 * read answered by a constant instead of SQLite. No read-model change can make (b) or (e) faster
 * than this; its ratio to the bare route is the most the ratios of (b) and (e) can reach.
 *
 * Given a model file after the port, it is the ceiling of (e) for any design that answers from the
 * model file: an articles request first looks its order up there (one point lookup by primary key,
 * scoped by organization: the least an answer read from the file costs) and 404s when it is not
 * listed for the caller; keys and articles are still answered by constants. The file is larger than
 * the service's memory budget, so no design can hold it all in memory instead.
 */
import { buildApp } from '../src/http/app.js';
import { createLogger } from '../src/logger.js';
import { ServiceMetrics } from '../src/metrics.js';
import { openReadModel } from '../src/read-model/database.js';
import type { ApiReads } from '../src/read-model/reader.js';

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
const [port, modelFile] = process.argv.slice(2);
const listedOrder =
  modelFile === undefined
    ? null
    : openReadModel(modelFile, { readonly: true })
        .prepare(`SELECT 1 FROM orders WHERE order_id = ? AND org_id = ? AND listed_status IS NOT NULL`)
        .pluck();
const answer = { title: 'Quarterly results #1000000', articles };
const constantReads: ApiReads = {
  orgOfKeyHash: () => 1,
  orderPage: (query) => ({ orders: orders.slice(0, query.limit), total: 200_000 }),
  articlesOfOrder: (orgId, orderId) =>
    listedOrder === null || listedOrder.get(orderId, orgId) !== undefined ? answer : null,
};

const app = await buildApp({
  readerOf: () => constantReads,
  logger: createLogger('warn'),
  metrics: new ServiceMetrics(() => null),
});
await app.listen({ host: '127.0.0.1', port: Number(port ?? 0) });
console.log('listening');
