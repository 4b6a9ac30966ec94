import fc from 'fast-check';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { entityTag, notModified, offsetPrev, pageLinks } from '../../src/http/conditional.js';

const asking = (ifNoneMatch?: string): FastifyRequest =>
  ({ headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } }) as FastifyRequest;

describe('entity tags', () => {
  it('are weak, and carry the projection version, the digest and the query', () => {
    expect(entityTag('d1', 3, 'all', 20, 0)).toBe(`W/"${PROJECTION_VERSION}.d1.3.all.20.0"`);
  });

  it('differ for any two queries that differ (limit=2&offset=10 is not limit=21&offset=0)', () => {
    expect(entityTag('d', 1, 2, 10)).not.toBe(entityTag('d', 1, 21, 0));
    const query = fc.array(fc.nat(10_000), { minLength: 3, maxLength: 3 });
    fc.assert(
      fc.property(query, query, (a, b) => {
        expect(entityTag('d', ...a) === entityTag('d', ...b)).toBe(a.join() === b.join());
      }),
    );
  });

  it('match If-None-Match weakly, in a list or as *, and nothing else', () => {
    const tag = entityTag('d', 1);
    expect(notModified(asking(), tag)).toBe(false);
    for (const header of [
      tag,
      tag.slice(2),
      ` ${tag} `,
      `"x", ${tag}`,
      `W/"x",${tag.slice(2)}`,
      '*',
      '"x", *',
    ]) {
      expect(notModified(asking(header), tag), header).toBe(true);
    }
    // W/ counts as the weak mark only in front
    const inside = `"${PROJECTION_VERSION}.d.W/1"`;
    for (const header of ['', 'W/"x"', `${tag}x`, `W/${tag}`, `"x" ${tag}`, 'x*', inside]) {
      expect(notModified(asking(header), tag), header).toBe(false);
    }
  });
});

describe('paging links', () => {
  /** The links of an offset page whose next page, when there is one, is named by `cursor`. */
  const links = (limit: number, offset: number, total: number, cursor = 'C') =>
    pageLinks('/orders', {
      limit,
      status: 'all',
      total,
      prev: offsetPrev({ limit, offset, total }),
      next: offset + limit < total ? { cursor } : null,
    });

  it('name the first and last page always, and the previous and next when there is one', () => {
    expect(links(10, 0, 0)).toBe(
      '</orders?limit=10&offset=0&status=all>; rel="first", </orders?limit=10&offset=0&status=all>; rel="last"',
    );
    expect(links(10, 10, 25)).toBe(
      [
        '</orders?limit=10&offset=0&status=all>; rel="first"',
        '</orders?limit=10&offset=0&status=all>; rel="prev"',
        '</orders?limit=10&status=all&cursor=C>; rel="next"',
        '</orders?limit=10&offset=20&status=all>; rel="last"',
      ].join(', '),
    );
    // the last page starts at a multiple of the limit: 20 of 30 with 10 a page
    expect(links(10, 0, 30)).toContain('offset=20&status=all>; rel="last"');
    expect(links(10, 0, 31)).toContain('offset=30&status=all>; rel="last"');
    expect(links(10, 0, 10)).not.toContain('rel="next"');
    expect(links(10, 0, 11)).toContain('cursor=C>; rel="next"');
  });

  it('point the previous page of an offset past the end at the last page, and never below 0', () => {
    expect(links(10, 95, 25)).toContain('offset=20&status=all>; rel="prev"');
    expect(links(10, 5, 25)).toContain('offset=0&status=all>; rel="prev"');
    expect(links(10, 30, 25)).toContain('offset=20&status=all>; rel="prev"');
  });

  it('lead by cursor both ways when the route gives cursors', () => {
    expect(
      pageLinks('/orders', {
        limit: 5,
        status: 'finished',
        total: 12,
        prev: { cursor: 'P' },
        next: { cursor: 'N' },
      }),
    ).toBe(
      [
        '</orders?limit=5&offset=0&status=finished>; rel="first"',
        '</orders?limit=5&status=finished&cursor=P>; rel="prev"',
        '</orders?limit=5&status=finished&cursor=N>; rel="next"',
        '</orders?limit=5&offset=10&status=finished>; rel="last"',
      ].join(', '),
    );
  });
});
