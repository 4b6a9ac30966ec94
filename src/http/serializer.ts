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
import {
  articleFields,
  articleListOrderFields,
  orderFields,
  type FieldFormat,
} from '../../projections/orders/answers.js';
import { Article, ArticleList, Order, OrderList } from '../../schemas/api.js';
import { plainName } from '../read-model/answer-rows.js';

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
 * The two answers that carry many rows are written by code generated once at load from the answers'
 * declaration (`projections/orders/answers.ts`): field for field, in the declared order, what their
 * response schemas serialize (test/http/serializer.unit.test.ts holds them equal to JSON.stringify),
 * with no per-field type dispatch (the compiled schema serializer took about a tenth of a /orders
 * request in a CPU profile). Text fields go through JSON.stringify; `status` and `timestamp` fields
 * hold no character JSON escapes (`FieldFormat`), so they are written between quotes as they are.
 */

/** How an answer's field is written: as its declared format, or a list of items. */
type Written = FieldFormat | 'items';

/** The JavaScript expression writing `value` as `format`. */
function written(format: Written, value: string): string {
  switch (format) {
    case 'integer':
      return value;
    case 'text':
      return `JSON.stringify(${value})`;
    case 'status':
    case 'timestamp':
      return `'"' + ${value} + '"'`;
    case 'items':
      return `items(${value})`;
  }
}

/**
 * The JSON text of an object with `fields`, in their order, which must be the schema's: what the
 * document promises is what is sent. `items` writes the one field of format `items`.
 */
function objectJson<T>(
  schema: z.ZodObject & z.ZodType<T>,
  fields: Readonly<Record<string, Written>>,
  items: (list: never) => string = () => '[]',
): (value: T) => string {
  const names = Object.keys(fields);
  const declared = Object.keys(schema.shape);
  if (names.join() !== declared.join()) {
    throw new Error(
      `answer fields ${names.join(', ')} are not the schema's, in its order: ${declared.join(', ')}`,
    );
  }
  const parts = Object.entries(fields).map(([name, format], i) => {
    if (!plainName.test(name)) throw new Error(`answer field "${name}": not a plain name`);
    return `${JSON.stringify(`${i === 0 ? '{' : ','}"${name}":`)} + ${written(format, `v.${name}`)}`;
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the declaration's checked names and formats only: one concatenation, as fast as one written by hand
  const compile = new Function('items', `return (v) => ${parts.join(' + ')} + '}';`) as (
    items: (list: never) => string,
  ) => (value: T) => string;
  return compile(items);
}

/** The formats of declared fields. */
function formats<Fields extends Readonly<Record<string, { format: FieldFormat }>>>(
  fields: Fields,
): { [K in keyof Fields]: FieldFormat } {
  return Object.fromEntries(Object.entries(fields).map(([name, spec]) => [name, spec.format])) as {
    [K in keyof Fields]: FieldFormat;
  };
}

/** `[item,item,…]`, each item's JSON text from `itemJson`. */
function jsonArray<T>(itemJson: (item: T) => string): (items: readonly T[]) => string {
  return (items) => {
    let text = '';
    for (const item of items) text += text === '' ? itemJson(item) : `,${itemJson(item)}`;
    return `[${text}]`;
  };
}

/** The JSON text of a GET /orders answer. */
export const orderListJson = objectJson<OrderList>(
  OrderList,
  { data: 'items', total: 'integer', limit: 'integer', offset: 'integer' } satisfies Record<
    keyof OrderList,
    Written
  >,
  jsonArray(objectJson<Order>(Order, formats(orderFields))),
);

/** The JSON text of a GET /orders/{id}/articles answer. */
export const articleListJson = objectJson<ArticleList>(
  ArticleList,
  { ...formats(articleListOrderFields), data: 'items' } satisfies Record<keyof ArticleList, Written>,
  jsonArray(objectJson<Article>(Article, formats(articleFields))),
);

/**
 * Sends JSON text written by hand: Fastify sends a string with a JSON content type as it is,
 * compressed when the caller asks and it is large enough (`plugins/compression.ts`).
 */
export function sendJsonText(reply: FastifyReply, json: string): void {
  void reply.type('application/json; charset=utf-8');
  reply.compress(json);
}
