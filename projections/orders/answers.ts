/**
 * The shape of each answer, declared once per field: the column it is read from, how it is written,
 * and that the entity tag covers it. From these the statements select their columns (`read-sql.ts`), the
 * reader maps its rows (`src/read-model/answer-rows.ts`), the serializer writes the wire
 * (`src/http/serializer.ts`, in this order) and the digests hash what is shown (`digests.ts`).
 *
 * The zod schemas of `schemas/api.ts` document the same answers: each declaration below names every
 * field of its schema (the compiler checks), in the schema's order (checked when the serializer is
 * built). The rule: a shown field is in the tag (test/projections/answer-tags.unit.test.ts).
 */
import type { Article, ArticleList, Order } from '../../schemas/api.js';
import type { ArticleRow, OrderRow } from './rows.js';

/**
 * How a field is written: `integer` a JSON number; `text` any string an event carried (JSON
 * escaped; length-prefixed in a digest); `status` one word of a fixed set; `timestamp` an epoch
 * millisecond written as the API's UTC text (`formatApiTimestamp`). Neither `status` nor
 * `timestamp` holds a character JSON escapes.
 */
export type FieldFormat = 'integer' | 'text' | 'status' | 'timestamp';

export interface FieldSpec<Column extends string> {
  /** the column the field is read from */
  readonly column: Column;
  /** read instead when `column` is NULL (a distribution date defaults to the creation) */
  readonly orElse?: Column;
  readonly format: FieldFormat;
  /** true: the digest behind the answer's entity tag covers the field's columns */
  readonly tagged: boolean;
}

/** Every field of `Shape`, each read from a column of `Row`. */
export type AnswerFields<Shape, Row> = { readonly [K in keyof Shape]-?: FieldSpec<keyof Row & string> };

/** One order of GET /orders. */
export const orderFields = {
  id: { column: 'order_id', format: 'integer', tagged: true },
  press_release_title: { column: 'title', format: 'text', tagged: true },
  order_status: { column: 'listed_status', format: 'status', tagged: true },
  distribution_date_utc: {
    column: 'distribution_ms',
    orElse: 'created_at_ms',
    format: 'timestamp',
    tagged: true,
  },
  created_at: { column: 'created_at_ms', format: 'timestamp', tagged: true },
} as const satisfies AnswerFields<Order, OrderRow>;

/** The order's own fields of GET /orders/{id}/articles (its `data` holds `articleFields`). */
export const articleListOrderFields = {
  order_id: { column: 'order_id', format: 'integer', tagged: true },
  press_release_title: { column: 'title', format: 'text', tagged: true },
} as const satisfies AnswerFields<Omit<ArticleList, 'data'>, OrderRow>;

/** One article of GET /orders/{id}/articles. */
export const articleFields = {
  id: { column: 'article_id', format: 'integer', tagged: true },
  article_url: { column: 'article_url', format: 'text', tagged: true },
  published_at: { column: 'published_at_ms', format: 'timestamp', tagged: true },
  website_domain: { column: 'website_domain', format: 'text', tagged: true },
} as const satisfies AnswerFields<Article, ArticleRow>;

/**
 * Every answer, by name: what the digests (`digests.ts`) and the rule's test are keyed by, so that a
 * new answer declared here and missing there does not compile.
 */
export const answers = {
  order: orderFields,
  articleListOrder: articleListOrderFields,
  article: articleFields,
} as const;
export type AnswerName = keyof typeof answers;

/**
 * Columns a digest covers although no field shows them: the page's order follows the creation time
 * to the nanosecond, and who may see an order follows its organization.
 */
export const alsoTagged = {
  order: ['created_at_sub'],
  articleListOrder: ['org_id'],
  article: [],
} as const satisfies Record<AnswerName, readonly (keyof OrderRow | keyof ArticleRow)[]>;

type AnyFields = Readonly<Record<string, FieldSpec<string>>>;

/** The columns an answer reads, each once, in the order of its fields: what its statement selects. */
export function answerColumns(fields: AnyFields): string[] {
  const columns: string[] = [];
  for (const spec of Object.values(fields)) {
    for (const column of [spec.column, spec.orElse]) {
      if (column !== undefined && !columns.includes(column)) columns.push(column);
    }
  }
  return columns;
}

/** The columns of the fields declared `tagged`, and how a digest writes each (free text or not). */
export function taggedColumns(fields: AnyFields): Map<string, { text: boolean }> {
  const tagged = new Map<string, { text: boolean }>();
  for (const spec of Object.values(fields)) {
    if (!spec.tagged) continue;
    for (const column of [spec.column, spec.orElse]) {
      if (column === undefined) continue;
      const text = (tagged.get(column)?.text ?? false) || spec.format === 'text';
      tagged.set(column, { text });
    }
  }
  return tagged;
}
