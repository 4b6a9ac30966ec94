/** The service started in-process, on free loopback ports, stopped after the file. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import type { TopicRole } from '../../schemas/streams.js';
import { API_PREFIX } from '../../schemas/api.js';
import { loadConfig, type ServiceConfig } from '../../src/config.js';
import { demoEvents } from '../../tools/demo-data.js';
import { startService, type RunningService } from '../../src/service.js';
import { issueKeyOf } from './api.js';
import { connectedClients, createContractTopics, publish, testKafka, uniqueTopicName } from './kafka.js';
import { serviceEnv } from './service-process.js';

export interface ServiceFixture {
  topics: Record<TopicRole, string>;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  config: ServiceConfig;
  publish: (events: readonly DomainEvent[]) => Promise<void>;
  start: () => Promise<RunningService>;
  apiUrl: (service: RunningService, path: string) => string;
  adminUrl: (service: RunningService, path: string) => string;
}

function portOf(app: RunningService['app']): number {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return address.port;
}

/** Topics with demo data (and a key for organization 1), a data dir, and a way to start the service on them. */
export async function serviceFixture(options: {
  orders: number;
  env?: Record<string, string>;
}): Promise<ServiceFixture> {
  const { admin, producer } = await connectedClients(testKafka());
  const topics = await createContractTopics(admin);
  const dir = mkdtempSync(join(tmpdir(), 'service-'));
  const dataDir = join(dir, 'data');
  const env = {
    ...serviceEnv({ topics, dataDir, httpPort: 0, adminPort: 0, groupId: uniqueTopicName('svc') }),
    LOG_LEVEL: 'silent',
    ...options.env,
  };
  const config = loadConfig(env);
  const events: DomainEvent[] = [issueKeyOf(1)];
  events.push(...demoEvents({ seed: 7, organizations: 20, orders: options.orders, articlesPerOrder: 3 }));
  await publish(producer, topics, events);
  const running: RunningService[] = [];
  afterAll(async () => {
    for (const service of running) await service.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    topics,
    dataDir,
    env,
    config,
    publish: (more) => publish(producer, topics, more),
    start: async () => {
      const service = await startService(config, pino({ level: 'silent' }));
      running.push(service);
      return service;
    },
    apiUrl: (service, path) => `http://127.0.0.1:${portOf(service.app)}${API_PREFIX}${path}`,
    adminUrl: (service, path) => `http://127.0.0.1:${portOf(service.admin)}${path}`,
  };
}
