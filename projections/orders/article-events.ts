/** The article events' rules: article.published writes the article, article.removed leaves a tombstone. */
import type { ArticlePublished, ArticleRemoved } from '../../schemas/events.js';
import type { ArticleRow } from './rows.js';
import { newerRow, toEpochMs } from '../facts/stamps.js';

/** What an article event changes: the article's row after it. */
export interface ArticleChange {
  table: 'articles';
  row: ArticleRow;
}

/** The URL's host without a leading `www.`, as docs/events.md defines the default website domain. */
export function websiteDomainOf(articleUrl: string): string {
  return new URL(articleUrl).hostname.replace(/^www\./, '');
}

export function applyArticlePublished(
  event: ArticlePublished,
  current: ArticleRow | undefined,
): ArticleChange | null {
  const data = event.data;
  const row = newerRow<ArticleRow>(event, 0, current, {
    article_id: data.article_id,
    order_id: data.order_id,
    article_url: data.article_url,
    website_domain: data.website_domain ?? websiteDomainOf(data.article_url),
    published_at_ms: toEpochMs(data.published_at),
    removed: 0,
  });
  return row === null ? null : { table: 'articles', row };
}

/** A tombstone: nothing of the article is kept but its order, so any order of facts leaves the same row. */
export function applyArticleRemoved(
  event: ArticleRemoved,
  current: ArticleRow | undefined,
): ArticleChange | null {
  const row = newerRow<ArticleRow>(event, 1, current, {
    article_id: event.data.article_id,
    order_id: event.data.order_id,
    article_url: null,
    website_domain: null,
    published_at_ms: null,
    removed: 1,
  });
  return row === null ? null : { table: 'articles', row };
}
