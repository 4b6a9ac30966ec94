/**
 * Cursor paging of GET /orders as a caller sees it: the `next` and `prev` links carry cursors, a
 * walk by them shows every order once, the envelope says what it says of an offset page, and a bad
 * cursor is a 400 with the Error object.
 */
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { encodeCursor } from '../../src/http/cursor.js';
import { issueKeyOf, keyOf, startTestApi, type TestApi } from '../helpers/api.js';
import { at, orderCreated, orderDeleted } from '../helpers/events.js';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

const key = keyOf(1);

/** 30 orders of organization 1, three created in each minute (ties by id), statuses alternating; 5 of organization 2. */
const events: DomainEvent[] = [
  issueKeyOf(1),
  issueKeyOf(2),
  ...Array.from({ length: 30 }, (_, i) =>
    orderCreated(
      { order_id: i + 1, organization_id: 1, status: i % 2 === 0 ? 'finished' : 'publishing' },
      { occurred_at: at(Math.floor(i / 3)) },
    ),
  ),
  ...Array.from({ length: 5 }, (_, i) =>
    orderCreated({ order_id: 101 + i, organization_id: 2, status: 'finished' }, { occurred_at: at(i * 2) }),
  ),
];

interface Page {
  data: { id: number }[];
  total: number;
  limit: number;
  offset: number;
}

/** The target of `rel` in a Link header, or null. */
function linkOf(link: string | null, rel: string): string | null {
  return new RegExp(`<([^>]+)>; rel="${rel}"`).exec(link ?? '')?.[1] ?? null;
}

/** Follows `rel` from `url` to its end: every page's ids, and the answers. */
async function walk(api: TestApi, url: string, rel: 'next' | 'prev', asKey = key) {
  const pages: { ids: number[]; body: Page; etag: string; url: string }[] = [];
  for (let next: string | null = url; next !== null;) {
    const answer = await api.getRaw(next, asKey);
    expect(answer.status, next).toBe(200);
    const body = answer.body as Page;
    pages.push({ ids: body.data.map((o) => o.id), body, etag: answer.headers.get('etag') ?? '', url: next });
    next = linkOf(answer.headers.get('link'), rel);
    expect(pages.length).toBeLessThan(100);
  }
  return pages;
}

const prefix = '/api/external-api/v1';

describe('cursor paging', () => {
  it('walks every order once by the next links, and back by the prev links, for each status', async () => {
    const api = await startTestApi(events);
    for (const status of ORDER_STATUS_FILTERS) {
      const whole = (await api.get(`/orders?limit=200&status=${status}`, key)).body as Page;
      const forward = await walk(api, `${prefix}/orders?limit=4&status=${status}`, 'next');
      expect(forward.flatMap((p) => p.ids)).toEqual(whole.data.map((o) => o.id));
      for (const page of forward.slice(1)) {
        expect(page.url).toMatch(/&cursor=[A-Za-z0-9_-]+$/);
        // the envelope of a cursor page: offset 0 (the page starts at the cursor), total as ever
        expect(page.body).toMatchObject({ total: whole.total, limit: 4, offset: 0 });
      }
      // every page but the first and last is full; the tags of two pages differ
      expect(new Set(forward.map((p) => p.etag)).size).toBe(forward.length);
      const last = forward[forward.length - 1]!;
      const back = await walk(api, last.url, 'prev');
      expect(back.map((p) => p.ids)).toEqual(forward.map((p) => p.ids).reverse());
    }
  });

  it('answers 304 to a cursor page’s own tag, and names the cursor in it', async () => {
    const api = await startTestApi(events);
    const first = await api.get('/orders?limit=5', key);
    const next = linkOf(first.headers.get('link'), 'next')!;
    const page = await api.getRaw(next, key);
    const tag = page.headers.get('etag')!;
    expect(tag).not.toBe(first.headers.get('etag'));
    expect(tag).toContain(new URL(next, 'http://x').searchParams.get('cursor'));
    const again = await api.getRaw(next, key);
    expect(again.headers.get('etag')).toBe(tag);
    const revalidated = await api.get(next.slice(prefix.length), key, { 'if-none-match': tag });
    expect(revalidated.status).toBe(304);
  });

  it('reads after the cursor’s place even when its order is gone, and nothing inserted before it', async () => {
    const api = await startTestApi(events);
    const first = await api.get('/orders?limit=6', key);
    const next = linkOf(first.headers.get('link'), 'next')!;
    const before = (await api.getRaw(next, key)).body as Page;
    // the last order shown (id 25, created at(8)) is deleted, and a newer one is created
    api.apply(
      orderDeleted(25, { occurred_at: at(60) }),
      orderCreated({ order_id: 50, organization_id: 1 }, { occurred_at: at(61) }),
    );
    const after = (await api.getRaw(next, key)).body as Page;
    expect(after.data).toEqual(before.data);
    expect(after.total).toBe(before.total);
  });

  it('shows another organization nothing: its cursor is a place in the caller’s own listing', async () => {
    const api = await startTestApi(events);
    const first = await api.get('/orders?limit=3', key);
    const next = linkOf(first.headers.get('link'), 'next')!;
    const ownIds = new Set([101, 102, 103, 104, 105]);
    const pages = await walk(api, next, 'next', keyOf(2));
    const seen = pages.flatMap((p) => p.ids);
    // organization 1's cursor names at(9): organization 2's orders older than it
    expect(seen).toEqual([105, 104, 103, 102, 101]);
    expect(seen.every((id) => ownIds.has(id))).toBe(true);
    expect(pages[0]!.body.total).toBe(5);
  });

  it('refuses a malformed cursor, one of another status, one with an offset and one past 128 characters: 400 Invalid cursor', async () => {
    const api = await startTestApi(events);
    const finished = encodeCursor({
      direction: 'after',
      status: 'finished',
      key: { createdAtMs: Date.parse(at(5)), createdAtSub: 0, orderId: 16 },
    });
    const malformed = {
      error: 'Invalid cursor',
      message:
        'cursor must be one a `next` or `prev` link of this API gave, unchanged (at most 128 characters).',
    };
    for (const cursor of ['', 'abc', '%2B%2B', `${finished}=`, finished.slice(1), 'A'.repeat(129)]) {
      const answer = await api.get(`/orders?status=finished&cursor=${cursor}`, key);
      expect(answer.status, cursor).toBe(400);
      expect(answer.body, cursor).toEqual(malformed);
    }
    // at the bound it is read, and is no cursor; past it, refused unread: the same answer
    expect((await api.get(`/orders?cursor=${'A'.repeat(128)}`, key)).body).toEqual(malformed);
    const otherStatus = await api.get(`/orders?cursor=${finished}`, key);
    expect(otherStatus.status).toBe(400);
    expect(otherStatus.body).toEqual({
      error: 'Invalid cursor',
      message:
        'cursor names a place in a listing of another status: send it with the `status` of the link that gave it.',
    });
    for (const offset of ['0', '5']) {
      const withOffset = await api.get(`/orders?status=finished&offset=${offset}&cursor=${finished}`, key);
      expect(withOffset.status).toBe(400);
      expect(withOffset.body).toEqual({
        error: 'Invalid cursor',
        message:
          'cursor and offset exclude each other: a cursor names where the page starts. Send one of them.',
      });
    }
    expect((await api.get(`/orders?status=finished&cursor=${finished}`, key)).status).toBe(200);
    // authentication first, as for every other parameter
    expect((await api.get('/orders?cursor=abc', null)).status).toBe(401);
  });

  it('documents the cursor parameter, its bound and pattern, in OpenAPI', async () => {
    const api = await startTestApi([issueKeyOf(1)]);
    const document = (await api.get('/openapi.json')).body as {
      paths: Record<string, { get: { parameters: { name: string; schema: Record<string, unknown> }[] } }>;
    };
    const cursor = document.paths['/orders']?.get.parameters.find((p) => p.name === 'cursor');
    expect(cursor?.schema).toMatchObject({ type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' });
  });
});
