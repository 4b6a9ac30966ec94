/**
 * The reader's row mapping, derived from the answers' declaration (`projections/orders/answers.ts`)
 * and compiled once at load: a raw row, its columns in `answerColumns` order, becomes the answer's
 * object, its fields in the declared order (one object shape per answer, so the serializer's reads
 * stay monomorphic). A page of 100 orders maps 100 rows with no per-field dispatch.
 */
import {
  answerColumns,
  articleFields,
  articleListOrderFields,
  orderFields,
  type FieldSpec,
} from '../../projections/orders/answers.js';
import type { Article, ArticleList, Order } from '../../schemas/api.js';
import { formatApiTimestamp } from './api-timestamps.js';

type Fields = Readonly<Record<string, FieldSpec<string>>>;
type Mapper<Shape> = (row: readonly unknown[]) => Shape;

/** A plain property name: the only text of a declaration that enters generated code. */
export const plainName = /^[a-z_][a-z0-9_]*$/;

/** The mapping of `fields` read from a row whose columns start at `from`. */
function rowMapper<Shape>(fields: Fields, from = 0): Mapper<Shape> {
  const columns = answerColumns(fields);
  const at = (column: string): string => `r[${from + columns.indexOf(column)}]`;
  const properties = Object.entries(fields).map(([name, spec]) => {
    if (!plainName.test(name)) throw new Error(`answer field "${name}": not a plain name`);
    const value = spec.orElse === undefined ? at(spec.column) : `(${at(spec.column)} ?? ${at(spec.orElse)})`;
    return `${name}: ${spec.format === 'timestamp' ? `timestamp(${value})` : value}`;
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the declaration's checked names and row positions only: an object literal, as fast as one written by hand
  const compile = new Function('timestamp', `return (r) => ({ ${properties.join(', ')} });`) as (
    timestamp: typeof formatApiTimestamp,
  ) => Mapper<Shape>;
  return compile(formatApiTimestamp);
}

/** A row of `listOrders*`. */
export const orderOfRow = rowMapper<Order>(orderFields);

/** The number of the order's own columns at the start of an `articlesOfOrder` row. */
export const articleListOrderWidth = answerColumns(articleListOrderFields).length;

/** The order's own fields of an `articlesOfOrder` row. */
export const articleListOrderOfRow = rowMapper<Omit<ArticleList, 'data'>>(articleListOrderFields);

/** The article of an `articlesOfOrder` row (after the order's own columns). */
export const articleOfRow = rowMapper<Article>(articleFields, articleListOrderWidth);
