import { brotliCompressSync, brotliDecompressSync, gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { acceptedEncoding, compressionSettings, KeptBodies } from '../../src/http/plugins/compression.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';

const model = memoryReadModel();
model.apply(
  issueKeyOf(1),
  ...Array.from({ length: 60 }, (_, i) =>
    orderCreated({ order_id: i + 1, organization_id: 1, status: 'finished', created_at: at(i) }),
  ),
);
const reader = new ReadModelReader(model.db);
const app = await buildApp({
  readerOf: () => apiReadsOfOneFile(reader),
  logger: pino({ level: 'silent' }),
  rateLimit: { max: 1000, windowMs: 60_000 },
});
afterAll(async () => {
  await app.close();
  model.db.close();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'GET',
    url: `/api/external-api/v1${path}`,
    headers: { authorization: `Bearer ${keyOf(1)}`, ...headers },
  });

describe('response compression', () => {
  it('answers in brotli or gzip as Accept-Encoding asks, and both decode to the uncompressed JSON', async () => {
    const plain = await get('/orders?limit=50');
    const br = await get('/orders?limit=50', { 'accept-encoding': 'br' });
    const gzip = await get('/orders?limit=50', { 'accept-encoding': 'gzip' });
    const either = await get('/orders?limit=50', { 'accept-encoding': 'gzip, deflate, br' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.rawPayload.length).toBeGreaterThan(compressionSettings.threshold);
    expect([br.headers['content-encoding'], gzip.headers['content-encoding']]).toEqual(['br', 'gzip']);
    expect(either.headers['content-encoding']).toBe('br');
    expect(JSON.parse(brotliDecompressSync(br.rawPayload).toString())).toEqual(plain.json());
    expect(JSON.parse(gunzipSync(gzip.rawPayload).toString())).toEqual(plain.json());
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 3);
    expect(Number(br.headers['content-length'])).toBe(br.rawPayload.length);
    for (const answer of [plain, br, gzip]) {
      expect(answer.headers['vary']).toBe('accept-encoding');
      expect(answer.headers['etag']).toBe(plain.headers['etag']);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    }
  });

  it(`sends answers under ${compressionSettings.threshold} bytes as they are`, async () => {
    const small = await get('/orders?limit=1', { 'accept-encoding': 'br, gzip' });
    expect(small.statusCode).toBe(200);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.rawPayload.length).toBeLessThan(compressionSettings.threshold);
    expect(small.json()).toMatchObject({ total: 60, limit: 1 });
  });

  it('never compresses a 304 or an error, however long', async () => {
    const ok = await get('/orders?limit=50');
    const notModified = await get('/orders?limit=50', {
      'accept-encoding': 'br, gzip',
      'if-none-match': String(ok.headers['etag']),
    });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.rawPayload.length).toBe(0);
    expect(notModified.headers['content-encoding']).toBeUndefined();
    expect(notModified.headers['vary']).toBe('accept-encoding');
    const errors = [
      await get(`/${'x'.repeat(3000)}`, { 'accept-encoding': 'br, gzip' }),
      await get('/orders/999/articles', { 'accept-encoding': 'br, gzip' }),
      await get('/orders?status=nope', { 'accept-encoding': 'br, gzip' }),
      await get('/orders', { 'accept-encoding': 'br, gzip', authorization: 'Bearer nope' }),
    ];
    expect(errors.map((answer) => [answer.statusCode, answer.headers['content-encoding']])).toEqual([
      [404, undefined],
      [404, undefined],
      [422, undefined],
      [401, undefined],
    ]);
    // the unknown route's message repeats the path: over the threshold, and still plain JSON
    expect(errors[0]?.rawPayload.length).toBeGreaterThan(compressionSettings.threshold);
    expect(errors[0]?.json()).toMatchObject({ error: 'Not Found' });
  });

  it('compresses the OpenAPI document when asked, with Vary on it as on every answer', async () => {
    const plain = await get('/openapi.json');
    const br = await get('/openapi.json', { 'accept-encoding': 'br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect([plain.headers['vary'], br.headers['vary']]).toEqual(['accept-encoding', 'accept-encoding']);
    expect(JSON.parse(brotliDecompressSync(br.rawPayload).toString())).toEqual(plain.json());
  });
});

describe('compressed answers kept by tag', () => {
  it('sends the kept body while the tag stands, and a new one once the answer changes', async () => {
    const first = await get('/orders?limit=50', { 'accept-encoding': 'br' });
    const again = await get('/orders?limit=50', { 'accept-encoding': 'br' });
    expect(again.rawPayload.equals(first.rawPayload)).toBe(true);
    expect(again.headers['etag']).toBe(first.headers['etag']);
    // another query of the same organization has its own tag, so its own body
    const other = await get('/orders?limit=40', { 'accept-encoding': 'br' });
    expect(JSON.parse(brotliDecompressSync(other.rawPayload).toString())).toEqual(
      (await get('/orders?limit=40')).json(),
    );
    model.apply(
      orderCreated({ order_id: 1000, organization_id: 1, status: 'finished', created_at: at(1000) }),
    );
    const changed = await get('/orders?limit=50', { 'accept-encoding': 'br' });
    expect(changed.headers['etag']).not.toBe(first.headers['etag']);
    const shown = JSON.parse(brotliDecompressSync(changed.rawPayload).toString()) as {
      data: { id: number }[];
      total: number;
    };
    expect(shown).toEqual((await get('/orders?limit=50')).json());
    expect([shown.data[0]?.id, shown.total]).toEqual([1000, 61]);
    // gzip is kept apart from brotli under the same tag
    const gzip = await get('/orders?limit=50', { 'accept-encoding': 'gzip' });
    expect(JSON.parse(gunzipSync(gzip.rawPayload).toString())).toEqual(shown);
  });

  it('keeps at most its bound in bytes, the least recently used going first', () => {
    const kept = new KeptBodies(100);
    const body = (n: number) => Buffer.alloc(n, 1);
    kept.set('a', body(39));
    kept.set('b', body(39));
    expect(kept.size).toEqual({ entries: 2, bytes: 80 });
    expect(kept.get('a')?.length).toBe(39); // a is now the most recently used
    kept.set('c', body(39));
    expect([kept.get('a')?.length, kept.get('b'), kept.get('c')?.length]).toEqual([39, undefined, 39]);
    expect(kept.size.bytes).toBeLessThanOrEqual(100);
    kept.set('d', body(200)); // larger than the bound: not kept, nothing dropped for it
    expect([kept.get('d'), kept.size.entries]).toEqual([undefined, 2]);
    kept.set('e', body(99));
    expect([kept.size.entries, kept.size.bytes, kept.get('a')]).toEqual([1, 100, undefined]);
  });

  it('keeps each body in memory of its own, not the far larger buffer node:zlib returns a view of', () => {
    const compressed = brotliCompressSync(Buffer.from('x'.repeat(3000)));
    expect(compressed.buffer.byteLength).toBeGreaterThan(compressed.length * 100);
    const kept = new KeptBodies(1000);
    kept.set('k', compressed);
    const held = kept.get('k')!;
    expect(held.equals(compressed)).toBe(true);
    expect(held.buffer.byteLength).toBe(compressed.length);
  });
});

describe('Accept-Encoding', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['identity', undefined],
    ['deflate', undefined],
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['GZIP, BR', 'br'],
    ['gzip, deflate, br, zstd', 'br'],
    ['*', 'br'],
    ['br;q=0, *', 'gzip'],
    ['br;q=0, gzip;q=0', undefined],
    ['*;q=0', undefined],
    ['br;q=0.5, gzip;q=0.8', 'gzip'],
    ['br;q=0.8, gzip;q=0.8', 'br'],
    ['gzip;q=1.0, br;q=0.999', 'gzip'],
    [' br ; q = 0.2 , gzip ; q=0.1', 'br'],
    ['br;q=abc, gzip', 'gzip'],
    ['br;q=2, gzip', 'gzip'],
    ['br;level=3', 'br'],
    ['gzip;q=0, *;q=0.3', 'br'],
    ['bro, gzipped', undefined],
  ])('%j asks for %j', (header, encoding) => {
    expect(acceptedEncoding(header)).toBe(encoding);
  });

  it('answers each request as its own header asks, however often a value is repeated', async () => {
    for (let i = 0; i < 3; i += 1) {
      for (const [header, encoding] of [
        ['br;q=0, gzip', 'gzip'],
        ['gzip;q=0', undefined],
        ['br', 'br'],
      ] as const) {
        expect(
          (await get('/orders?limit=50', { 'accept-encoding': header })).headers['content-encoding'],
        ).toBe(encoding);
      }
    }
    // values past what is kept are read each time, and still answered right
    const long = `${'x'.repeat(300)}, gzip`;
    expect((await get('/orders?limit=50', { 'accept-encoding': long })).headers['content-encoding']).toBe(
      'gzip',
    );
  });
});

describe('the OpenAPI document', () => {
  it('lists Content-Encoding and Vary on every endpoint’s 200 and Vary on its 304, as they are sent', async () => {
    const document = (await app.inject({ method: 'GET', url: '/api/external-api/v1/openapi.json' })).json<{
      paths: Record<
        string,
        { get: { responses: Record<string, { headers: Record<string, { schema: object }> }> } }
      >;
    }>();
    expect(Object.keys(document.paths)).toContain('/orders');
    for (const path of Object.keys(document.paths)) {
      const { responses } = document.paths[path]!.get;
      expect(responses['200']!.headers['Content-Encoding']!.schema).toEqual({
        type: 'string',
        enum: ['br', 'gzip'],
      });
      expect(responses['200']!.headers['Vary']!.schema).toEqual({ type: 'string', const: 'accept-encoding' });
      expect(responses['304']!.headers['Vary']!.schema).toEqual({ type: 'string', const: 'accept-encoding' });
      expect(responses['304']!.headers).not.toHaveProperty('Content-Encoding');
    }
    const sent = await get('/orders?limit=50', { 'accept-encoding': 'gzip' });
    expect([sent.headers['content-encoding'], sent.headers['vary']]).toEqual(['gzip', 'accept-encoding']);
  });
});
