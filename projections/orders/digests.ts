/**
 * Digests of what an answer shows, for entity tags that depend on the data alone: the digest of a
 * set of rows is the XOR of a hash of each row's identity and shown content. XOR is commutative and
 * its own inverse, so a change moves a digest by `hash(before) ^ hash(after)` whatever order the
 * changes came in, and two models holding the same rows hold the same digests: across replicas,
 * restarts and rebuilds. Ids are unique within a set, so no row cancels another.
 *
 * - per organization (`org_digests`): every order GET /orders lists for it (its tagged fields, and
 *   created_at to the nanosecond): what a page and its total are read from;
 * - per order (`order_digests`): the order's visibility and title, and each of its published
 *   articles (their tagged fields): what GET /orders/{id}/articles shows.
 *
 * What each hashes follows the answers' declaration (`answers.ts`): a shown field is in the tag.
 *
 * A digest is a 53-bit integer (a safe JavaScript integer, an SQLite INTEGER), so a change leaves a
 * digest unchanged by chance with probability 2^-53.
 */
import {
  alsoTagged,
  articleFields,
  articleListOrderFields,
  orderFields,
  taggedColumns,
  type AnswerName,
} from './answers.js';
import type { ArticleRow, OrderRow } from './rows.js';

/** A digest as its two halves: `hi` holds the top 21 bits, `lo` the low 32. */
export interface Digest {
  hi: number;
  lo: number;
}

const two32 = 0x1_0000_0000;

/**
 * A 53-bit hash of a string: two 32-bit multiply-xorshift lanes over its UTF-16 code units, mixed
 * together at the end (the cyrb53 construction). Not cryptographic: it spreads ordinary data well
 * and costs about as much as a string copy, which matters on every projected order.
 */
export function hash53(text: string): Digest {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return { hi: (h2 & 0x1f_ffff) >>> 0, lo: h1 >>> 0 };
}

export const zeroDigest = (): Digest => ({ hi: 0, lo: 0 });

/** `into ^= other`, in place. */
export function xorInto(into: Digest, other: Digest): void {
  into.hi = (into.hi ^ other.hi) >>> 0;
  into.lo = (into.lo ^ other.lo) >>> 0;
}

export const isZero = (digest: Digest): boolean => digest.hi === 0 && digest.lo === 0;

/** The digest as the integer stored in the file. */
export const digestValue = (digest: Digest): number => digest.hi * two32 + digest.lo;

/** The digest of a stored integer. */
export const digestOf = (value: number): Digest => ({
  hi: Math.floor(value / two32) >>> 0,
  lo: value >>> 0,
});

/** Strings of free text are written with their length, so no two rows spell the same text. */
const text = (value: string | null): string => (value === null ? '-' : `${value.length}:${value}`);

/** What a digest reads of a row: a column's value. */
type Stored = string | number | null;

/**
 * Where each column goes in a digest's hashed text. This is part of the file's format (the digests
 * are stored): changing a digest's text, a column added or moved, needs a `PROJECTION_VERSION` bump.
 * Which columns are hashed is not decided here but by the answers (`answers.ts`): those of the fields
 * declared `tagged`, and `alsoTagged`; a tagged column missing from its layout fails at load.
 */
export const digestLayouts = {
  order: ['order_id', 'listed_status', 'created_at_ms', 'created_at_sub', 'distribution_ms', 'title'],
  articleListOrder: ['order_id', 'org_id', 'title'],
  article: ['article_id', 'published_at_ms', 'article_url', 'website_domain'],
} as const satisfies Record<AnswerName, readonly string[]>;

/** The hashed text of a row: `prefix`, then each tagged column in layout order, `|`-separated. */
function digestText<Row>(
  prefix: string,
  fields: Parameters<typeof taggedColumns>[0],
  also: readonly string[],
  layout: readonly (keyof Row & string)[],
): (row: Row) => string {
  const tagged = taggedColumns(fields);
  for (const column of also) if (!tagged.has(column)) tagged.set(column, { text: false });
  const missing = [...tagged.keys()].filter((column) => !layout.includes(column as keyof Row & string));
  if (missing.length > 0) {
    throw new Error(
      `digest "${prefix}": tagged columns without a place in its layout: ${missing.join(', ')}`,
    );
  }
  const parts = layout.flatMap((column) => {
    const spec = tagged.get(column);
    return spec === undefined ? [] : [{ column, text: spec.text }];
  });
  return (row) => {
    let hashed = prefix;
    for (const { column, text: free } of parts) {
      const value = row[column] as Stored;
      hashed += `|${free ? text(value as string | null) : String(value)}`;
    }
    return hashed;
  };
}

/** What GET /orders shows of an order (`orderFields`), as hashed. */
export const listedOrderText = digestText<OrderRow>('o', orderFields, alsoTagged.order, digestLayouts.order);
/** What GET /orders/{id}/articles shows of the order itself (`articleListOrderFields`), as hashed. */
export const articleListOrderText = digestText<OrderRow>(
  't',
  articleListOrderFields,
  alsoTagged.articleListOrder,
  digestLayouts.articleListOrder,
);
/** What GET /orders/{id}/articles shows of an article (`articleFields`), as hashed. */
export const publishedArticleText = digestText<ArticleRow>(
  'a',
  articleFields,
  alsoTagged.article,
  digestLayouts.article,
);

/** What GET /orders shows of an order, and where: null when it is listed nowhere. */
export function listedOrderHash(row: OrderRow | undefined): { orgId: number; hash: Digest } | null {
  if (row?.listed_status == null || row.org_id === null) return null;
  return { orgId: row.org_id, hash: hash53(listedOrderText(row)) };
}

/** What GET /orders/{id}/articles shows of the order itself: null when the order is not listed. */
export function articleListOrderHash(row: OrderRow | undefined): Digest | null {
  if (row?.listed_status == null || row.org_id === null) return null;
  return hash53(articleListOrderText(row));
}

/** What GET /orders/{id}/articles shows of an article, and of which order: null when removed. */
export function publishedArticleHash(row: ArticleRow | undefined): { orderId: number; hash: Digest } | null {
  if (row === undefined || row.removed === 1) return null;
  return { orderId: row.order_id, hash: hash53(publishedArticleText(row)) };
}
