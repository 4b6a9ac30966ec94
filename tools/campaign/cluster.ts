/**
 * What the campaign drives: its own broker (so that it may stop and freeze it) and the service's
 * replicas as real processes, each with its own data directory, ports and consumer group.
 */
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TopicRole } from '../../schemas/streams.js';
import { runServiceCommand, spawnServiceCommand } from '../harness.js';
import {
  freePort,
  haltLocalBroker,
  resumeLocalBroker,
  startLocalBroker,
  stopLocalBroker,
  type LocalBroker,
} from '../local-kafka.js';
import { loopbackServiceEnv } from '../service-env.js';

export type BrokerState = 'up' | 'frozen' | 'down';

export class CampaignBroker {
  state: BrokerState = 'up';
  /** bumped whenever the broker comes back: a replica is trusted again once ready after that */
  epoch = 0;

  private constructor(private broker: LocalBroker) {}

  static async start(): Promise<CampaignBroker> {
    return new CampaignBroker(await startLocalBroker());
  }

  get brokers(): string {
    return this.broker.brokers;
  }

  freeze(): void {
    process.kill(this.broker.pid, 'SIGSTOP');
    this.state = 'frozen';
  }

  thaw(): void {
    process.kill(this.broker.pid, 'SIGCONT');
    this.state = 'up';
    this.epoch += 1;
  }

  async halt(): Promise<void> {
    await haltLocalBroker(this.broker);
    this.state = 'down';
  }

  async resume(): Promise<void> {
    this.broker = await resumeLocalBroker(this.broker);
    this.state = 'up';
    this.epoch += 1;
  }

  async stop(): Promise<void> {
    if (this.state === 'frozen') this.thaw();
    await stopLocalBroker(this.broker);
  }
}

export class Replica {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  /** the last lines the process wrote, for a failure's report */
  readonly tail: string[] = [];
  /** the broker epoch at which it was last seen ready, -1 since its start until then */
  readyAtEpoch = -1;
  /** bumped when its data directory starts anew (a restored snapshot): a new replica to the invariants */
  incarnation = 0;
  /** whether its current process has answered a request (its signal handlers are in place by then) */
  answered = false;
  /** exits nobody asked for, with the process's last lines: drained by the campaign */
  readonly crashes: string[] = [];
  /** state transitions its lifecycle refused (outside the table: a bug), as logged: drained by the campaign */
  readonly refusedTransitions: string[] = [];
  private stopping = false;
  /** set while an exit by itself is what the campaign waits for (a refused start): not a crash then */
  exitExpected = false;
  /** the last exit by itself while one was expected: code and last lines */
  lastExit: { code: number | null; lines: string[] } | null = null;

  private constructor(
    readonly name: string,
    readonly dataDir: string,
    readonly httpPort: number,
    readonly adminPort: number,
    private readonly brokers: string,
    private readonly topics: Record<TopicRole, string>,
    /** every line its processes wrote, kept with a failed campaign's directory */
    readonly logFile: string,
    /** HTTP_WORKERS of its service */
    private readonly httpWorkers: number,
  ) {}

  static async create(
    name: string,
    dir: string,
    brokers: string,
    topics: Record<TopicRole, string>,
    httpWorkers = 1,
  ): Promise<Replica> {
    const dataDir = join(dir, name);
    mkdirSync(dataDir, { recursive: true });
    return new Replica(
      name,
      dataDir,
      await freePort(),
      await freePort(),
      brokers,
      topics,
      join(dir, `${name}.log`),
      httpWorkers,
    );
  }

  env(): NodeJS.ProcessEnv {
    return {
      ...loopbackServiceEnv({
        brokers: this.brokers,
        groupId: `campaign-${this.name}-${this.incarnation}`,
        topics: this.topics,
        dataDir: this.dataDir,
        httpPort: this.httpPort,
        adminPort: this.adminPort,
      }),
      // A restarted replica rejoins its group soon after a SIGKILL.
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      LAG_CHECK_INTERVAL_MS: '500',
      READY_MAX_LAG: '0',
      HTTP_WORKERS: String(this.httpWorkers),
      // A replica far behind (wiped, restored from a snapshot, back after a burst) catches up by
      // replay into a new model: at the campaign's scale of thousands of events, from a quarter of the log.
      CATCH_UP_REPLAY_MIN_LAG: '100',
      CATCH_UP_REPLAY_MIN_SHARE: '0.25',
    };
  }

  get running(): boolean {
    return this.child !== null;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): void {
    if (this.child !== null) return;
    this.readyAtEpoch = -1;
    this.answered = false;
    const child = spawnServiceCommand(['serve'], this.env());
    appendFileSync(
      this.logFile,
      `--- start (incarnation ${this.incarnation}) at ${new Date().toISOString()}\n`,
    );
    const keep = (chunk: Buffer): void => {
      appendFileSync(this.logFile, chunk);
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line === '') continue;
        if (line.includes('refused a state transition')) this.refusedTransitions.push(line.slice(0, 600));
        this.tail.push(line.slice(0, 600));
        if (this.tail.length > 60) this.tail.shift();
      }
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.child = child;
    this.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        if (!this.stopping && this.exitExpected) {
          this.lastExit = { code, lines: this.tail.slice(-15) };
          this.child = null;
        } else if (!this.stopping) {
          this.crashes.push(
            `exited by itself (code ${code}, signal ${signal}); its last lines:\n${this.tail.slice(-15).join('\n')}`,
          );
          this.child = null;
        }
        resolve(code);
      }),
    );
  }

  async kill(signal: 'SIGKILL' | 'SIGTERM'): Promise<number | null> {
    const child = this.child;
    if (child === null) return null;
    this.stopping = true;
    child.kill(signal);
    const code = await this.exited;
    this.stopping = false;
    this.child = null;
    return code;
  }

  /** A new replica in the same place: its data directory emptied, a group of its own. */
  async wipe(): Promise<void> {
    await this.kill('SIGKILL');
    rmSync(this.dataDir, { recursive: true, force: true });
    mkdirSync(this.dataDir, { recursive: true });
    this.incarnation += 1;
  }

  /** A CLI command of the service's executable on this replica's data directory. */
  command(args: readonly string[]): Promise<string> {
    return runServiceCommand(args, { ...this.env(), LOG_LEVEL: 'error' });
  }

  /**
   * An operator command that may fail or hang: its exit code (null when it was killed at
   * `timeoutMs`), stdout and stderr.
   */
  run(
    args: readonly string[],
    timeoutMs: number,
  ): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
    const started = Date.now();
    const child = spawnServiceCommand(args, { ...this.env(), LOG_LEVEL: 'error' });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    return new Promise((resolve) =>
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      }),
    );
  }

  /** The same, as a process the caller may kill. */
  spawnCommand(args: readonly string[]): ChildProcess {
    return spawnServiceCommand(args, { ...this.env(), LOG_LEVEL: 'error' }, ['ignore', 'ignore', 'ignore']);
  }

  apiUrl(path: string): string {
    return `http://127.0.0.1:${this.httpPort}/api/external-api/v1${path}`;
  }

  adminUrl(path: string): string {
    return `http://127.0.0.1:${this.adminPort}${path}`;
  }
}
