/**
 * A caller walks the whole listing by its `next` links while orders are created: on a model file
 * written by the projector's writer and read by the API's read-only connection (WAL, as served),
 * 10 000 orders with 1 000 created during the walk, newer than its start. The walk by cursor shows
 * each order at most once and every order that existed when it began; the same walk by offset
 * shows orders twice, which is why cursors exist.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import type { DomainEvent } from '../../schemas/events.js';
import { buildApp } from '../../src/http/app.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const dir = tempDir('cursor-walk');
const existing = 10_000;
const inserted = 1_000;
const limit = 50;

/** Orders of organization 1 (and every seventh of organization 2), several created in each second: ties by id. */
function created(from: number, count: number, second: (i: number) => number): DomainEvent[] {
  return Array.from({ length: count }, (_, i) =>
    orderCreated(
      {
        order_id: from + i,
        organization_id: (from + i) % 7 === 0 ? 2 : 1,
        status: i % 3 === 0 ? 'finished' : 'publishing',
      },
      { occurred_at: new Date(Date.parse(at(0)) + second(i) * 1000).toISOString() },
    ),
  );
}

async function servedFile(name: string) {
  const file = join(dir, name);
  const model = memoryReadModel(openOneFileModel(file));
  const reader = new ReadModelReader(openReadModel(file, { readonly: true }));
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
  });
  afterAll(async () => {
    await app.close();
    reader.db.close();
    model.db.close();
  });
  const get = async (url: string) => {
    const response = await app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${keyOf(1)}` },
    });
    expect(response.statusCode, url).toBe(200);
    const link = String(response.headers.link);
    return {
      ids: (JSON.parse(response.body) as { data: { id: number }[] }).data.map((o) => o.id),
      next: /<([^>]+)>; rel="next"/.exec(link)?.[1] ?? null,
    };
  };
  return { model, get };
}

/** Walks from the first page by `next` (or by offset), creating `perPage` newer orders before each next page. */
async function walk(name: string, by: 'cursor' | 'offset') {
  const { model, get } = await servedFile(name);
  // ten orders a second, so many ties; ids in random order of time within a second
  model.applyInBatches(500, [
    issueKeyOf(1),
    ...created(1, existing, (i) => Math.floor(((i * 7919) % existing) / 10)),
  ]);
  // what existed when the walk began, in the listing's order, read from the file itself
  const existed = model.db
    .prepare(
      `SELECT order_id FROM orders WHERE org_id = 1 AND listed_status IS NOT NULL
       ORDER BY created_at_ms DESC, created_at_sub DESC, order_id DESC`,
    )
    .pluck()
    .all() as number[];
  const seen: number[] = [];
  let url: string | null = `${API_PREFIX}/orders?limit=${limit}`;
  let made = 0;
  for (let page = 0; url !== null; page++) {
    const answer = await get(url);
    seen.push(...answer.ids);
    // newer than the walk's start: later seconds, and the last second of the start again (ties by id)
    const batch = Math.min(inserted - made, 6);
    const fromSecond = existing / 10 - 1;
    model.applyInBatches(
      100,
      created(existing + 1 + made, batch, (i) => fromSecond + Math.floor((made + i) / 2)),
    );
    made += batch;
    url =
      by === 'cursor'
        ? answer.next
        : answer.ids.length === 0
          ? null
          : `${API_PREFIX}/orders?limit=${limit}&offset=${(page + 1) * limit}`;
  }
  expect(made).toBe(inserted);
  return { existed, seen };
}

describe('a walk by cursor while orders are created', () => {
  it('shows no order twice and misses none that existed when it began', async () => {
    const { existed, seen } = await walk('cursor.sqlite', 'cursor');
    expect(existed.length).toBeGreaterThan(8000);
    const duplicates = seen.length - new Set(seen).size;
    const shown = new Set(seen);
    const missed = existed.filter((id) => !shown.has(id));
    expect({ duplicates, missed: missed.length }).toEqual({ duplicates: 0, missed: 0 });
    // and it shows them in the listing's order: exactly the orders that existed, newest first
    expect(seen).toEqual(existed);
  });

  it('by offset instead, shows orders twice at page boundaries', async () => {
    const { seen } = await walk('offset.sqlite', 'offset');
    expect(seen.length - new Set(seen).size).toBeGreaterThan(0);
  });
});
