/**
 * HTTP_WORKERS: several threads answer on one port, and whatever one of them promises, all do. A
 * revocation reaches every thread within the bound, a switch to a rebuilt file reaches every thread
 * before the old file is deleted, and once any thread has answered from the new file none answers
 * from the old one again. Which thread answered is read from the service's own request log (a
 * request id per request; the main thread's lines carry no thread number).
 */
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../tools/local-kafka.js';
import { runServiceCommand } from '../../tools/harness.js';
import { API_PREFIX } from '../../schemas/api.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

const threads = 3;
/** The campaign's bound for a revocation (tools/campaign). */
const revocationBoundMs = 5000;

interface Answer {
  status: number;
  etag: string | undefined;
  thread: number;
}

/** GET /orders on a connection of its own, so that the kernel may hand it to any thread. */
function get(port: number, id: string): Promise<{ status: number; etag: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `${API_PREFIX}/orders?limit=5`,
        agent: false,
        headers: { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': id, connection: 'close' },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode ?? 0, etag: response.headers.etag }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The thread that logged request `id` (0: the main thread); null until its line is written. */
function threadOf(service: ServiceProcess, id: string): number | null {
  for (const line of service.output) {
    if (!line.includes(`"reqId":"${id}"`)) continue;
    const thread = /"thread":(\d+)/.exec(line);
    return thread === null ? 0 : Number(thread[1]);
  }
  return null;
}

let asked = 0;
async function ask(service: ServiceProcess, port: number): Promise<Answer> {
  asked += 1;
  const id = `rt-${asked}`;
  const answer = await get(port, id);
  let thread = threadOf(service, id);
  for (let i = 0; thread === null && i < 100; i++) {
    await new Promise((wake) => setTimeout(wake, 10));
    thread = threadOf(service, id);
  }
  if (thread === null) throw new Error(`no log line for request ${id}`);
  return { ...answer, thread };
}

/**
 * Asks until every thread has given an answer that `settled` accepts, and fails if any answer after
 * the first accepted one is not accepted (an older answer after a newer one); the time it took.
 */
async function untilEveryThread(
  service: ServiceProcess,
  port: number,
  settled: (answer: Answer) => boolean,
  boundMs: number,
): Promise<{ ms: number; answers: number }> {
  const started = Date.now();
  const reached = new Set<number>();
  let newerSeen = false;
  let answers = 0;
  while (reached.size < threads) {
    if (Date.now() - started > boundMs)
      throw new Error(`after ${boundMs} ms only threads ${[...reached].join(', ')} answer the new state`);
    const answer = await ask(service, port);
    answers += 1;
    if (settled(answer)) {
      newerSeen = true;
      reached.add(answer.thread);
    } else {
      expect(newerSeen, `thread ${answer.thread} answered the older state after a newer answer`).toBe(false);
    }
  }
  return { ms: Date.now() - started, answers };
}

describe(`the API answered by ${threads} threads (HTTP_WORKERS=${threads})`, () => {
  const dir = tempDir('request-threads');

  it('takes a revocation and a switch to a rebuilt file in every thread within the bound, and never answers older after newer', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    // Tags depend on the data alone, so the rebuilt file must hold other data to be told apart: an
    // order whose event is over the service's MESSAGE_MAX_BYTES (dead-lettered), which the rebuild,
    // run with the default bound, lists.
    await publish(producer, topics, [
      issueKeyOf(1),
      ...Array.from({ length: 30 }, (_, i) => orderCreated({ order_id: i + 1 }, { occurred_at: at(i) })),
      orderCreated({ order_id: 31, press_release_title: 'x'.repeat(1000) }, { occurred_at: at(31) }),
    ]);
    const dataDir = join(dir, 'data');
    const httpPort = await freePort();
    const adminPort = await freePort();
    const env = {
      ...serviceEnv({ topics, dataDir, httpPort, adminPort, groupId: 'request-threads' }),
      HTTP_WORKERS: String(threads),
      LOG_LEVEL: 'debug',
      MESSAGE_MAX_BYTES: '1024',
    };
    const service = spawnService(env);
    await waitUntil(
      'the service is ready with its orders',
      async () =>
        (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null))?.status === 200 &&
        (await get(httpPort, 'warm-up')).status === 200,
    );

    // Every thread answers (and so remembers the key), from the first model file.
    const firstTag = (await ask(service, httpPort)).etag;
    expect(firstTag).toBeDefined();
    await untilEveryThread(service, httpPort, (a) => a.status === 200 && a.etag === firstTag, 30_000);

    // A rebuild promotes a new file: once any thread answers from it, none answers from the old.
    const files = new ModelFiles(dataDir);
    const oldFile = files.currentFile();
    await runServiceCommand(['rebuild'], {
      ...env,
      LOG_LEVEL: 'warn',
      MESSAGE_MAX_BYTES: String(1024 * 1024),
    });
    await waitUntil('the service serves the rebuilt file', () => files.currentFile() !== oldFile);
    const switched = await untilEveryThread(
      service,
      httpPort,
      (a) => a.status === 200 && a.etag !== firstTag,
      revocationBoundMs,
    );
    await waitUntil('the old file is deleted', () => oldFile === null || !existsSync(oldFile), 10_000);

    // A revocation: once any thread refuses the key, none accepts it again.
    const revokedAt = Date.now();
    await publish(producer, topics, [apiKeyRevoked('test-api-key-of-org-1')]);
    const revoked = await untilEveryThread(service, httpPort, (a) => a.status === 401, revocationBoundMs);
    console.log(
      `switch reached all ${threads} threads ${switched.ms} ms after the file was promoted (${switched.answers} answers); ` +
        `revocation refused by all ${Date.now() - revokedAt} ms after publishing (${revoked.answers} answers)`,
    );

    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    await producer.disconnect();
    await admin.disconnect();
  });
});
