/**
 * The rule of `projections/orders/answers.ts`: a shown field is in the tag. Each answer's entity tag
 * comes from a digest of what it shows (`digests.ts`); a shown field the digest leaves out would let
 * a changed answer be confirmed by a stale 304.
 */
import { describe, expect, it } from 'vitest';
import { answers, type AnswerName, type FieldSpec } from '../../projections/orders/answers.js';
import {
  articleListOrderHash,
  listedOrderHash,
  publishedArticleHash,
  type Digest,
} from '../../projections/orders/digests.js';
import type { ArticleRow, OrderRow } from '../../projections/orders/rows.js';

const order: OrderRow = {
  order_id: 3_000_000_001,
  org_id: 7,
  member_id: 11,
  created_at_ms: Date.parse('2026-11-21T10:15:00Z'),
  created_at_sub: 123_456,
  created_v_at: 1,
  created_v_sub: 0,
  created_v_id: 'e1',
  title: 'Quarterly results',
  title_v_at: 1,
  title_v_sub: 0,
  title_v_id: 'e1',
  // NULL: the distribution date is the creation (`orElse`), so both columns are shown
  distribution_ms: null,
  distribution_v_at: null,
  distribution_v_sub: null,
  distribution_v_id: null,
  status: 'distributing',
  status_v_at: 1,
  status_v_sub: 0,
  status_v_id: 'e1',
  deleted_v_at: null,
  deleted_v_sub: null,
  deleted_v_id: null,
  listed_status: 'processing',
};

const article: ArticleRow = {
  article_id: 5_000_001,
  order_id: order.order_id,
  article_url: 'https://news.example/1',
  website_domain: 'news.example',
  published_at_ms: Date.parse('2026-11-22T08:00:00Z'),
  removed: 0,
  v_at: 1,
  v_sub: 0,
  v_rank: 0,
  v_id: 'e2',
};

/** Another value of the same kind as `value`, as an event could set it. */
function changed(column: string, value: unknown): unknown {
  if (column === 'listed_status') return value === 'finished' ? 'processing' : 'finished';
  if (typeof value === 'number') return value + 1;
  if (typeof value === 'string') return `${value} (changed)`;
  return 1_700_000_000_000; // a NULL the field falls back from
}

/** Every column a field shows: its own, and the one it falls back to. */
const shownColumns = (spec: FieldSpec<string>): string[] =>
  spec.orElse === undefined ? [spec.column] : [spec.column, spec.orElse];

interface Answer {
  answer: string;
  row: Record<string, unknown>;
  digest: (row: Record<string, unknown>) => Digest | undefined;
}

/** A row and the digest of each declared answer: one that is declared and missing here does not compile. */
const cases = {
  order: {
    answer: 'GET /orders: an Order',
    row: order as unknown as Record<string, unknown>,
    digest: (row: Record<string, unknown>) => listedOrderHash(row as unknown as OrderRow)?.hash,
  },
  articleListOrder: {
    answer: 'GET /orders/{id}/articles: the order',
    row: order as unknown as Record<string, unknown>,
    digest: (row: Record<string, unknown>) => articleListOrderHash(row as unknown as OrderRow) ?? undefined,
  },
  article: {
    answer: 'GET /orders/{id}/articles: an Article',
    row: article as unknown as Record<string, unknown>,
    digest: (row: Record<string, unknown>) => publishedArticleHash(row as unknown as ArticleRow)?.hash,
  },
} satisfies Record<AnswerName, Answer>;

/** Every declared answer with its fields, read from the declaration (`answers`). */
const declared = (Object.keys(answers) as AnswerName[]).map((name) => {
  const fields: Readonly<Record<string, FieldSpec<string>>> = answers[name];
  return { ...cases[name], fields };
});

describe('a shown field is in the tag', () => {
  it.each(declared)('$answer: every field is declared tagged', ({ fields }) => {
    const untagged = Object.entries(fields)
      .filter(([, spec]) => !spec.tagged)
      .map(([name]) => name);
    expect(untagged, 'shown fields the entity tag does not cover').toEqual([]);
  });

  it.each(declared)('$answer: a change of any shown field moves the digest', ({ fields, row, digest }) => {
    const before = digest(row);
    expect(before).toBeDefined();
    const unmoved: string[] = [];
    for (const [name, spec] of Object.entries(fields)) {
      for (const column of shownColumns(spec)) {
        const after = digest({ ...row, [column]: changed(column, row[column]) });
        if (after === undefined || (after.hi === before?.hi && after.lo === before.lo)) {
          unmoved.push(`${name} (${column})`);
        }
      }
    }
    expect(unmoved, 'shown fields whose change leaves the digest, and so the ETag, unchanged').toEqual([]);
  });
});
