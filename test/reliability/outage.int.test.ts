/**
 * The broker becomes unreachable mid-ingest (its process is frozen with SIGSTOP)
 * under steady API load, then comes back. The test starts a broker of its own,
 * since it must be able to stop it. OUTAGE_MS sets the outage (npm run
 * test:outage:long: 30 s).
 *
 * The last part of the log is produced only after the outage, so the outage
 * falls mid-ingest however fast the projector is: a single fetch can carry the
 * whole first part, and waiting for a sampled lag between 0 and the total
 * could miss that window.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startLocalBroker, stopLocalBroker, type LocalBroker } from '../../tools/local-kafka.js';
import { appliedMessages, topicEndOffsets } from '../../tools/model-progress.js';
import { endOffsetsVia } from '../helpers/kafkajs-port.js';
import { API_PREFIX, ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/service.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { createContractTopics, publish, waitUntil } from '../helpers/kafka.js';
import { runLoad } from '../../tools/load.js';
import { dumpDataDir, dumpModel, memoryReadModel } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import type { TopicRole } from '../../schemas/streams.js';

const outageMs = Number(process.env['OUTAGE_MS'] ?? 10_000);

describe('broker outage', () => {
  let broker: LocalBroker | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'outage-'));
  const dataDir = join(dir, 'data');
  afterAll(async () => {
    if (broker !== undefined) {
      process.kill(broker.pid, 'SIGCONT');
      await stopLocalBroker(broker);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it(`keeps answering 2xx through a ${outageMs / 1000} s outage, reports unready, and resumes with nothing lost or doubled`, async () => {
    broker = await startLocalBroker();
    const kafka = new Kafka({
      clientId: 'outage-test',
      brokers: [broker.brokers],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await Promise.all([admin.connect(), producer.connect()]);
    const topics = await createContractTopics(admin);
    const log = seededLog(31, { orgs: 30, orders: 6000, events: 60_000, garbage: 0 });
    const key = issueKeyOf(1);
    const cut = Math.floor(log.publications.length * 0.8);
    await publish(producer, topics, [key, ...log.publications.slice(0, cut)]);
    await admin.disconnect();

    const config = loadConfig({
      ...serviceEnv({ topics, dataDir, httpPort: 0, adminPort: 0, groupId: 'outage' }),
      KAFKA_BROKERS: broker.brokers,
      READY_MAX_LAG: '100',
      LOG_LEVEL: 'silent',
      STALL_TIMEOUT_MS: '3000',
      LAG_CHECK_INTERVAL_MS: '500',
    });
    const service = await startService(config, pino({ level: 'silent' }));
    const address = service.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const base = `http://127.0.0.1:${address.port}${API_PREFIX}`;

    const auth = { authorization: `Bearer ${keyOf(1)}` };
    await waitUntil(
      'the key is applied',
      async () => (await fetch(`${base}/orders`, { headers: auth })).status === 200,
    );
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const statuses = ORDER_STATUS_FILTERS;
    const load = runLoad({
      durationMs: 300_000,
      concurrency: 4,
      until: done,
      next: (i) => ({
        url: `${base}/orders?status=${statuses[i % statuses.length]!}&limit=${1 + (i % 50)}&offset=${i % 500}`,
        headers: auth,
      }),
    });
    const readiness: { at: number; ready: boolean }[] = [];
    const sampler = setInterval(() => readiness.push({ at: Date.now(), ready: service.health().ready }), 200);

    const applied = (): number => appliedMessages(dataDir);
    const total = log.publications.length + 1;
    const appliedAtStop = applied();
    const stoppedAt = Date.now();
    process.kill(broker.pid, 'SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, outageMs));
    process.kill(broker.pid, 'SIGCONT');
    const resumedAt = Date.now();
    await publish(producer, topics, log.publications.slice(cut));
    // What the topics hold: a produce request caught by the outage may have been retried and written twice.
    const held = await topicEndOffsets(endOffsetsVia(kafka), Object.values(topics));
    await producer.disconnect();
    await waitUntil(
      'caught up after the outage',
      () => service.health().ready && applied() === held,
      180_000,
    );
    const caughtUpAt = Date.now();
    const readyAtEnd = service.health().ready;
    finished();
    const report = await load;
    clearInterval(sampler);
    await service.close();

    const duringOutage = readiness.filter((r) => r.at > stoppedAt + 4000 && r.at < resumedAt);
    console.log(
      `[outage] ${outageMs} ms outage with ${appliedAtStop} of the first ${cut + 1} messages applied at the stop; the topics hold ${held} messages for ${total} produced (${held - total} written again by producer retries); caught up ${caughtUpAt - resumedAt} ms after the broker returned; ` +
        `${report.requests} requests ${JSON.stringify(report.statuses)}, p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms; ` +
        `unready in ${duringOutage.filter((r) => !r.ready).length}/${duringOutage.length} samples during the outage`,
    );
    expect(appliedAtStop).toBeGreaterThan(0);
    expect(Object.keys(report.statuses)).toEqual(['200']);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(duringOutage.every((r) => !r.ready)).toBe(true);
    expect(readyAtEnd).toBe(true);

    const expected = memoryReadModel();
    expected.apply(key, ...log.history);
    expect(dumpDataDir(dataDir)).toEqual(dumpModel(expected.db));
  });
  it('stops cleanly on SIGTERM while the broker is frozen: exit code 0 within the shutdown bound', async () => {
    broker ??= await startLocalBroker();
    const topics = await freshTopics(broker);
    const adminPort = await freePort();
    const service = spawnService({
      ...serviceEnv({
        topics,
        dataDir: join(dir, 'stop'),
        httpPort: await freePort(),
        adminPort,
        groupId: 'outage-stop',
      }),
      KAFKA_BROKERS: broker.brokers,
      LOG_LEVEL: 'warn',
    });
    await waitUntil('the service is ready', async () => {
      const answer = await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null);
      return answer?.status === 200;
    });
    process.kill(broker.pid, 'SIGSTOP');
    try {
      await expectCleanStop(service, 'with the broker frozen');
    } finally {
      process.kill(broker.pid, 'SIGCONT');
    }
  });
  it('stops cleanly on SIGTERM after starting while the broker was frozen: exit code 0 within the shutdown bound', async () => {
    broker ??= await startLocalBroker();
    const topics = await freshTopics(broker);
    const adminPort = await freePort();
    process.kill(broker.pid, 'SIGSTOP');
    try {
      const service = spawnService({
        ...serviceEnv({
          topics,
          dataDir: join(dir, 'start-frozen'),
          httpPort: await freePort(),
          adminPort,
          groupId: 'outage-start-frozen',
        }),
        KAFKA_BROKERS: broker.brokers,
        LOG_LEVEL: 'warn',
      });
      await waitUntil(
        'the service answers /healthz',
        async () => {
          const answer = await fetch(`http://127.0.0.1:${adminPort}/healthz`).catch(() => null);
          return answer?.status === 200;
        },
        120_000,
      );
      await new Promise((resolveWait) => setTimeout(resolveWait, 2000));
      await expectCleanStop(service, 'after starting with the broker frozen');
    } finally {
      process.kill(broker.pid, 'SIGCONT');
    }
  }, 180_000);
});

async function freshTopics(broker: LocalBroker): Promise<Record<TopicRole, string>> {
  const kafka = new Kafka({ clientId: 'outage-stop', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await createContractTopics(admin);
  } finally {
    await admin.disconnect();
  }
}

async function expectCleanStop(service: ServiceProcess, when: string): Promise<void> {
  const stoppedAt = Date.now();
  service.child.kill('SIGTERM');
  const code = await service.exited;
  const took = Date.now() - stoppedAt;
  console.log(`[outage] SIGTERM ${when}: exit code ${code} after ${took} ms`);
  expect(code, service.output.slice(-20).join('\n')).toBe(0);
  expect(took).toBeLessThan(15_000);
}
