/**
 * `npm run demo`: everything from nothing. Starts the project's local Kafka broker when
 * KAFKA_BROKERS is unset, creates the topics, issues a demo key, publishes the seeded demo data,
 * starts the service and prints curl commands that work as pasted.
 *
 * The terminal shows the demo's own lines, each once; the service runs as a process of its own
 * whose log goes to `DATA_DIR/service.log`. The broker and the service are in process groups of
 * their own, so that Ctrl-C reaches the demo alone, which stops the service first and the broker
 * after it (a broker stopped first would leave the service logging connection errors).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { issueKey, type CommandContext } from '../src/cli/commands.js';
import { createTopics } from '../src/cli/topics.js';
import { loadConfig } from '../src/config.js';
import { publishDemoData } from './demo-data.js';
import { spawnServiceCommand } from './harness.js';
import { clusterIdOf, modelDirFor } from './demo-model.js';
import { startLocalBroker, stopLocalBroker, type LocalBroker } from './local-kafka.js';

const print = (line: string): void => console.log(line);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** What the demo started: stopped in this order on Ctrl-C, killed at once if the demo ends otherwise. */
const started: {
  broker: Promise<LocalBroker> | null;
  brokerPid: number | null;
  brokerDir: string | null;
  service: ChildProcess | null;
  logFile: string | null;
} = { broker: null, brokerPid: null, brokerDir: null, service: null, logFile: null };
const shutdown = { requested: false };
/** Asked after each step: a Ctrl-C may have come while it ran. */
const stopping = (): boolean => shutdown.requested;

process.on('exit', () => {
  const service = started.service;
  for (const pid of [service?.exitCode === null ? service.pid : undefined, started.brokerPid ?? undefined])
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  if (started.brokerDir !== null) rmSync(started.brokerDir, { recursive: true, force: true });
});

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

/** Ctrl-C (or SIGTERM, SIGHUP): the service first, then the broker, whatever step the demo is at. */
function stop(): void {
  if (shutdown.requested) return; // npm and tsx pass the terminal's signal on too
  shutdown.requested = true;
  void (async () => {
    const service = started.service;
    if (service !== null) {
      print('\nStopping: the service first…');
      const stopStarted = Date.now();
      if (service.exitCode === null && service.signalCode === null) service.kill('SIGTERM');
      const code = await exited(service);
      print(`   the service stopped (exit code ${code ?? 'none'}, ${seconds(Date.now() - stopStarted)}).`);
    } else {
      print('\nStopping…');
    }
    const broker = await started.broker?.catch(() => null);
    if (broker !== undefined && broker !== null) {
      print('   then the local broker…');
      await stopLocalBroker(broker);
      started.brokerPid = null;
      started.brokerDir = null;
      print('   the broker stopped.');
    }
    print(started.logFile === null ? 'Done.' : `Done. The service's log stays in ${started.logFile}.`);
    process.exit(0);
  })();
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.on('SIGHUP', stop);

async function demo(): Promise<void> {
  const env = { ...process.env };
  if (env['KAFKA_BROKERS'] === undefined || env['KAFKA_BROKERS'] === '') {
    print(
      '1. Kafka: KAFKA_BROKERS is unset, so the demo starts the local Apache Kafka broker (Java + Maven)…',
    );
    started.broker = startLocalBroker({ detached: true });
    const broker = await started.broker;
    if (stopping()) return;
    started.brokerPid = broker.pid;
    started.brokerDir = broker.dataDir;
    env['KAFKA_BROKERS'] = broker.brokers;
    print(`   the broker answers at ${broker.brokers} (started in ${seconds(broker.startupMs)}).`);
  } else {
    print(`1. Kafka: the broker of KAFKA_BROKERS, ${env['KAFKA_BROKERS']}.`);
  }
  if (env['DATA_DIR'] === undefined) {
    env['DATA_DIR'] = 'data/demo';
    // a model of an earlier demo against another cluster would skip the new events (demo-model.ts)
    const clusterId = await clusterIdOf(env['KAFKA_BROKERS']);
    if (stopping()) return;
    const outcome = modelDirFor(env['DATA_DIR'], clusterId);
    if (outcome === 'emptied')
      print(`   ${env['DATA_DIR']} held a model of another Kafka cluster: emptied for cluster ${clusterId}.`);
    if (outcome === 'kept') print(`   ${env['DATA_DIR']} holds a model of this cluster: kept.`);
  }
  env['KAFKA_GROUP_ID'] ??= 'orders-read-model-demo';
  const config = loadConfig(env);
  // kafkajs logs its retries against a broker that is still electing coordinators as errors; failures still throw.
  const quiet: CommandContext = {
    config,
    logger: pino({ level: 'fatal' }),
    print: (line) => print(`   ${line}`),
  };

  print('2. Topics, a key and sample data:');
  await createTopics(quiet, { partitions: 3 });
  if (stopping()) return;
  const { rawKey } = await issueKey(quiet, 1, 'demo-key-org-1');
  if (stopping()) return;
  print('   Issued the demo key for organization 1 (the organization with the most orders).');
  await publishDemoData(quiet, { seed: 42, organizations: 50, orders: 5000 });
  if (stopping()) return;

  mkdirSync(config.dataDir, { recursive: true });
  const logFile = join(config.dataDir, 'service.log');
  const log = openSync(logFile, 'a');
  print(`3. The service (npm start does the same with the built code); its log goes to ${logFile}.`);
  const serviceStarted = Date.now();
  const service = spawnServiceCommand(['serve'], env, ['ignore', log, log], { detached: true });
  started.service = service;
  started.logFile = logFile;

  const host = config.http.host === '0.0.0.0' ? 'localhost' : config.http.host;
  const base = `http://${host}:${config.http.port}/api/external-api/v1`;
  const adminBase = `http://${host}:${config.admin.port}`;
  for (;;) {
    if (stopping()) return;
    if (service.exitCode !== null)
      throw new Error(`the service exited with code ${service.exitCode}; see ${logFile}`);
    if (Date.now() - serviceStarted > 120_000)
      throw new Error(`the service did not catch up within 120 s; see ${logFile}`);
    const ready = await fetch(`${adminBase}/readyz`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const answer = await fetch(`${base}/orders?status=finished&limit=50`, {
    headers: { authorization: `Bearer ${rawKey}` },
  });
  if (!answer.ok)
    throw new Error(`the service answered ${answer.status} to the demo key: ${await answer.text()}`);
  const firstPage = (await answer.json()) as { data: { id: number }[] };
  const orderId = firstPage.data[0]?.id ?? 1;

  print(`   ready: started and caught up in ${seconds(Date.now() - serviceStarted)}.`);
  print('\n4. Paste these into another terminal:\n');
  print(`export API_KEY='${rawKey}'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders?limit=3'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders?status=finished&limit=2&offset=10'`);
  print(`curl -s -H "Authorization: Bearer $API_KEY" '${base}/orders/${orderId}/articles'`);
  print(`curl -s '${base}/orders?status=bogus' -H "Authorization: Bearer $API_KEY"   # 422`);
  print(`curl -s '${base}/orders'                                                     # 401`);
  print(`curl -s '${base}/openapi.json' | head -c 300`);
  print(`curl -s '${adminBase}/readyz'`);
  print(`curl -s '${adminBase}/metrics' | grep orders_read_model_partition_lag`);
  print(`tail -f ${logFile}   # the service's log`);
  print('\nCtrl-C stops the service' + (started.broker === null ? '.' : ', then the local broker.'));
}

demo().catch((error: unknown) => {
  if (shutdown.requested) return; // a step cut short by Ctrl-C: the stop reports
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
