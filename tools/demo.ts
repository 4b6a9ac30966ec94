/**
 * `npm run demo`: everything from nothing. Starts the project's local Kafka
 * broker when KAFKA_BROKERS is unset, creates the topics, issues a demo key,
 * publishes the seeded demo data, starts the service and prints curl commands
 * that work as pasted. Ctrl-C stops the service (and the broker it started).
 */
import { pino } from 'pino';
import { createTopics, issueKey, type CommandContext } from '../src/cli/commands.js';
import { publishDemoData } from './demo-data.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startService } from '../src/service.js';
import { startLocalBroker, stopLocalBroker, type LocalBroker } from './local-kafka.js';

const print = (line: string): void => console.log(line);

async function demo(): Promise<void> {
  let broker: LocalBroker | null = null;
  const env = { ...process.env };
  if (env['KAFKA_BROKERS'] === undefined || env['KAFKA_BROKERS'] === '') {
    print('KAFKA_BROKERS is unset: starting the local Apache Kafka broker (Java + Maven)…');
    broker = await startLocalBroker();
    env['KAFKA_BROKERS'] = broker.brokers;
    print(`Broker up at ${broker.brokers} in ${broker.startupMs} ms.`);
  }
  env['DATA_DIR'] ??= 'data/demo';
  env['KAFKA_GROUP_ID'] ??= 'orders-read-model-demo';
  const config = loadConfig(env);
  // kafkajs logs its retries against a broker that is still electing coordinators as errors; failures still throw.
  const quiet: CommandContext = { config, logger: pino({ level: 'fatal' }), print };

  await createTopics(quiet, 3);
  const { rawKey } = await issueKey(quiet, 1, 'demo-key-org-1');
  print('Issued the demo key for organization 1 (the organization with the most orders).');
  await publishDemoData(quiet, { seed: 42, organizations: 50, orders: 5000 });

  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const service = await startService(config, logger);
  const stop = (): void => {
    print('\nStopping…');
    void service
      .close()
      .then(async () => {
        if (broker !== null) await stopLocalBroker(broker);
      })
      .finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  const started = Date.now();
  while (!service.health().ready) {
    if (Date.now() - started > 120_000) throw new Error('the service did not catch up within 120 s');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const host = config.http.host === '0.0.0.0' ? 'localhost' : config.http.host;
  const base = `http://${host}:${config.http.port}/api/external-api/v1`;
  const adminBase = `http://${host}:${config.admin.port}`;
  const firstPage = (await (
    await fetch(`${base}/orders?status=finished&limit=50`, { headers: { authorization: `Bearer ${rawKey}` } })
  ).json()) as { data: { id: number }[]; total: number };
  const orderId = firstPage.data[0]?.id ?? 1;

  print(`\nThe service is ready (caught up in ${Date.now() - started} ms). Paste these:\n`);
  print(`export API_KEY='${rawKey}'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders?limit=3'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders?status=finished&limit=2&offset=10'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders/${orderId}/articles'`);
  print(`curl -s '${base}/orders?status=bogus' -H "Authorization: Bearer $API_KEY"   # 422`);
  print(`curl -s '${base}/orders'                                                     # 401`);
  print(`curl -s '${base}/openapi.json' | head -c 300`);
  print(`curl -s '${adminBase}/readyz'`);
  print(`curl -s '${adminBase}/metrics' | grep orders_read_model_partition_lag`);
  print('\nCtrl-C stops the service' + (broker === null ? '.' : ' and the local broker.'));
}

demo().catch((error: unknown) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
