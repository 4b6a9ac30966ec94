import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { articlePublished, at, orderCreated } from '../helpers/events.js';
import { issueKeyOf, keyOf, startTestApi } from '../helpers/api.js';
import { deliveryArbitrary, historyArbitrary } from '../helpers/histories.js';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

interface Page {
  data: { id: number }[];
  total: number;
  limit: number;
  offset: number;
}

const orgOrders = fc.array(
  fc.record({
    minute: fc.integer({ min: 0, max: 5 }),
    status: fc.constantFrom('publishing', 'publishing_ended', 'finished', 'draft'),
  }),
  { minLength: 0, maxLength: 60 },
);

describe('pagination (property)', () => {
  it('walking every page with random limits visits every listed order exactly once, in order, with total constant', async () => {
    await fc.assert(
      fc.asyncProperty(
        orgOrders,
        fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 80 }),
        fc.constantFrom(...ORDER_STATUS_FILTERS),
        async (orders, limits, status) => {
          const events: DomainEvent[] = [
            issueKeyOf(1),
            ...orders.map((o, i) =>
              orderCreated({
                order_id: i + 1,
                organization_id: 1,
                status: o.status,
                created_at: at(o.minute),
              }),
            ),
          ];
          const api = await startTestApi(events, { register: false });
          try {
            const seen: number[] = [];
            const totals = new Set<number>();
            let offset = 0;
            for (let step = 0; ; step += 1) {
              const limit = limits[step % limits.length]!;
              const response = await api.get(
                `/orders?status=${status}&limit=${limit}&offset=${offset}`,
                keyOf(1),
              );
              const page = response.body as Page;
              totals.add(page.total);
              seen.push(...page.data.map((o) => o.id));
              if (page.data.length < limit) break;
              offset += limit;
            }
            const expected = orders
              .map((o, i) => ({ ...o, id: i + 1 }))
              .filter((o) => o.status !== 'draft')
              .filter((o) => status === 'all' || (status === 'finished') === (o.status === 'finished'))
              .sort((a, b) => b.minute - a.minute || b.id - a.id)
              .map((o) => o.id);
            expect(seen).toEqual(expected);
            expect([...totals]).toEqual([expected.length]);
          } finally {
            await api.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('isolation (property)', () => {
  it("no response to one organization's key ever contains another organization's order or article", async () => {
    const scenario = historyArbitrary({ orgs: 4, orders: 12, articles: 24, keys: 1, maxEvents: 80 }).chain(
      (history) => fc.tuple(fc.constant(history), deliveryArbitrary(history)),
    );
    await fc.assert(
      fc.asyncProperty(
        scenario,
        fc.array(fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 13 })), {
          minLength: 1,
          maxLength: 20,
        }),
        async ([history, delivery], requests) => {
          const api = await startTestApi(
            [...[1, 2, 3, 4].map((org) => issueKeyOf(org, at(-1))), ...delivery],
            {
              register: false,
            },
          );
          try {
            for (const [org, orderId] of requests) {
              const list = await api.get(`/orders?limit=200`, keyOf(org));
              expect(list.status).toBe(200);
              for (const order of (list.body as Page).data) {
                const owners = history.filter(
                  (e) =>
                    e.type === 'order.created' &&
                    e.data.order_id === order.id &&
                    e.data.organization_id === org,
                );
                expect(owners.length).toBeGreaterThan(0);
              }
              const articles = await api.get(`/orders/${orderId}/articles`, keyOf(org));
              if (articles.status === 200) {
                const ownedByCaller = history.some(
                  (e) =>
                    e.type === 'order.created' &&
                    e.data.order_id === orderId &&
                    e.data.organization_id === org,
                );
                expect(ownedByCaller).toBe(true);
                for (const article of (articles.body as { data: { id: number }[] }).data) {
                  const publishedFor = history.filter(
                    (e) => e.type === 'article.published' && e.data.article_id === article.id,
                  );
                  expect(
                    publishedFor.some((e) => e.type === 'article.published' && e.data.order_id === orderId),
                  ).toBe(true);
                }
              } else {
                expect(articles.status).toBe(404);
              }
            }
          } finally {
            await api.close();
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('a key never reads an order of another organization even when ids are adjacent', async () => {
    const api = await startTestApi([
      issueKeyOf(1),
      issueKeyOf(2),
      orderCreated({ order_id: 10, organization_id: 1 }),
      orderCreated({ order_id: 11, organization_id: 2 }),
      articlePublished({ article_id: 1, order_id: 11 }),
    ]);
    expect((await api.get('/orders', keyOf(1))).body).toMatchObject({ total: 1, data: [{ id: 10 }] });
    expect((await api.get('/orders/11/articles', keyOf(1))).status).toBe(404);
  });
});
