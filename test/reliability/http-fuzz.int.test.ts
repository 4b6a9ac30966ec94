/**
 * Random requests against the API: paths, query strings (repeated keys,
 * unicode, huge numbers), Authorization headers (missing, malformed, very long).
 * Never a 5xx; every error is the Error object with the status docs/api.md gives.
 * FUZZ_RUNS sets the number of cases (npm run test:fuzz:long runs 10 000).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMIT_MAX, ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import { decodeCursor, encodeCursor } from '../../src/http/cursor.js';
import { issueKeyOf, keyOf, startTestApi } from '../helpers/api.js';
import { articlePublished, orderCreated } from '../helpers/events.js';

const runs = Number(process.env['FUZZ_RUNS'] ?? 1000);
const OWN_ORDER = 7;

const api = await startTestApi(
  [
    issueKeyOf(1),
    issueKeyOf(2),
    orderCreated({ order_id: OWN_ORDER, organization_id: 1 }),
    orderCreated({ order_id: 8, organization_id: 2 }),
    articlePublished({ article_id: 1, order_id: OWN_ORDER }),
  ],
  { listen: true },
);

const text = fc.oneof(
  fc.constantFrom('', '0', '1', '-1', '+5', '50', '200', '201', '1.5', '1e3', 'abc', ...ORDER_STATUS_FILTERS),
  fc.constantFrom('9'.repeat(16), '9'.repeat(40), '-0', ' 1', '١٢', 'FINISHED', 'null', '[]', '%', '💥'),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.integer().map(String),
  fc
    .record({ status: fc.constantFrom(...ORDER_STATUS_FILTERS), id: fc.nat() })
    .map(({ status, id }) =>
      encodeCursor({ direction: 'after', status, key: { createdAtMs: 0, createdAtSub: 0, orderId: id } }),
    ),
);
const queryKey = fc.oneof(
  fc.constantFrom('limit', 'offset', 'status', 'cursor'),
  fc.string({ maxLength: 6 }),
);
const query = fc.array(fc.tuple(queryKey, text), { maxLength: 5 });
const path = fc.oneof(
  fc.constant({ kind: 'orders' as const }),
  fc
    .oneof(fc.constantFrom(String(OWN_ORDER), '8', '0', '999'), text)
    .map((id) => ({ kind: 'articles' as const, id })),
  fc.string({ maxLength: 20 }).map((segment) => ({ kind: 'other' as const, segment })),
);
const authorization = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'valid' as const, header: `Bearer ${keyOf(1)}` }),
  fc
    .constantFrom(`bearer ${keyOf(1)}`, `Bearer  ${keyOf(1)}`)
    .map((header) => ({ kind: 'valid' as const, header })),
  fc
    .oneof(
      fc.constantFrom(
        'Bearer',
        'Bearer ',
        'Basic abc',
        keyOf(1),
        `Bearer ${keyOf(1)} extra`,
        'Bearer unknown-key',
      ),
      fc.string({ maxLength: 30 }).map((s) => `Bearer ${s}`),
      fc.integer({ min: 513, max: 15_000 }).map((n) => `Bearer ${'k'.repeat(n)}`),
    )
    .map((header) => ({ kind: 'invalid' as const, header })),
  fc
    .integer({ min: 17_000, max: 40_000 })
    .map((n) => ({ kind: 'huge' as const, header: `Bearer ${'k'.repeat(n)}` })),
);

/** What docs/api.md says the answer must be. */
function expectedStatus(
  p: { kind: 'orders' } | { kind: 'articles'; id: string } | { kind: 'other'; segment: string },
  params: [string, string][],
  auth: { kind: 'none' | 'valid' | 'invalid' | 'huge' },
): { status: number; error?: string } {
  if (auth.kind === 'huge') return { status: 431, error: 'Request Header Fields Too Large' };
  if (auth.kind !== 'valid') return { status: 401, error: 'Unauthorized' };
  if (p.kind === 'other') return { status: 404, error: 'Not Found' };
  if (p.kind === 'articles')
    return p.id === String(OWN_ORDER) ? { status: 200 } : { status: 404, error: 'Not Found' };
  const values = (name: string): string[] => params.filter(([k]) => k === name).map(([, v]) => v);
  const integer = (name: string): boolean => {
    const v = values(name);
    return v.length === 0 || (v.length === 1 && /^[+-]?\d+$/.test(v[0]!));
  };
  if (!integer('limit')) return { status: 422, error: 'Invalid limit' };
  if (!integer('offset')) return { status: 422, error: 'Invalid offset' };
  const status = values('status');
  if (!(
    status.length === 0 ||
    (status.length === 1 && (ORDER_STATUS_FILTERS as readonly string[]).includes(status[0]!))
  )) {
    return { status: 422, error: 'Invalid status' };
  }
  const cursors = values('cursor');
  if (cursors.length > 0) {
    const cursor = cursors.length === 1 ? decodeCursor(cursors[0]!) : null;
    if (cursor === null || cursor.status !== (status[0] ?? 'all') || values('offset').length > 0) {
      return { status: 400, error: 'Invalid cursor' };
    }
  }
  return { status: 200 };
}

describe('HTTP fuzz', () => {
  it(`answers ${runs} random requests without a 5xx, each error an Error object with the status docs/api.md gives`, async () => {
    const counts = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(path, query, authorization, async (p, params, auth) => {
        const route =
          p.kind === 'orders'
            ? '/orders'
            : p.kind === 'articles'
              ? `/orders/${encodeURIComponent(p.id)}/articles`
              : `/${encodeURIComponent(p.segment)}`;
        const search = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        const response = await fetch(`${api.baseUrl}${route}${search === '' ? '' : `?${search}`}`, {
          headers: 'header' in auth ? { authorization: auth.header } : {},
        });
        counts.set(response.status, (counts.get(response.status) ?? 0) + 1);
        const body = (await response.json()) as Record<string, unknown>;
        const expected = expectedStatus(p, params, auth);
        expect(response.status).toBe(expected.status);
        if (expected.error !== undefined) {
          expect(Object.keys(body).sort()).toEqual(['error', 'message']);
          expect(body['error']).toBe(expected.error);
          expect(typeof body['message']).toBe('string');
        } else if (p.kind === 'orders') {
          expect((body['limit'] as number) <= LIMIT_MAX).toBe(true);
        }
      }),
      { numRuns: runs },
    );
    console.log(`[fuzz] ${runs} cases, statuses ${JSON.stringify(Object.fromEntries([...counts].sort()))}`);
    expect([...counts.keys()].every((status) => status < 500)).toBe(true);
  });
});
