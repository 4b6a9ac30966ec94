/**
 * The request log: at the default level (`info`) an ordinary answer writes no line; a 5xx and a slow
 * answer are logged whatever the level; at `debug` every request has its two lines. No line holds the
 * key.
 */
import { pino, type Bindings } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { requestLogger, slowRequestMs } from '../../src/http/plugins/observability.js';
import { positionHeader, positionToken } from '../../src/http/position.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { offsetKey, ReadModelReader, type ApiReads } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';

const v1 = '/api/external-api/v1';

async function loggedApi(level: string, reads: (base: ApiReads) => ApiReads = (base) => base) {
  const model = memoryReadModel();
  model.apply(
    issueKeyOf(1),
    orderCreated({ order_id: 1, organization_id: 1, status: 'finished', created_at: at(10) }),
  );
  const base = apiReadsOfOneFile(new ReadModelReader(model.db));
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as never) });
  // every child made of it, as Fastify makes one per request (pino's children inherit the method)
  const children: Bindings[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with each child as its this
  const child = logger.child;
  logger.child = function (this: typeof logger, bindings, options) {
    children.push(bindings);
    return child.call(this, bindings, options);
  } as typeof logger.child;
  const app = await buildApp({ readerOf: () => reads(base), logger, readPositionWaitMs: 20 });
  const get = async (id: string, headers: Record<string, string> = {}) =>
    (
      await app.inject({
        method: 'GET',
        url: `${v1}/orders`,
        headers: { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': id, ...headers },
      })
    ).statusCode;
  const ofRequest = (id: string) => lines.filter((line) => line['reqId'] === id);
  const close = async () => {
    await app.close();
    model.db.close();
  };
  return { get, lines, ofRequest, close, children };
}

describe('the request log', () => {
  it('writes no line for an ordinary answer at the default level', async () => {
    const api = await loggedApi('info');
    expect(await api.get('quiet-1')).toBe(200);
    await api.close();
    expect(api.ofRequest('quiet-1')).toEqual([]);
  });

  it('makes no logger for a request that writes no line, and one for a request that does', async () => {
    let failNext = false;
    const api = await loggedApi('info', (base) => ({
      ...base,
      inReadTransaction: (read, how) => {
        if (failNext) throw new Error('the model file went away');
        return base.inReadTransaction(read, how);
      },
    }));
    expect(await api.get('quiet-2')).toBe(200);
    expect(await api.get('quiet-3')).toBe(200);
    expect(api.children.filter((bindings) => bindings['reqId'] !== undefined)).toEqual([]);
    failNext = true;
    expect(await api.get('failed-2')).toBe(500);
    await api.close();
    expect(api.children.filter((bindings) => bindings['reqId'] !== undefined)).toEqual([
      { reqId: 'failed-2' },
    ]);
    expect(api.ofRequest('failed-2').map((line) => line['level'])).toContain(50);
  });

  it("answers as pino's child would: its bindings, its levels, and a route's own level at once", () => {
    const lines: Record<string, unknown>[] = [];
    const parent = pino(
      { level: 'info' },
      { write: (line: string) => lines.push(JSON.parse(line) as never) },
    );
    const lazy = requestLogger(parent, { reqId: 'r-1' }, {}) as ReturnType<typeof requestLogger> &
      Pick<typeof parent, 'bindings' | 'isLevelEnabled'>;
    expect(lazy.isLevelEnabled('debug')).toBe(false);
    expect(lazy.isLevelEnabled('info')).toBe(true);
    expect(lazy.bindings()).toEqual({ reqId: 'r-1' });
    lazy.debug('not written');
    lazy.info('written');
    lazy.child({ part: 'inner' }).warn('inner line');
    // a route at debug: its logger is made at once with the route's level
    requestLogger(parent, { reqId: 'r-2' }, { level: 'debug' }).debug('at the route level');
    expect(lines.map((line) => [line['reqId'], line['part'], line['msg'], line['level']])).toEqual([
      ['r-1', undefined, 'written', 30],
      ['r-1', 'inner', 'inner line', 40],
      ['r-2', undefined, 'at the route level', 20],
    ]);
  });

  it('writes both lines of every request at debug, with the method, route and status', async () => {
    const api = await loggedApi('debug');
    expect(await api.get('loud-1')).toBe(200);
    await api.close();
    const lines = api.ofRequest('loud-1');
    expect(lines.map((line) => [line['msg'], line['level']])).toEqual([
      ['incoming request', 20],
      ['request completed', 20],
    ]);
    expect(lines[0]).toMatchObject({ req: { method: 'GET', url: `${v1}/orders` } });
    expect(lines[1]).toMatchObject({ res: { statusCode: 200 } });
  });

  it('logs a 5xx at error at the default level', async () => {
    const api = await loggedApi('info', (base) => ({
      ...base,
      inReadTransaction: () => {
        throw new Error('the model file went away');
      },
    }));
    expect(await api.get('failed-1')).toBe(500);
    await api.close();
    const completed = api.ofRequest('failed-1').filter((line) => line['msg'] === 'request completed');
    expect(completed).toMatchObject([
      { level: 50, req: { method: 'GET', url: `${v1}/orders` }, res: { statusCode: 500 } },
    ]);
  });

  it('logs a 503 for a read position not reached yet (Retry-After) at debug, not as a failure', async () => {
    const api = await loggedApi('info');
    const ahead = positionToken(new Map([[offsetKey(testTopics.orders, 0), 1000]]));
    expect(await api.get('behind-1', { [positionHeader]: ahead })).toBe(503);
    await api.close();
    expect(api.ofRequest('behind-1')).toEqual([]);
  });

  it(`logs an answer slower than ${slowRequestMs} ms at warn at the default level`, async () => {
    const api = await loggedApi('info', (base) => ({
      ...base,
      inReadTransaction: (read, how) => {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, slowRequestMs + 100);
        return base.inReadTransaction(read, how);
      },
    }));
    expect(await api.get('slow-1')).toBe(200);
    await api.close();
    const [slow, ...others] = api.ofRequest('slow-1');
    expect(others).toEqual([]);
    expect(slow).toMatchObject({
      level: 40,
      msg: 'slow request',
      req: { method: 'GET', url: `${v1}/orders` },
      res: { statusCode: 200 },
    });
    expect(slow?.['responseTime']).toBeGreaterThan(slowRequestMs);
  });

  it('never writes the key', async () => {
    const api = await loggedApi('debug');
    await api.get('secret-1');
    await api.close();
    expect(JSON.stringify(api.lines)).not.toContain(keyOf(1));
  });
});
