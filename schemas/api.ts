/** Request and response shapes of the External Orders API (docs/api.md). */
import { z } from 'zod';

export const API_PREFIX = '/api/external-api/v1';
export const LIMIT_MIN = 1;
export const LIMIT_MAX = 200;
export const LIMIT_DEFAULT = 50;
/** The longest `cursor` accepted (src/http/cursor.ts writes at most 75 characters). */
export const CURSOR_MAX_LENGTH = 128;
/**
 * The statuses the API shows, declared once: the `order_status` of an Order, the `status` filters
 * beside `all`, the model's listed statuses (`projections/orders/status.ts`) and the CHECK of
 * `orders.listed_status` (held equal by test/projections/status.unit.test.ts).
 */
export const ORDER_STATUSES = ['finished', 'processing'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const ORDER_STATUS_FILTERS = ['all', ...ORDER_STATUSES] as const;

/**
 * A time as the API writes it: UTC, with no zone designator (the specification's format). Every
 * description says so, since a parser reads such a text as local time unless told otherwise.
 */
const timestampText =
  'UTC, written `YYYY-MM-DD HH:MM:SS` without a zone designator: parse it as UTC (docs/api.md gives the line for JavaScript, Java and Python)';

const apiTimestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  .meta({ description: timestampText, example: '2026-11-21 10:15:00' });

/**
 * An integer of the contract: ids are JSON numbers up to 2^53 − 1 (events.md), so a client needs
 * 64 bits for them (`int64`: a Java `long`), and for counts and offsets, which share their range.
 */
const int64 = (description?: string) =>
  z
    .number()
    .int()
    .meta({ format: 'int64', ...(description === undefined ? {} : { description }) });

/** The digits of a query integer: what the server accepts (see `integerParam`). */
const integerText = /^[+-]?\d+$/;

/**
 * An integer in a query string: decimal digits of any length, leading zeros allowed, with an optional
 * sign, nothing else (no `1.5`, no empty value). Beyond ±(2^53 − 1) it is taken as ±(2^53 − 1), the
 * largest integer a JSON number carries exactly; the route then clamps it to its own range. The
 * document states no range (a validating client would refuse a value the server clamps) and no
 * pattern (an integer has none): only `int64` and the default.
 */
function integerParam(description: string, defaultValue: number) {
  return z
    .string()
    .refine((text) => integerText.test(text))
    .transform(toSafeInteger)
    .optional()
    .meta({ type: 'integer', format: 'int64', description, default: defaultValue });
}

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER);

/** A decimal integer of any length as the nearest safe integer. */
export function toSafeInteger(decimal: string): number {
  const value = BigInt(decimal);
  if (value > maxSafe) return Number.MAX_SAFE_INTEGER;
  if (value < -maxSafe) return -Number.MAX_SAFE_INTEGER;
  return Number(value);
}

export const OrderListQuery = z.object({
  limit: integerParam(
    `Maximum number of orders returned (default ${LIMIT_DEFAULT}). Any integer is accepted: values below ${LIMIT_MIN} count as ${LIMIT_MIN}, values above ${LIMIT_MAX} as ${LIMIT_MAX}; the answer's \`limit\` is the one applied`,
    LIMIT_DEFAULT,
  ),
  offset: integerParam(
    "Number of orders skipped (default 0). Any integer is accepted: negative values count as 0, values beyond 2^53 − 1 as 2^53 − 1; the answer's `offset` is the one applied",
    0,
  ),
  status: z.enum(ORDER_STATUS_FILTERS).default('all').meta({
    description: '`finished`: fully distributed; `processing`: publishing or publishing ended; `all`: both',
  }),
  cursor: z
    .string()
    .max(CURSOR_MAX_LENGTH)
    .regex(/^[A-Za-z0-9_-]+$/)
    .optional()
    .meta({
      description:
        "An opaque position in the listing, as the `next` or `prev` link of an answer gives it: the page is the `limit` orders just after (`next`) or just before (`prev`) the order it names, whatever was inserted since. Send it unchanged, with the `status` of the page it came from and without `offset` (else 400 Invalid cursor). The answer's `offset` is then 0: the page starts at the cursor, not at a counted position",
    }),
});
export type OrderListQuery = z.infer<typeof OrderListQuery>;

export const OrderIdParams = z.object({
  id: z.string().meta({
    type: 'integer',
    format: 'int64',
    description:
      'The unique ID of the order (up to 2^53 − 1). Anything but decimal digits names no order: 404',
    example: 3000000001,
  }),
});

export const Order = z
  .object({
    id: int64('The unique ID of the order (up to 2^53 − 1)'),
    press_release_title: z.string(),
    order_status: z.enum(ORDER_STATUSES),
    distribution_date_utc: apiTimestamp.meta({
      description: `Scheduled distribution date; equals created_at for immediate orders. ${timestampText}`,
    }),
    created_at: apiTimestamp,
  })
  .meta({ id: 'Order', description: 'An order of the organization' });
export type Order = z.infer<typeof Order>;

export const OrderList = z
  .object({
    data: z.array(Order),
    total: int64('Orders matching the status filter, before limit and offset'),
    limit: int64('The limit applied'),
    offset: int64('The offset applied'),
  })
  .meta({ id: 'OrderList', description: 'One page of orders, newest first' });
export type OrderList = z.infer<typeof OrderList>;

export const Article = z
  .object({
    id: int64('The unique ID of the article (up to 2^53 − 1)'),
    article_url: z.string(),
    published_at: apiTimestamp,
    website_domain: z.string(),
  })
  .meta({ id: 'Article', description: 'A published article of an order' });
export type Article = z.infer<typeof Article>;

export const ArticleList = z
  .object({
    order_id: int64('The order (up to 2^53 − 1)'),
    press_release_title: z.string(),
    data: z.array(Article),
  })
  .meta({ id: 'ArticleList', description: 'The published articles of one order, newest first' });
export type ArticleList = z.infer<typeof ArticleList>;

export const ErrorBody = z
  .object({
    error: z
      .string()
      .meta({ description: 'Short error name (the HTTP reason phrase or a more precise one)' }),
    message: z.string().meta({ description: 'Human-readable explanation' }),
  })
  .meta({ id: 'Error', description: 'The body of every answer that is not 200 or 304' });
export type ErrorBody = z.infer<typeof ErrorBody>;
