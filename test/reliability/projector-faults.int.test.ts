/**
 * The projector under faults, through the real broker: the broker is gone when the projector
 * starts or restarts, and the projector's thread dies. The test runs a broker of its own, since it
 * halts it and brings it back on the same data and ports.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import {
  haltLocalBroker,
  resumeLocalBroker,
  startLocalBroker,
  stopLocalBroker,
  type LocalBroker,
} from '../../tools/local-kafka.js';
import { API_PREFIX } from '../../schemas/api.js';
import { loadConfig } from '../../src/config.js';
import type { ProjectorThread } from '../../src/projector/projector-thread.js';
import { startService, type RunningService } from '../../src/service.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { createContractTopics, publish, waitUntil } from '../helpers/kafka.js';
import { dumpDataDir, dumpModel, memoryReadModel } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';
import { serviceEnv } from '../helpers/service-process.js';

describe('projector faults', () => {
  let broker: LocalBroker | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'faults-'));
  const services: RunningService[] = [];
  afterAll(async () => {
    for (const service of services) await service.close().catch(() => undefined);
    if (broker !== undefined) await stopLocalBroker(broker);
    rmSync(dir, { recursive: true, force: true });
  });

  it('recovers without an operator when the broker is gone at start and at a restart, and restarts a dead projector thread with nothing lost or doubled', async () => {
    broker = await startLocalBroker();
    const kafka = new Kafka({
      clientId: 'faults-test',
      brokers: [broker.brokers],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    const topics = await createContractTopics(admin);
    await admin.disconnect();
    const log = seededLog(47, { orgs: 10, orders: 2000, events: 20_000, garbage: 0 });
    const key = issueKeyOf(1);
    const third = Math.floor(log.publications.length / 3);
    const publishPart = async (from: number, to: number, first: boolean): Promise<void> => {
      const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
      await producer.connect();
      await publish(producer, topics, [...(first ? [key] : []), ...log.publications.slice(from, to)]);
      await producer.disconnect();
    };
    await publishPart(0, third, true);

    const dataDir = join(dir, 'data');
    const config = loadConfig({
      ...serviceEnv({ topics, dataDir, httpPort: 0, adminPort: 0, groupId: 'faults' }),
      KAFKA_BROKERS: broker.brokers,
      READY_MAX_LAG: '0',
      LOG_LEVEL: 'silent',
      LAG_CHECK_INTERVAL_MS: '300',
      STALL_TIMEOUT_MS: '5000',
    });
    const admin_ = (service: RunningService, path: string): Promise<Response> => {
      const address = service.admin.server.address();
      if (address === null || typeof address === 'string') throw new Error('no address');
      return fetch(`http://127.0.0.1:${address.port}${path}`);
    };
    const restarts = async (service: RunningService, reason: string): Promise<number> => {
      const text = await (await admin_(service, '/metrics')).text();
      const line = text
        .split('\n')
        .find((l) =>
          l.startsWith(`orders_read_model_consumer_restarts_total{projector="served",reason="${reason}"}`),
        );
      return line === undefined ? 0 : Number(line.split(' ').at(-1));
    };

    // 1. The broker is gone when the service and its projector start.
    await haltLocalBroker(broker);
    const service = await startService(config, pino({ level: 'silent' }));
    services.push(service);
    await waitUntil(
      'the projector start failed twice',
      async () => (await restarts(service, 'start_failed')) >= 2,
      120_000,
    );
    expect((await admin_(service, '/healthz')).status).toBe(200);
    const down = await admin_(service, '/readyz');
    expect(down.status).toBe(503);
    expect(((await down.json()) as { reasons: string[] }).reasons.join('; ')).toMatch(
      /the projector is down/,
    );
    broker = await resumeLocalBroker(broker);
    await waitUntil(
      'ready once the broker is back',
      async () => (await admin_(service, '/readyz')).status === 200,
      120_000,
    );

    // 2. The projector's thread dies mid-ingest: it is restarted, and nothing is lost or doubled.
    await publishPart(third, 2 * third, false);
    await waitUntil('a projector runs', () => service.projector() !== null);
    const failedBefore = await restarts(service, 'failed');
    const killed = service.projector() as ProjectorThread;
    await killed.terminate();
    await waitUntil(
      'the dead thread was restarted',
      async () => (await restarts(service, 'failed')) > failedBefore,
      60_000,
    );
    await waitUntil(
      'ready after the restart',
      async () => (await admin_(service, '/readyz')).status === 200,
      120_000,
    );
    expect(service.projector()).not.toBe(killed);

    // 3. The broker is gone when the projector restarts.
    const startFailures = await restarts(service, 'start_failed');
    await waitUntil('a projector runs', () => service.projector() !== null);
    await haltLocalBroker(broker);
    await (service.projector() as ProjectorThread | null)?.terminate();
    await waitUntil(
      'a restart failed while the broker is gone',
      async () => (await restarts(service, 'start_failed')) > startFailures,
      120_000,
    );
    expect((await admin_(service, '/healthz')).status).toBe(200);
    expect((await admin_(service, '/readyz')).status).toBe(503);
    broker = await resumeLocalBroker(broker);
    await publishPart(2 * third, log.publications.length, false);
    await waitUntil(
      'ready once the broker is back again',
      async () => (await admin_(service, '/readyz')).status === 200,
      120_000,
    );

    const address = service.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const answer = await fetch(`http://127.0.0.1:${address.port}${API_PREFIX}/orders`, {
      headers: { authorization: `Bearer ${keyOf(1)}` },
    });
    expect(answer.status).toBe(200);
    await service.close();
    services.splice(0);

    const expected = memoryReadModel();
    expected.apply(key, ...log.history);
    expect(dumpDataDir(dataDir)).toEqual(dumpModel(expected.db));
  });
});
