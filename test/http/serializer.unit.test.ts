import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArticleList, ORDER_STATUSES, OrderList } from '../../schemas/api.js';
import { articleListJson, orderListJson, responseSerializerCompiler } from '../../src/http/serializer.js';
import { formatApiTimestamp } from '../../src/read-model/api-timestamps.js';

/** Any string an event may carry: quotes, backslashes, control characters, lone surrogates, emoji. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.constantFrom('"', '\\', '\n', '\u0000', '\u001f', '\u2028', '\ud800', 'é', '😀', 'a'),
    maxLength: 12,
  }),
);
/** Timestamps as the reader formats them, years 0000–9999 and beyond. */
const timestamp = fc
  .integer({ min: Date.parse('0000-01-01T00:00:00Z') - 1e12, max: Date.parse('9999-12-31T23:59:59Z') + 1e12 })
  .map(formatApiTimestamp);
const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });

const orderList = fc.record({
  data: fc.array(
    fc.record({
      id,
      press_release_title: text,
      order_status: fc.constantFrom(...ORDER_STATUSES),
      distribution_date_utc: timestamp,
      created_at: timestamp,
    }),
    { maxLength: 60 },
  ),
  total: fc.nat(),
  limit: fc.integer({ min: 1, max: 200 }),
  offset: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
});
const articleList = fc.record({
  order_id: id,
  press_release_title: text,
  data: fc.array(fc.record({ id, article_url: text, published_at: timestamp, website_domain: text }), {
    maxLength: 20,
  }),
});

/** What the route's response schema would have sent (the serializer Fastify compiles from it). */
const compiled = (schema: typeof OrderList | typeof ArticleList) =>
  responseSerializerCompiler()({ schema, method: 'GET', url: '/', httpStatus: '200' }) as (
    data: unknown,
  ) => string;

/**
 * For every generated answer: the hand-written text equals JSON.stringify of the same object, and its
 * value equals what the compiled schema serializer sends.
 */
function holdsEqual<T>(
  answers: fc.Arbitrary<T>,
  json: (answer: T) => string,
  schema: typeof OrderList | typeof ArticleList,
): void {
  const viaSchema = compiled(schema);
  fc.assert(
    fc.property(answers, (answer) => {
      const text = json(answer);
      expect(text).toBe(JSON.stringify(answer));
      expect(JSON.parse(text)).toEqual(JSON.parse(viaSchema(answer)));
    }),
    { numRuns: 2000 },
  );
}

describe('hand-written answers', () => {
  it('GET /orders: the same text as JSON.stringify, and the same value as the compiled schema serializer (property)', () => {
    holdsEqual(orderList, orderListJson, OrderList);
  });

  it('GET /orders/{id}/articles: the same text as JSON.stringify, and the same value as the compiled schema serializer (property)', () => {
    holdsEqual(articleList, articleListJson, ArticleList);
  });
});
