/**
 * A single-node Apache Kafka broker (KRaft, combined broker + controller) on
 * 127.0.0.1, built from the broker's own jars resolved with Maven. For local
 * development (`npm run kafka:start` / `kafka:stop`) and for the test suite
 * when neither KAFKA_BROKERS nor a Docker engine is available.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { isEntryPoint, projectRoot } from './harness.js';

const pomPath = join(projectRoot, 'tools', 'kafka', 'pom.xml');
const stateFile = join(projectRoot, '.kafka-local', 'state.json');

function pinnedKafkaVersion(): string {
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(pomPath, 'utf8'))?.[1];
  if (version === undefined) throw new Error(`No <kafka.version> in ${pomPath}`);
  return version;
}

export const KAFKA_VERSION = pinnedKafkaVersion();

/** How long a broker may take to answer after its start; KAFKA_STARTUP_TIMEOUT_MS on a host too busy for 90 s. */
const startupTimeoutMs = Number(process.env['KAFKA_STARTUP_TIMEOUT_MS'] ?? 90_000);

export interface LocalBroker {
  brokers: string;
  pid: number;
  dataDir: string;
  /** Milliseconds from `java` spawn until the broker answered a metadata request. */
  startupMs: number;
  /** Milliseconds spent resolving jars (near zero when cached). */
  jarsMs: number;
}

/** The jars' folder, named after the pom's content: a changed pom resolves a fresh set. */
function cacheDir(): string {
  const base = process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache');
  const pom = createHash('sha256').update(readFileSync(pomPath)).digest('hex').slice(0, 12);
  return join(base, 'orders-read-model', `kafka-${KAFKA_VERSION}-${pom}`);
}

/** Resolves the broker's jars once; later calls reuse the cached copy. */
export function ensureBrokerJars(): string {
  const dir = cacheDir();
  const lib = join(dir, 'lib');
  const marker = join(dir, '.complete');
  if (existsSync(marker)) return lib;
  const mvn = spawnSync(
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      pomPath,
      'dependency:copy-dependencies',
      `-DoutputDirectory=${lib}`,
      '-DincludeScope=runtime',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' },
  );
  if (mvn.error || mvn.status !== 0) {
    const detail = mvn.error ? mvn.error.message : `${mvn.stdout}${mvn.stderr}`.slice(-4000);
    throw new Error(
      `Could not resolve Apache Kafka ${KAFKA_VERSION} jars with Maven (is \`mvn\` installed and Maven Central reachable?):\n${detail}`,
    );
  }
  writeFileSync(marker, new Date().toISOString());
  return lib;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('no port'));
        return;
      }
      server.close(() => {
        resolvePort(address.port);
      });
    });
  });
}

function serverProperties(dataDir: string, brokerPort: number, controllerPort: number): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${brokerPort},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${brokerPort}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${join(dataDir, 'logs')}`,
    'num.partitions=3',
    'auto.create.topics.enable=false',
    // A single node can only hold one replica of the internal topics.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=3',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'group.consumer.min.session.timeout.ms=1000',
    'group.min.session.timeout.ms=1000',
    '',
  ].join('\n');
}

const log4jProperties = [
  'rootLogger.level=WARN',
  'rootLogger.appenderRef.stdout.ref=STDOUT',
  'appender.stdout.type=Console',
  'appender.stdout.name=STDOUT',
  'appender.stdout.layout.type=PatternLayout',
  'appender.stdout.layout.pattern=[%d] %p %m (%c)%n',
  '',
].join('\n');

/**
 * A random KRaft cluster id: 16 random bytes in URL-safe base64, as Kafka's
 * `Uuid.randomUuid` draws them. Like Kafka, it draws again when the text
 * starts with `-`, which `kafka-storage format -t` would read as an option.
 */
export function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Waits until the broker answers metadata requests and its group coordinator answers for groups
 * spread over the group-offsets topic's partitions: a new broker creates that topic on the first
 * group request and answers "the coordinator is loading" until it is loaded, and a consumer group
 * joining then fails its first join (and the service counts a projector restart).
 */
async function waitUntilReady(brokers: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + startupTimeoutMs;
  const groups = Array.from({ length: 12 }, (_, i) => `local-kafka-warm-up-${i}`);
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(
        `Kafka broker exited with code ${child.exitCode} during start-up. Its log:\n${readTail(logFile)}`,
      );
    }
    const probe = new Kafka({
      clientId: 'local-kafka-probe',
      brokers: [brokers],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    }).admin();
    try {
      await probe.connect();
      await probe.listTopics();
      await probe.describeGroups(groups);
      return;
    } catch (error) {
      if (Date.now() > deadline) {
        throw new Error(
          `Kafka broker did not answer metadata and group requests within ${startupTimeoutMs} ms (${String(error)}). Its log:\n${readTail(logFile)}`,
        );
      }
    } finally {
      await probe.disconnect().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function readTail(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').slice(-4000) : '(no log)';
}

/**
 * Formats a fresh log dir and starts the broker on free loopback ports.
 * `detached` brokers outlive this process (for `npm run kafka:start`).
 */
export async function startLocalBroker(options: { detached?: boolean } = {}): Promise<LocalBroker> {
  const jarsStart = Date.now();
  ensureBrokerJars();
  const jarsMs = Date.now() - jarsStart;
  const dataDir = mkdtempSync(join(tmpdir(), 'orders-kafka-'));
  const [brokerPort, controllerPort] = [await freePort(), await freePort()];
  const propertiesFile = join(dataDir, 'server.properties');
  const log4jFile = join(dataDir, 'log4j2.properties');
  writeFileSync(propertiesFile, serverProperties(dataDir, brokerPort, controllerPort));
  writeFileSync(log4jFile, log4jProperties);
  const jvm = jvmOptions(dataDir);

  const format = spawnSync(
    'java',
    [...jvm, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId()}`, '-c', propertiesFile],
    { encoding: 'utf8' },
  );
  if (format.error || format.status !== 0) {
    throw new Error(
      `Formatting the Kafka log dir failed (is Java 17+ installed?): ${format.error?.message ?? ''}${format.stdout}${format.stderr}`,
    );
  }

  const brokers = `127.0.0.1:${brokerPort}`;
  const { pid, startupMs } = await launch(jvm, dataDir, brokers, options.detached === true);
  return { brokers, pid, dataDir, startupMs, jarsMs };
}

/** Runs the broker of a formatted log dir and waits until it answers metadata and group requests. */
async function launch(
  jvm: string[],
  dataDir: string,
  brokers: string,
  detached: boolean,
): Promise<{ pid: number; startupMs: number }> {
  const logFile = join(dataDir, 'broker.log');
  const out = openSync(logFile, 'a');
  const started = Date.now();
  const child = spawn('java', [...jvm, 'kafka.Kafka', join(dataDir, 'server.properties')], {
    stdio: ['ignore', out, out],
    detached,
  });
  if (child.pid === undefined) throw new Error('Could not start java for the Kafka broker');
  try {
    await waitUntilReady(brokers, child, logFile);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  if (detached) child.unref();
  return { pid: child.pid, startupMs: Date.now() - started };
}

function jvmOptions(dataDir: string): string[] {
  return [
    '-Xms256m',
    '-Xmx1g',
    // A test broker carries little traffic: the C1 compiler alone and the serial collector halve
    // its start-up CPU (6.9 → 3.3 s) and its idle CPU (5.7 → 3.2 % of a core), measured on this
    // machine, and the suite's test files share two cores with it.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    `-Dlog4j2.configurationFile=${join(dataDir, 'log4j2.properties')}`,
    '-cp',
    join(ensureBrokerJars(), '*'),
  ];
}

/**
 * Ends the broker's process but keeps its data and ports, so that `resumeLocalBroker` brings the
 * same broker back (fault tests: a broker that is gone, then returns).
 */
export async function haltLocalBroker(broker: Pick<LocalBroker, 'pid'>): Promise<void> {
  await endProcess(broker.pid);
}

/** Starts a halted broker again on its data and ports; returns it with its new pid. */
export async function resumeLocalBroker(broker: LocalBroker): Promise<LocalBroker> {
  const { pid, startupMs } = await launch(jvmOptions(broker.dataDir), broker.dataDir, broker.brokers, false);
  return { ...broker, pid, startupMs };
}

/** Stops the broker and removes its data. */
export async function stopLocalBroker(broker: Pick<LocalBroker, 'pid' | 'dataDir'>): Promise<void> {
  await endProcess(broker.pid);
  rmSync(broker.dataDir, { recursive: true, force: true });
}

/**
 * SIGTERM, then SIGKILL after 15 s; resolves once the process is gone, so that a broker started
 * again on the same ports and log dir finds them free (a JVM killed on a loaded machine takes a
 * moment to go).
 */
async function endProcess(pid: number): Promise<void> {
  const alive = (): boolean => processAlive(pid);
  const goneBy = async (deadline: number): Promise<void> => {
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  };
  if (!alive()) return;
  process.kill(pid, 'SIGTERM');
  await goneBy(Date.now() + 15_000);
  if (!alive()) return;
  process.kill(pid, 'SIGKILL');
  await goneBy(Date.now() + 15_000);
  if (alive()) throw new Error(`the broker (pid ${pid}) is still running 15 s after SIGKILL`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function cli(command: string | undefined): Promise<void> {
  switch (command) {
    case 'start': {
      if (existsSync(stateFile)) {
        const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalBroker;
        if (processAlive(state.pid)) {
          console.log(`A local broker is already running (pid ${state.pid}). KAFKA_BROKERS=${state.brokers}`);
          return;
        }
        // The recorded broker is gone (a reboot, a kill): forget it and its data, start a new one.
        console.log(`The recorded broker (pid ${state.pid}) is not running; starting a new one.`);
        await stopLocalBroker(state);
        rmSync(stateFile);
      }
      const broker = await startLocalBroker({ detached: true });
      mkdirSync(dirname(stateFile), { recursive: true });
      writeFileSync(stateFile, JSON.stringify(broker, null, 2));
      console.log(`Apache Kafka ${KAFKA_VERSION} started in ${broker.startupMs} ms (pid ${broker.pid}).`);
      console.log(`export KAFKA_BROKERS=${broker.brokers}`);
      return;
    }
    case 'stop': {
      if (!existsSync(stateFile)) {
        console.log('No local broker is recorded.');
        return;
      }
      const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalBroker;
      await stopLocalBroker(state);
      rmSync(stateFile);
      console.log(`Stopped the local broker (pid ${state.pid}) and removed its data.`);
      return;
    }
    default:
      console.error('usage: tsx tools/local-kafka.ts start|stop');
      process.exitCode = 2;
  }
}

if (isEntryPoint(import.meta.url)) {
  cli(process.argv[2]).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
