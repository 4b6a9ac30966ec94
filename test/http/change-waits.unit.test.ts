/**
 * Waiting requests (`Prefer: wait=N` with `If-None-Match`, `src/http/change-waits.ts`) over real
 * HTTP on a loopback port: answered as soon as the tag moves, or 304 at the end of the wait;
 * bounded per key and in total; released when the caller leaves and when the app closes; a key
 * revoked while it waits gets 401.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { buildApp } from '../../src/http/app.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { EventEmitter } from 'node:events';
import {
  ChangeWaits,
  defaultWaitSettings,
  preferredWait,
  type WaitSettings,
} from '../../src/http/change-waits.js';
import { clearWaitRegion, heldRequests, newWaitTable } from '../../src/http/wait-counts.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated, statusChanged } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function waitingApi(settings: Partial<WaitSettings> = {}) {
  const model = memoryReadModel();
  model.apply(
    issueKeyOf(1),
    issueKeyOf(2),
    orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(1) }),
    orderCreated({ order_id: 2, organization_id: 2 }, { occurred_at: at(2) }),
  );
  const reader = new ReadModelReader(model.db, { cacheChanges: true });
  const reads = apiReadsOfOneFile(reader);
  const app = await buildApp({
    readerOf: () => reads,
    logger: pino({ level: 'silent' }),
    waits: { settings: { ...defaultWaitSettings, ...settings } },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  const base = `http://127.0.0.1:${address.port}${API_PREFIX}`;
  let open = true;
  const close = async (): Promise<void> => {
    if (!open) return;
    open = false;
    await app.close();
    model.db.close();
  };
  closers.push(close);
  /** Applies events as the projector does: a commit, then reported to the reader. */
  const commit = (...events: Parameters<typeof model.apply>): void => {
    model.apply(...events);
    reader.forgetChanges();
  };
  const get = async (path: string, headers: Record<string, string> = {}, org = 1, signal?: AbortSignal) => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, {
      headers: { authorization: `Bearer ${keyOf(org)}`, ...headers },
      ...(signal === undefined ? {} : { signal }),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text === '' ? null : (JSON.parse(text) as { data?: { order_status: string }[] }),
      ms: performance.now() - started,
    };
  };
  const tagOf = async (path: string, org = 1): Promise<string> => {
    const tag = (await get(path, {}, org)).headers.get('etag');
    if (tag === null) throw new Error('no tag');
    return tag;
  };
  return { commit, get, tagOf, close };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('Prefer: wait=N', () => {
  it('parses wait among other preferences, and refuses what is not a number of seconds', () => {
    expect(preferredWait('wait=10')).toBe(10);
    expect(preferredWait('respond-async, wait=5')).toBe(5);
    expect(preferredWait(['return=minimal', 'WAIT = "7"'])).toBe(7);
    expect(preferredWait('wait=5; foo=bar')).toBe(5);
    expect(preferredWait('wait=-1')).toBeNull();
    expect(preferredWait('wait=1.5')).toBeNull();
    expect(preferredWait('wait=')).toBeNull();
    expect(preferredWait('waiting=5')).toBeNull();
    expect(preferredWait(undefined)).toBeNull();
    // a header past its bound in bytes is not read at all
    expect(preferredWait(`${' '.repeat(1024)}wait=5`)).toBeNull();
  });

  it('answers 200 with the new page as soon as a commit moves the tag', async () => {
    const api = await waitingApi();
    const tag = await api.tagOf('/orders');
    const waiting = api.get('/orders', { 'if-none-match': tag, prefer: 'wait=10' });
    await sleep(300);
    const committedAt = performance.now();
    api.commit(statusChanged(1, 'finished', { occurred_at: at(3) }));
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.headers.get('preference-applied')).toBe('wait=10');
    expect(answer.headers.get('etag')).not.toBe(tag);
    expect(answer.body?.data?.[0]?.order_status).toBe('finished');
    // learned of the change promptly after its commit (not at the end of the wait)
    expect(performance.now() - committedAt).toBeLessThan(1000);
  });

  it('answers 304 after the wait when nothing it shows changed, other organizations changing meanwhile', async () => {
    const api = await waitingApi();
    const tag = await api.tagOf('/orders');
    const waiting = api.get('/orders', { 'if-none-match': tag, prefer: 'wait=1' });
    await sleep(200);
    api.commit(statusChanged(2, 'finished', { occurred_at: at(3) }));
    const answer = await waiting;
    expect(answer.status).toBe(304);
    expect(answer.headers.get('preference-applied')).toBe('wait=1');
    expect(answer.ms).toBeGreaterThanOrEqual(950);
  });

  it('caps the wait at WAIT_MAX_SECONDS and says so', async () => {
    const api = await waitingApi({ maxSeconds: 1 });
    const tag = await api.tagOf('/orders/1/articles');
    const answer = await api.get('/orders/1/articles', { 'if-none-match': tag, prefer: 'wait=3600' });
    expect(answer.status).toBe(304);
    expect(answer.headers.get('preference-applied')).toBe('wait=1');
    expect(answer.ms).toBeLessThan(2500);
  });

  it('does not hold a request without If-None-Match, with a stale tag, or with waiting off', async () => {
    const api = await waitingApi();
    const plain = await api.get('/orders', { prefer: 'wait=10' });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('preference-applied')).toBeNull();
    const stale = await api.get('/orders', { 'if-none-match': 'W/"stale"', prefer: 'wait=10' });
    expect(stale.status).toBe(200);
    expect(stale.ms).toBeLessThan(1000);
    const off = await waitingApi({ maxSeconds: 0 });
    const tag = await off.tagOf('/orders');
    const answer = await off.get('/orders', { 'if-none-match': tag, prefer: 'wait=10' });
    expect(answer.status).toBe(304);
    expect(answer.headers.get('preference-applied')).toBeNull();
  });

  it('bounds held requests per key and in total: past a bound, answered at once without Preference-Applied', async () => {
    const api = await waitingApi({ perKey: 2, total: 3 });
    const tag1 = await api.tagOf('/orders');
    const tag2 = await api.tagOf('/orders', 2);
    const held = [1, 2].map(() => api.get('/orders', { 'if-none-match': tag1, prefer: 'wait=2' }));
    await sleep(200);
    const overKey = await api.get('/orders', { 'if-none-match': tag1, prefer: 'wait=2' });
    expect(overKey.status).toBe(304);
    expect(overKey.headers.get('preference-applied')).toBeNull();
    expect(overKey.ms).toBeLessThan(500);
    // organization 2's key has room of its own, until the total is reached
    const third = api.get('/orders', { 'if-none-match': tag2, prefer: 'wait=2' }, 2);
    await sleep(200);
    const overTotal = await api.get('/orders', { 'if-none-match': tag2, prefer: 'wait=2' }, 2);
    expect(overTotal.headers.get('preference-applied')).toBeNull();
    expect(overTotal.ms).toBeLessThan(500);
    for (const answer of await Promise.all([...held, third])) {
      expect(answer.status).toBe(304);
      expect(answer.headers.get('preference-applied')).toBe('wait=2');
    }
  });

  it('gives a caller that left its place back at once', async () => {
    const api = await waitingApi({ perKey: 1 });
    const tag = await api.tagOf('/orders');
    const leaving = new AbortController();
    const gone = api
      .get('/orders', { 'if-none-match': tag, prefer: 'wait=30' }, 1, leaving.signal)
      .catch(() => 'aborted');
    await sleep(200);
    leaving.abort();
    expect(await gone).toBe('aborted');
    await sleep(200);
    const next = await api.get('/orders', { 'if-none-match': tag, prefer: 'wait=1' });
    expect(next.headers.get('preference-applied')).toBe('wait=1');
  });

  it('answers every held request when the app closes, none left to time out', async () => {
    const api = await waitingApi();
    const tag = await api.tagOf('/orders');
    const waiting = api.get('/orders', { 'if-none-match': tag, prefer: 'wait=30' });
    await sleep(200);
    const closing = api.close();
    const answer = await waiting;
    await closing;
    expect(answer.status).toBe(304);
    expect(answer.ms).toBeLessThan(5000);
  });

  it('refuses a key revoked while its request waits, never answering it the change', async () => {
    const api = await waitingApi();
    const tag = await api.tagOf('/orders');
    const waiting = api.get('/orders', { 'if-none-match': tag, prefer: 'wait=10' });
    await sleep(200);
    api.commit(apiKeyRevoked('test-api-key-of-org-1', { occurred_at: at(4) }));
    api.commit(statusChanged(1, 'finished', { occurred_at: at(5) }));
    const answer = await waiting;
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: 'Unauthorized' });
  });
});

/** A request and reply as `hold` sees them: a key, and connections that are open until closed. */
function heldPair(keySha256: string) {
  const raw = Object.assign(new EventEmitter(), { destroyed: false });
  return {
    request: { caller: { keySha256 }, raw: { destroyed: false } } as unknown as FastifyRequest,
    reply: { raw } as unknown as FastifyReply,
    leave: () => raw.emit('close'),
  };
}

describe('ChangeWaits', () => {
  it('reads again at once a request whose answer was read before a commit no watcher saw', async () => {
    const epochs = new Int32Array(new SharedArrayBuffer(4));
    const waits = new ChangeWaits(defaultWaitSettings, () => epochs);
    const looks: boolean[] = [];
    const { request, reply } = heldPair('a'.repeat(64));
    const before = waits.mark();
    // a commit between the answer's read and the hold: moved, and notified to nobody
    Atomics.add(epochs, 0, 1);
    waits.hold(request, reply, 30, (final) => (looks.push(final), true), before);
    await sleep(50);
    expect(looks).toEqual([false]);
    // with no commit since its mark, nothing is read again until one comes
    const quiet = heldPair('b'.repeat(64));
    const quietLooks: boolean[] = [];
    waits.hold(quiet.request, quiet.reply, 30, (final) => (quietLooks.push(final), true), waits.mark());
    await sleep(50);
    expect(quietLooks).toEqual([]);
    Atomics.add(epochs, 0, 1);
    Atomics.notify(epochs, 0);
    await sleep(50);
    expect(quietLooks).toEqual([false]);
    waits.close();
  });

  it('bounds requests over every thread, and frees the places of a thread that ended once its region is cleared', () => {
    const table = newWaitTable(2);
    const settings = { ...defaultWaitSettings, perKey: 3, total: 4 };
    const main = new ChangeWaits(settings, () => null, table, 0);
    const thread = new ChangeWaits(settings, () => null, table, 1);
    const hold = (waits: ChangeWaits, key: string) => {
      const pair = heldPair(key.repeat(64));
      return { ...pair, held: waits.hold(pair.request, pair.reply, 30, () => true, waits.mark()) };
    };
    const onThread = [hold(thread, 'a'), hold(thread, 'a')];
    expect(onThread.every((h) => h.held)).toBe(true);
    expect(hold(main, 'a').held).toBe(true);
    // the key's bound (3) counts both threads; the total (4) too
    expect(hold(main, 'a').held).toBe(false);
    expect(hold(main, 'b').held).toBe(true);
    expect(hold(main, 'c').held).toBe(false);
    expect(heldRequests(table)).toBe(4);
    // a caller that leaves gives its place back
    onThread[0]?.leave();
    expect(heldRequests(table)).toBe(3);
    // the thread ends holding one: its place comes back only when its region is cleared
    expect(hold(main, 'c').held).toBe(true);
    expect(hold(main, 'd').held).toBe(false);
    clearWaitRegion(table, 1);
    expect(heldRequests(table)).toBe(3);
    expect(hold(main, 'd').held).toBe(true);
    expect(() => new ChangeWaits(settings, () => null, table, 2)).toThrow(RangeError);
    main.close();
    thread.close();
  });
});
