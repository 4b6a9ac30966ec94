/** Request and response shapes of the External Orders API (docs/api.md). */
import { z } from 'zod';

export const API_PREFIX = '/api/external-api/v1';
export const LIMIT_MIN = 1;
export const LIMIT_MAX = 200;
export const LIMIT_DEFAULT = 50;
export const ORDER_STATUS_FILTERS = ['all', 'finished', 'processing'] as const;

const apiTimestamp = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
  .meta({ description: 'UTC, `YYYY-MM-DD HH:MM:SS`', example: '2026-11-21 10:15:00' });

/**
 * An integer in a query string: decimal digits of any length, leading zeros allowed, with an optional
 * sign, nothing else (no `1.5`, no empty value). Beyond ±(2^53 − 1) it is taken as ±(2^53 − 1), the
 * largest integer a JSON number carries exactly; the route then clamps it to its own range.
 */
function integerParam(
  description: string,
  defaults: { default: number; minimum?: number; maximum?: number },
) {
  return z
    .string()
    .regex(/^[+-]?\d+$/)
    .transform(toSafeInteger)
    .optional()
    .meta({ type: 'integer', description, ...defaults });
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
    `Maximum number of orders returned (default ${LIMIT_DEFAULT}); values outside ${LIMIT_MIN}–${LIMIT_MAX} are clamped`,
    {
      default: LIMIT_DEFAULT,
      minimum: LIMIT_MIN,
      maximum: LIMIT_MAX,
    },
  ),
  offset: integerParam(
    'Number of orders skipped (default 0); negative values count as 0, values beyond 2^53 − 1 as 2^53 − 1',
    {
      default: 0,
      minimum: 0,
    },
  ),
  status: z.enum(ORDER_STATUS_FILTERS).default('all').meta({
    description: '`finished`: fully distributed; `processing`: publishing or publishing ended; `all`: both',
  }),
});
export type OrderListQuery = z.infer<typeof OrderListQuery>;

export const OrderIdParams = z.object({
  id: z.string().meta({ type: 'integer', description: 'The unique ID of the order', example: 1234 }),
});

export const Order = z.object({
  id: z.number().int(),
  press_release_title: z.string(),
  order_status: z.enum(['finished', 'processing']),
  distribution_date_utc: apiTimestamp.meta({
    description: 'Scheduled distribution date (UTC); equals created_at for immediate orders',
  }),
  created_at: apiTimestamp,
});
export type Order = z.infer<typeof Order>;

export const OrderList = z.object({
  data: z.array(Order),
  total: z.number().int().meta({ description: 'Orders matching the status filter, before limit and offset' }),
  limit: z.number().int().meta({ description: 'The limit applied' }),
  offset: z.number().int().meta({ description: 'The offset applied' }),
});
export type OrderList = z.infer<typeof OrderList>;

export const Article = z.object({
  id: z.number().int(),
  article_url: z.string(),
  published_at: apiTimestamp,
  website_domain: z.string(),
});
export type Article = z.infer<typeof Article>;

export const ArticleList = z.object({
  order_id: z.number().int(),
  press_release_title: z.string(),
  data: z.array(Article),
});
export type ArticleList = z.infer<typeof ArticleList>;

export const ErrorBody = z.object({
  error: z.string().meta({ description: 'Short error name' }),
  message: z.string().meta({ description: 'Human-readable explanation' }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;
