/**
 * Responses are serialized through their zod schemas turned into JSON Schema
 * and compiled once per route by fast-json-stringify (Fastify's own
 * serializer): only declared fields leave the service, and a page of 50 orders
 * costs a fraction of validating it with zod on every request.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyReply } from 'fastify';
import type { FastifySerializerCompiler } from 'fastify/types/schema.js';
import { z } from 'zod';
import type { ArticleList, OrderList } from '../../schemas/api.js';

export function responseSerializerCompiler(): FastifySerializerCompiler<unknown> {
  const compile = SerializerSelector()();
  return ({ schema, method, url, httpStatus }) =>
    compile({
      schema: z.toJSONSchema(schema as z.ZodType, {
        target: 'draft-7',
        io: 'output',
        unrepresentable: 'any',
      }),
      method,
      url,
      httpStatus: httpStatus ?? '200',
    });
}

/*
 * The two answers that carry many rows are written by hand: field for field what their response
 * schemas serialize (test/http/serializer.unit.test.ts holds them equal to JSON.stringify), with
 * no per-field type dispatch (the compiled serializer took about a tenth of a /orders request in a
 * CPU profile). Strings that come from events go through JSON.stringify; timestamps come from
 * formatApiTimestamp and order_status from a fixed set, neither with a character JSON escapes.
 */

/** `[item,item,…]`, each item's JSON text from `itemJson`. */
function jsonArray<T>(items: readonly T[], itemJson: (item: T) => string): string {
  let text = '';
  for (const item of items) text += text === '' ? itemJson(item) : `,${itemJson(item)}`;
  return `[${text}]`;
}

/** The JSON text of a GET /orders answer. */
export function orderListJson(list: OrderList): string {
  const data = jsonArray(
    list.data,
    (order) =>
      `{"id":${order.id},"press_release_title":${JSON.stringify(order.press_release_title)},` +
      `"order_status":"${order.order_status}","distribution_date_utc":"${order.distribution_date_utc}",` +
      `"created_at":"${order.created_at}"}`,
  );
  return `{"data":${data},"total":${list.total},"limit":${list.limit},"offset":${list.offset}}`;
}

/** The JSON text of a GET /orders/{id}/articles answer. */
export function articleListJson(list: ArticleList): string {
  const data = jsonArray(
    list.data,
    (article) =>
      `{"id":${article.id},"article_url":${JSON.stringify(article.article_url)},` +
      `"published_at":"${article.published_at}","website_domain":${JSON.stringify(article.website_domain)}}`,
  );
  return `{"order_id":${list.order_id},"press_release_title":${JSON.stringify(list.press_release_title)},"data":${data}}`;
}

/**
 * Sends JSON text written by hand: Fastify sends a string with a JSON content type as it is,
 * compressed when the caller asks and it is large enough (`plugins/compression.ts`).
 */
export function sendJsonText(reply: FastifyReply, json: string): void {
  void reply.type('application/json; charset=utf-8');
  reply.compress(json);
}
