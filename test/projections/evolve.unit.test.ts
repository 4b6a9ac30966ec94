import { describe, expect, it } from 'vitest';
import { applyApiKeyIssued, applyApiKeyRevoked } from '../../projections/keys/api-key-events.js';
import {
  applyArticlePublished,
  applyArticleRemoved,
  websiteDomainOf,
} from '../../projections/orders/article-events.js';
import {
  applyOrderCreated,
  applyOrderDeleted,
  applyOrderStatusChanged,
  applyOrderUpdated,
} from '../../projections/orders/order-events.js';
import { evolve, type CurrentRows } from '../../projections/orders/evolve.js';
import type { ArticleRow, OrderRow } from '../../projections/orders/rows.js';
import type { ApiKeyRow } from '../../projections/keys/rows.js';
import {
  apiKeyIssued,
  apiKeyRevoked,
  articlePublished,
  articleRemoved,
  at,
  orderCreated,
  orderDeleted,
  orderUpdated,
  statusChanged,
} from '../helpers/events.js';

function orderAfter(...steps: ((current: OrderRow | undefined) => ReturnType<typeof applyOrderCreated>)[]) {
  let row: OrderRow | undefined;
  for (const step of steps) {
    const change = step(row);
    if (change?.table === 'orders') row = change.row;
  }
  return row;
}

describe('applyOrderCreated', () => {
  it('creates a listed order with every field of the event', () => {
    const change = applyOrderCreated(
      orderCreated(
        { order_id: 7, organization_id: 3, status: 'finished', distribution_date: at(60), created_at: at(0) },
        { occurred_at: at(0), event_id: 'a' },
      ),
      undefined,
    );
    expect(change).toMatchObject({
      table: 'orders',
      before: undefined,
      row: {
        order_id: 7,
        org_id: 3,
        title: 'Press release 7',
        status: 'finished',
        listed_status: 'finished',
        created_at_ms: Date.parse(at(0)),
        distribution_ms: Date.parse(at(60)),
      },
    });
  });

  it('keeps an order with an unlisted status out of the listing', () => {
    const change = applyOrderCreated(orderCreated({ order_id: 7, status: 'draft' }), undefined);
    expect(change?.table === 'orders' && change.row.listed_status).toBeNull();
  });

  it('changes nothing when the same event is applied again', () => {
    const event = orderCreated({ order_id: 7 });
    const row = orderAfter((c) => applyOrderCreated(event, c));
    expect(applyOrderCreated(event, row)).toBeNull();
  });

  it('does not override a title set by a later update that arrived first', () => {
    const row = orderAfter(
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'New' }, { occurred_at: at(5) }),
          c,
        ),
      (c) =>
        applyOrderCreated(
          orderCreated({ order_id: 7, press_release_title: 'Old' }, { occurred_at: at(0) }),
          c,
        ),
    );
    expect(row?.title).toBe('New');
    expect(row?.listed_status).toBe('processing');
  });
});

describe('applyOrderUpdated', () => {
  it('changes only the fields present in the event', () => {
    const row = orderAfter(
      (c) =>
        applyOrderCreated(
          orderCreated({ order_id: 7, distribution_date: at(90) }, { occurred_at: at(0) }),
          c,
        ),
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'Renamed' }, { occurred_at: at(1) }),
          c,
        ),
    );
    expect(row).toMatchObject({ title: 'Renamed', distribution_ms: Date.parse(at(90)) });
  });

  it('makes an order immediate when distribution_date is set to null', () => {
    const row = orderAfter(
      (c) =>
        applyOrderCreated(
          orderCreated({ order_id: 7, distribution_date: at(90) }, { occurred_at: at(0) }),
          c,
        ),
      (c) =>
        applyOrderUpdated(orderUpdated({ order_id: 7, distribution_date: null }, { occurred_at: at(1) }), c),
    );
    expect(row?.distribution_ms).toBeNull();
  });

  it('ignores an older update arriving after a newer one (rule 1)', () => {
    const row = orderAfter(
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'Newer' }, { occurred_at: at(9) }),
          c,
        ),
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'Older' }, { occurred_at: at(3) }),
          c,
        ),
    );
    expect(row?.title).toBe('Newer');
  });

  it('breaks a tie of occurred_at by the greater event_id (rule 1)', () => {
    const same = { occurred_at: at(3) };
    const forward = orderAfter(
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'B' }, { ...same, event_id: 'b' }),
          c,
        ),
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'A' }, { ...same, event_id: 'a' }),
          c,
        ),
    );
    const backward = orderAfter(
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'A' }, { ...same, event_id: 'a' }),
          c,
        ),
      (c) =>
        applyOrderUpdated(
          orderUpdated({ order_id: 7, press_release_title: 'B' }, { ...same, event_id: 'b' }),
          c,
        ),
    );
    expect(forward?.title).toBe('B');
    expect(backward).toEqual(forward);
  });
});

describe('applyOrderStatusChanged', () => {
  it('is kept for an order not yet seen and takes effect when it arrives (rule 2)', () => {
    const row = orderAfter(
      (c) => applyOrderStatusChanged(statusChanged(7, 'finished', { occurred_at: at(5) }), c),
      (c) =>
        applyOrderCreated(orderCreated({ order_id: 7, status: 'publishing' }, { occurred_at: at(0) }), c),
    );
    expect(row).toMatchObject({ status: 'finished', listed_status: 'finished' });
  });

  it('unlists an order moved to a status the API does not show', () => {
    const row = orderAfter(
      (c) => applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(0) }), c),
      (c) => applyOrderStatusChanged(statusChanged(7, 'cancelled', { occurred_at: at(5) }), c),
    );
    expect(row?.listed_status).toBeNull();
  });
});

describe('applyOrderDeleted', () => {
  it('unlists the order (rule 3)', () => {
    const row = orderAfter(
      (c) => applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(0) }), c),
      (c) => applyOrderDeleted(orderDeleted(7, { occurred_at: at(5) }), c),
    );
    expect(row?.listed_status).toBeNull();
  });

  it('wins over an order.created with the same occurred_at, in either order (rule 3)', () => {
    const created = orderCreated({ order_id: 7 }, { occurred_at: at(5), event_id: 'z' });
    const deleted = orderDeleted(7, { occurred_at: at(5), event_id: 'a' });
    const one = orderAfter(
      (c) => applyOrderCreated(created, c),
      (c) => applyOrderDeleted(deleted, c),
    );
    const other = orderAfter(
      (c) => applyOrderDeleted(deleted, c),
      (c) => applyOrderCreated(created, c),
    );
    expect(one?.listed_status).toBeNull();
    expect(other).toEqual(one);
  });

  it('is not undone by a later status change', () => {
    const row = orderAfter(
      (c) => applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(0) }), c),
      (c) => applyOrderDeleted(orderDeleted(7, { occurred_at: at(5) }), c),
      (c) => applyOrderStatusChanged(statusChanged(7, 'finished', { occurred_at: at(9) }), c),
    );
    expect(row?.listed_status).toBeNull();
  });

  it('is undone by a re-creation that happened after it', () => {
    const row = orderAfter(
      (c) => applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(0) }), c),
      (c) => applyOrderDeleted(orderDeleted(7, { occurred_at: at(5) }), c),
      (c) => applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(9) }), c),
    );
    expect(row?.listed_status).toBe('processing');
  });
});

describe('applyArticlePublished', () => {
  it('defaults website_domain to the URL host without www.', () => {
    const change = applyArticlePublished(
      articlePublished({ article_id: 1, order_id: 7, article_url: 'https://www.Daily.example/a?b=1' }),
      undefined,
    );
    expect(change).toMatchObject({ table: 'articles', row: { website_domain: 'daily.example', removed: 0 } });
    expect(websiteDomainOf('http://news.example:8080/x')).toBe('news.example');
  });

  it('keeps a website_domain given by the event', () => {
    const change = applyArticlePublished(
      articlePublished({ article_id: 1, order_id: 7, website_domain: 'Syndicated Daily' }),
      undefined,
    );
    expect(change?.table === 'articles' && change.row.website_domain).toBe('Syndicated Daily');
  });

  it('replaces the fields of an article published again later', () => {
    const first = applyArticlePublished(
      articlePublished(
        { article_id: 1, order_id: 7, article_url: 'https://a.example/1' },
        { occurred_at: at(1) },
      ),
      undefined,
    );
    const second = applyArticlePublished(
      articlePublished(
        { article_id: 1, order_id: 7, article_url: 'https://b.example/1' },
        { occurred_at: at(2) },
      ),
      first?.table === 'articles' ? first.row : undefined,
    );
    expect(second?.table === 'articles' && second.row.article_url).toBe('https://b.example/1');
  });
});

describe('applyArticleRemoved', () => {
  it('wins over a publication with the same occurred_at, in either order (rule 3)', () => {
    const published = articlePublished(
      { article_id: 1, order_id: 7 },
      { occurred_at: at(4), event_id: 'zzz' },
    );
    const removed = articleRemoved(1, 7, { occurred_at: at(4), event_id: 'aaa' });
    const afterPublish = applyArticlePublished(published, undefined);
    const one = applyArticleRemoved(
      removed,
      afterPublish?.table === 'articles' ? afterPublish.row : undefined,
    );
    const afterRemove = applyArticleRemoved(removed, undefined);
    const other = applyArticlePublished(
      published,
      afterRemove?.table === 'articles' ? afterRemove.row : undefined,
    );
    expect(one?.table === 'articles' && one.row.removed).toBe(1);
    expect(other).toBeNull();
    expect(afterRemove).toEqual(one);
  });

  it('gives way to a publication that happened later', () => {
    const removed = applyArticleRemoved(articleRemoved(1, 7, { occurred_at: at(4) }), undefined);
    const republished = applyArticlePublished(
      articlePublished({ article_id: 1, order_id: 7 }, { occurred_at: at(6) }),
      removed?.table === 'articles' ? removed.row : undefined,
    );
    expect(republished?.table === 'articles' && republished.row.removed).toBe(0);
  });
});

describe('api keys', () => {
  const hash = 'a'.repeat(64);

  it('stores the organization and the SHA-256 of an issued key', () => {
    expect(applyApiKeyIssued(apiKeyIssued('k1', 3, hash), undefined)).toMatchObject({
      table: 'api_keys',
      row: { key_id: 'k1', org_id: 3, key_sha256: hash, revoked: 0 },
    });
  });

  it('keeps a revocation that arrives before the issue, and the key stays revoked', () => {
    const revoked = applyApiKeyRevoked(apiKeyRevoked('k1', { occurred_at: at(5) }), undefined);
    const issued = applyApiKeyIssued(
      apiKeyIssued('k1', 3, hash, { occurred_at: at(1) }),
      revoked?.table === 'api_keys' ? revoked.row : undefined,
    );
    expect(revoked).toMatchObject({ row: { revoked: 1, key_sha256: null, org_id: null } });
    expect(issued).toBeNull();
  });
});

describe('evolve', () => {
  const order = applyOrderCreated(orderCreated({ order_id: 7 }, { occurred_at: at(0) }), undefined);
  const article = applyArticlePublished(
    articlePublished({ article_id: 4, order_id: 7 }, { occurred_at: at(0) }),
    undefined,
  );
  const apiKey = applyApiKeyIssued(apiKeyIssued('k1', 3, 'a'.repeat(64), { occurred_at: at(0) }), undefined);
  const rows = {
    order: order?.table === 'orders' ? order.row : undefined,
    article: article?.table === 'articles' ? article.row : undefined,
    apiKey: apiKey?.table === 'api_keys' ? apiKey.row : undefined,
  };
  /** The rows held, each asked for by its own id only. */
  const current: CurrentRows = {
    order: (id): OrderRow | undefined => (id === 7 ? rows.order : undefined),
    article: (id): ArticleRow | undefined => (id === 4 ? rows.article : undefined),
    apiKey: (id): ApiKeyRow | undefined => (id === 'k1' ? rows.apiKey : undefined),
  };

  it('hands each type of event, with the row it names, to the rule of that type', () => {
    const later = { occurred_at: at(5) };
    const cases = [
      [orderCreated({ order_id: 7, press_release_title: 'Again' }, later), applyOrderCreated, rows.order],
      [orderUpdated({ order_id: 7, press_release_title: 'Renamed' }, later), applyOrderUpdated, rows.order],
      [orderDeleted(7, later), applyOrderDeleted, rows.order],
      [statusChanged(7, 'processing', later), applyOrderStatusChanged, rows.order],
      [
        articlePublished({ article_id: 4, order_id: 7, article_url: 'https://b.example/x' }, later),
        applyArticlePublished,
        rows.article,
      ],
      [articleRemoved(4, 7, later), applyArticleRemoved, rows.article],
      [apiKeyIssued('k1', 3, 'b'.repeat(64), later), applyApiKeyIssued, rows.apiKey],
      [apiKeyRevoked('k1', later), applyApiKeyRevoked, rows.apiKey],
    ] as const;
    const tables = new Set<string>();
    for (const [event, rule, row] of cases) {
      const expected = (rule as (e: typeof event, r: typeof row) => unknown)(event, row);
      expect(expected, event.type).not.toBeNull();
      expect(evolve(event, current), event.type).toEqual(expected);
      tables.add(JSON.stringify(expected));
    }
    // eight different changes: no two rules stand in for each other here
    expect(tables.size).toBe(cases.length);
  });
});
