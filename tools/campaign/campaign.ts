/**
 * The randomized fault campaign: one seed draws a sequence of operations (publishing, faults of the
 * service and of the broker, operator commands, request bursts), runs them against the real broker
 * and the service's real processes, and checks the promises from outside after every step.
 *
 *   npm run campaign -- --seed 7 --minutes 10 [--steps N] [--http-workers N]
 *
 * A failure prints the seed and the step list; the same seed draws the same steps.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import type { DomainEvent } from '../../schemas/events.js';
import { messageKeyOf, topicRoleOf } from '../../src/consumer/publish.js';
import { codecNames, type CodecName } from '../../src/kafka/codecs.js';
import { compressionOf } from '../../src/kafka/kafkajs-adapter.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { createContractTopicSet, isEntryPoint } from '../harness.js';
import { kcatProduce } from '../kcat.js';
import { markProjectionVersion1 } from '../model-progress.js';
import { CampaignBroker, Replica } from './cluster.js';
import { Invariants, Memory, type Violation } from './invariants.js';
import { Oracle } from './oracle.js';
import { get, Prober } from './probe.js';
import { Caller, type CallerCounts } from './caller.js';
import { Random } from './random.js';
import { World, type Draw } from './world.js';

export interface CampaignOptions {
  seed: number;
  /** stop drawing after this many steps or this long, whichever comes first */
  steps: number;
  minutes: number;
  /** HTTP_WORKERS of every replica (default 1) */
  httpWorkers?: number;
  log?: (line: string) => void;
}

export interface CampaignReport {
  seed: number;
  httpWorkers: number;
  steps: string[];
  faults: Record<string, number>;
  violations: Violation[];
  checks: number;
  minutes: number;
  /** slowest revocation seen refused by a ready replica, ms */
  slowestRevocationMs: number;
  events: number;
  poison: number;
  /** the caller moved between replicas with its position (`caller.ts`) */
  caller: CallerCounts;
}

interface SkippedBatch {
  topic: string;
  partition: number;
  through: number;
}

type Operation =
  | 'publish'
  | 'poison'
  | 'kill'
  | 'term'
  | 'start'
  | 'rebuild'
  | 'rebuildNoPromote'
  | 'rebuildKilled'
  | 'restartWhileProposed'
  | 'versionChange'
  | 'snapshot'
  | 'freezeBroker'
  | 'thawBroker'
  | 'stopBroker'
  | 'startBroker'
  | 'burst'
  | 'hostileBatch'
  | 'pause';

/** After the last fault: ready within this long, and converged to the oracle within this long again. */
const livenessMs = 60_000;
const convergenceMs = 60_000;
const revocationBoundMs = 5000;

class Campaign {
  private readonly ops: Random;
  private readonly world: World;
  private readonly oracle = new Oracle();
  private readonly revokedAcked = new Set<string>();
  private readonly invariants: Invariants;
  private readonly prober: Prober;
  private readonly caller: Caller;
  private readonly memories = new Map<Replica, Memory>();
  private readonly steps: string[] = [];
  private readonly faults: Record<string, number> = {};
  private checks = 0;
  private slowestRevocationMs = 0;
  private events = 0;
  private poison = 0;
  private txCount = 0;
  /** inflating batches published (each skipped by the operator on every replica) */
  private skipped = 0;
  /** the inflating batches skipped, each with its last offset: a new replica is told them too */
  private readonly skippedBatches: SkippedBatch[] = [];

  constructor(
    private readonly options: CampaignOptions,
    private readonly broker: CampaignBroker,
    private readonly kafka: Kafka,
    private producer: Producer,
    private readonly replicas: Replica[],
    private readonly topics: Record<ReturnType<typeof topicRoleOf>, string>,
    private readonly dir: string,
  ) {
    this.ops = new Random(options.seed);
    this.world = new World(options.seed, new Random(options.seed + 1));
    this.invariants = new Invariants(this.world, this.oracle, this.revokedAcked);
    this.prober = new Prober(
      this.world,
      this.oracle,
      this.invariants,
      new Random(options.seed + 2),
      this.revokedAcked,
    );
    this.caller = new Caller(this.world, this.invariants, new Random(options.seed + 3));
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private memory(replica: Replica): Memory {
    let memory = this.memories.get(replica);
    if (memory === undefined) this.memories.set(replica, (memory = new Memory()));
    return memory;
  }

  private count(fault: string): void {
    this.faults[fault] = (this.faults[fault] ?? 0) + 1;
  }

  async run(): Promise<CampaignReport> {
    const started = Date.now();
    const deadline = started + this.options.minutes * 60_000;
    await this.publish({ events: this.world.genesis(), poison: [], revoked: [] }, 'none', 'plain');
    for (const replica of this.replicas) replica.start();
    await this.waitReady('the first start');
    for (let step = 1; step <= this.options.steps && Date.now() < deadline; step += 1) {
      this.invariants.step = step;
      const op = this.draw();
      const description = await this.perform(op);
      this.steps.push(`${step} ${description}`);
      this.log(`[campaign ${this.options.seed}] ${step} ${description}`);
      await this.lookAtAll();
      for (const replica of this.replicas) {
        for (const crash of replica.crashes.splice(0)) this.violation(replica, 'no crash', crash);
        for (const refused of replica.refusedTransitions.splice(0))
          this.violation(replica, 'transitions in the table', refused);
      }
      if (this.invariants.violations.length > 0) break;
    }
    this.invariants.step = this.steps.length + 1;
    await this.endFaults();
    for (const replica of this.replicas) {
      for (const refused of replica.refusedTransitions.splice(0))
        this.violation(replica, 'transitions in the table', refused);
    }
    return {
      seed: this.options.seed,
      steps: this.steps,
      faults: this.faults,
      violations: this.invariants.violations,
      checks: this.checks,
      minutes: (Date.now() - started) / 60_000,
      httpWorkers: this.options.httpWorkers ?? 1,
      slowestRevocationMs: this.slowestRevocationMs,
      events: this.events,
      poison: this.poison,
      caller: this.caller.counts,
    };
  }

  private draw(): Operation {
    const up = this.broker.state === 'up';
    const running = this.replicas.filter((r) => r.running).length;
    const down = this.replicas.length - running;
    return this.ops.weighted<Operation>({
      publish: up ? 12 : 0,
      poison: up ? 1 : 0,
      kill: running > 0 ? 2 : 0,
      term: running > 0 ? 1 : 0,
      start: down > 0 ? 5 : 0,
      rebuild: up ? 1.5 : 0,
      rebuildNoPromote: up ? 0.5 : 0,
      rebuildKilled: up ? 0.7 : 0,
      restartWhileProposed: up && running > 0 ? 0.7 : 0,
      versionChange: running > 0 ? 0.7 : 0,
      hostileBatch: up && running === this.replicas.length && this.skipped < 2 ? 0.3 : 0,
      snapshot: 0.6,
      freezeBroker: up ? 0.7 : 0,
      thawBroker: this.broker.state === 'frozen' ? 4 : 0,
      stopBroker: up ? 0.5 : 0,
      startBroker: this.broker.state === 'down' ? 3 : 0,
      burst: running > 0 ? 1 : 0,
      pause: 1,
    });
  }

  private async perform(op: Operation): Promise<string> {
    const random = this.ops;
    switch (op) {
      case 'publish':
      case 'poison': {
        const codec = random.pick<CodecName>(codecNames);
        const mode = random.weighted({ plain: 7, commit: 2, abort: 1 });
        const draw = this.world.draw(random.int(3, 40), op === 'poison');
        await this.publish(draw, codec, mode);
        if (mode !== 'plain') this.count(`transaction ${mode}`);
        if (op === 'poison') this.count('poison message');
        await this.checkRevocations(draw.revoked);
        return `${op} ${draw.events.length} events${draw.poison.length > 0 ? ' + poison' : ''} ${codec} ${mode}${draw.revoked.length > 0 ? ` revoking ${draw.revoked.join(',')}` : ''}`;
      }
      case 'kill':
      case 'term': {
        const replica = random.pick(this.replicas.filter((r) => r.running));
        const signal = op === 'kill' ? 'SIGKILL' : 'SIGTERM';
        const answered = replica.answered;
        const code = await replica.kill(signal);
        this.count(signal);
        if (signal === 'SIGTERM') {
          // Before its first answer the process may still be loading its modules, with no handler yet.
          if (code !== 0 && answered)
            this.violation(
              replica,
              'clean stop',
              `SIGTERM ended it with exit code ${code}:\n${replica.tail.slice(-15).join('\n')}`,
            );
          replica.start();
        }
        return `${signal} ${replica.name}${signal === 'SIGTERM' ? ' and start it again' : ''}`;
      }
      case 'start': {
        const replica = random.pick(this.replicas.filter((r) => !r.running));
        replica.start();
        return `start ${replica.name}`;
      }
      case 'rebuild':
      case 'rebuildNoPromote': {
        const replica = random.pick(this.replicas);
        const args = op === 'rebuild' ? ['rebuild'] : ['rebuild', '--no-promote'];
        await replica.command(args).catch((error: unknown) => this.log(`rebuild: ${String(error)}`));
        this.count(op === 'rebuild' ? 'rebuild' : 'rebuild --no-promote');
        return `${args.join(' ')} on ${replica.name}`;
      }
      case 'rebuildKilled': {
        const replica = random.pick(this.replicas);
        const after = random.int(300, 3000);
        const child = replica.spawnCommand(['rebuild']);
        const exited = new Promise((resolve) => child.on('exit', resolve));
        await Promise.race([exited, sleep(after)]);
        child.kill('SIGKILL');
        await exited;
        this.count('rebuild killed');
        return `rebuild on ${replica.name} SIGKILLed after ${after} ms`;
      }
      case 'restartWhileProposed': {
        // A rebuild is proposed, the replica applies newer facts (a revocation among them) before
        // it has caught the proposal up, and it is killed and started again (sometimes with the
        // broker gone): the proposal waits in NEXT at the restart, older than the served model.
        const replica = random.pick(this.replicas.filter((r) => r.running));
        await replica.command(['rebuild']).catch((error: unknown) => this.log(`rebuild: ${String(error)}`));
        const draw = this.world.draw(random.int(3, 15), false, true);
        await this.publish(draw, 'none', 'plain');
        await this.checkRevocations(draw.revoked);
        await this.lookAtAll();
        await replica.kill('SIGKILL');
        const brokerGone = random.chance(0.5);
        if (brokerGone) await this.broker.halt();
        replica.start();
        this.count('restart while a proposal waits');
        if (brokerGone) this.count('broker stopped');
        return `rebuild on ${replica.name}, publish ${draw.events.length} events revoking ${draw.revoked.join(',') || 'nothing'}, SIGKILL ${brokerGone ? 'and stop the broker, ' : ''}and start ${replica.name}`;
      }
      case 'versionChange': {
        const replica = random.pick(this.replicas.filter((r) => r.running));
        await replica.kill('SIGTERM');
        const file = new ModelFiles(replica.dataDir).currentFile();
        if (file !== null) markProjectionVersion1(file);
        replica.start();
        this.count('projection version change');
        return `projection version change on ${replica.name}`;
      }
      case 'snapshot': {
        const [from, to] = random.chance(0.5) ? this.replicas : [...this.replicas].reverse();
        if (from === undefined || to === undefined) return 'snapshot: no replicas';
        const file = join(this.dir, `snapshot-${this.steps.length}.sqlite`);
        const taken = await from.command(['snapshot', '--to', file]).then(
          () => true,
          (error: unknown) => (this.log(`snapshot: ${String(error)}`), false),
        );
        if (!taken) return `snapshot of ${from.name}: refused`;
        await to.wipe();
        this.memories.delete(to);
        const restored = await to.command(['snapshot', '--restore', file]).then(
          () => true,
          (error: unknown) => (this.log(`restore: ${String(error)}`), false),
        );
        rmSync(file, { force: true });
        // A new replica replays the topics and meets the batches skipped elsewhere: the operator
        // skips them there too, as the runbook says (a restored snapshot brings its own skips).
        if (!restored) for (const batch of this.skippedBatches) await this.skipBatch(to, batch);
        to.start();
        this.count(restored ? 'snapshot restored into a new replica' : 'new empty replica');
        return restored
          ? `snapshot of ${from.name} restored into a new ${to.name}`
          : `snapshot of ${from.name} refused; a new empty ${to.name}, told the skipped batches`;
      }
      case 'freezeBroker':
        this.broker.freeze();
        this.count('broker frozen');
        return 'freeze the broker (SIGSTOP)';
      case 'thawBroker':
        this.broker.thaw();
        return 'thaw the broker (SIGCONT)';
      case 'stopBroker':
        await this.broker.halt();
        this.count('broker stopped');
        return 'stop the broker';
      case 'startBroker':
        await this.broker.resume();
        return 'start the broker again';
      case 'burst': {
        const replica = random.pick(this.replicas.filter((r) => r.running));
        const requests = random.int(100, 400);
        await this.burst(replica, requests);
        this.count('request burst');
        return `burst of ${requests} requests at ${replica.name}`;
      }
      case 'hostileBatch': {
        // A few KB of zstd inflating to 24 MB (beyond the default bound): each replica reports the
        // partition, and the operator moves every replica past it with skip-batch.
        const role = random.pick(['orders', 'orderStatus', 'articles', 'apiKeys'] as const);
        const partition = random.int(0, 2);
        const topic = this.topics[role];
        const line = `x\t{"padding":"${' '.repeat(24 * 1024 * 1024)}"}`;
        const offsetOfBatch = await this.endOffset(topic, partition);
        kcatProduce({ brokers: this.broker.brokers, topic, partition, lines: [line] });
        this.skipped += 1;
        this.count('inflating batch skipped by the operator');
        let first: SkippedBatch | null = null;
        for (const replica of this.replicas) {
          const through = await this.reportedBatchEnd(replica, topic, partition, offsetOfBatch);
          if (through === null) {
            this.violation(
              replica,
              'liveness',
              `${topic}[${partition}]'s inflating batch was not reported in /readyz within 30 s`,
            );
            continue;
          }
          if (first === null) {
            first = { topic, partition, through };
            this.skippedBatches.push(first);
          }
          await this.skipBatch(replica, { topic, partition, through });
        }
        return `inflating zstd batch on ${topic}[${partition}], skipped by the operator on every replica`;
      }
      case 'pause': {
        const ms = random.int(100, 2000);
        await sleep(ms);
        return `pause ${ms} ms`;
      }
    }
  }

  /** The operator's `skip-batch` for one batch on one replica. */
  private async skipBatch(replica: Replica, batch: SkippedBatch): Promise<void> {
    await replica.command([
      'skip-batch',
      '--topic',
      batch.topic,
      '--partition',
      String(batch.partition),
      '--through',
      String(batch.through),
      '--reason',
      'campaign: an inflating batch',
    ]);
  }

  /** The offset the next message published to a partition gets. */
  private async endOffset(topic: string, partition: number): Promise<number> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(topic);
      return Number(offsets.find((o) => o.partition === partition)?.high ?? 0);
    } finally {
      await admin.disconnect();
    }
  }

  /** The last offset of the unreadable batch at or after `atLeast` that /readyz names, once it does (30 s at most). */
  private async reportedBatchEnd(
    replica: Replica,
    topic: string,
    partition: number,
    atLeast: number,
  ): Promise<number | null> {
    const deadline = Date.now() + 30_000;
    const pattern = new RegExp(
      `skip-batch --topic ${topic.replace(/[.]/g, '\\.')} --partition ${partition} --through (\\d+)`,
    );
    while (Date.now() < deadline) {
      const answer = await get(replica.adminUrl('/readyz'), undefined, 2000);
      const match = pattern.exec(JSON.stringify(answer?.body ?? ''));
      if (match !== null && Number(match[1]) >= atLeast) return Number(match[1]);
      await sleep(250);
    }
    return null;
  }

  private violation(replica: Replica, invariant: string, detail: string): void {
    this.invariants.violations.push({ step: this.invariants.step, replica: replica.name, invariant, detail });
  }

  private async publish(draw: Draw, codec: CodecName, mode: 'plain' | 'commit' | 'abort'): Promise<void> {
    const topicMessages = (events: readonly DomainEvent[], withPoison: boolean) => {
      const byTopic = new Map<string, { key: string; value: Buffer | string }[]>();
      const add = (topic: string, key: string, value: Buffer | string): void => {
        const list = byTopic.get(topic) ?? [];
        list.push({ key, value });
        byTopic.set(topic, list);
      };
      for (const event of events)
        add(this.topics[topicRoleOf(event)], messageKeyOf(event), JSON.stringify(event));
      if (withPoison) for (const p of draw.poison) add(this.topics[p.role], p.key, p.raw);
      return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
    };
    const compression = compressionOf[codec];
    if (mode === 'plain') {
      await this.producer.sendBatch({
        acks: -1,
        compression,
        topicMessages: topicMessages(draw.events, true),
      });
    } else {
      this.txCount += 1;
      const producer = this.kafka.producer({
        transactionalId: `campaign-${this.options.seed}-${this.txCount}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await producer.connect();
      try {
        if (mode === 'abort') {
          const aborted = await producer.transaction();
          await aborted.sendBatch({ compression, topicMessages: topicMessages(this.world.aborted(), false) });
          await aborted.abort();
        }
        const tx = await producer.transaction();
        await tx.sendBatch({ compression, topicMessages: topicMessages(draw.events, true) });
        await tx.commit();
      } finally {
        await producer.disconnect();
      }
    }
    for (const event of draw.events) this.oracle.apply(event);
    for (const id of draw.revoked) this.revokedAcked.add(id);
    this.events += draw.events.length;
    this.poison += draw.poison.length;
  }

  /** Replicas that are up, ready since the broker last came back, with the broker up: the revocation bound holds for them. */
  private async checkRevocations(revoked: readonly string[]): Promise<void> {
    if (revoked.length === 0 || this.broker.state !== 'up') return;
    const since = Date.now();
    for (const replica of this.replicas) {
      if (!replica.running || replica.readyAtEpoch !== this.broker.epoch) continue;
      const pending = new Set(revoked);
      while (pending.size > 0 && Date.now() - since <= revocationBoundMs) {
        for (const id of [...pending]) {
          const key = this.world.keys.get(id);
          const answer = key === undefined ? null : await get(replica.apiUrl('/orders?limit=1'), key.raw);
          if (answer?.status === 401) pending.delete(id);
        }
        if (pending.size > 0) await sleep(50);
      }
      this.checks += 1;
      const took = Date.now() - since;
      if (pending.size > 0) {
        this.violation(
          replica,
          'revocation bound',
          `${[...pending].join(',')} still accepted ${took} ms after the broker acknowledged the revocation`,
        );
      } else {
        this.slowestRevocationMs = Math.max(this.slowestRevocationMs, took);
      }
    }
  }

  private async lookAtAll(): Promise<void> {
    for (const replica of this.replicas) {
      if (!replica.running) continue;
      if (await this.prober.look(replica, this.memory(replica))) {
        this.checks += 1;
        replica.answered = true;
      }
      if (this.broker.state === 'up' && (await this.prober.ready(replica)))
        replica.readyAtEpoch = this.broker.epoch;
    }
    await this.caller.look(this.replicas);
  }

  private async burst(replica: Replica, requests: number): Promise<void> {
    const paths = [
      '/orders',
      '/orders?limit=200&status=finished',
      '/orders?offset=5&limit=3',
      '/orders/1/articles',
      '/orders/abc/articles',
    ];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < requests) {
        next += 1;
        const path = this.ops.pick(paths);
        const answer = await get(replica.apiUrl(path), this.world.permanentKey(this.ops.pick([1, 2, 3, 4])));
        if (answer !== null) this.invariants.status(replica.name, `burst ${path}`, answer.status);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    this.checks += 1;
  }

  private async waitReady(when: string): Promise<void> {
    const deadline = Date.now() + livenessMs;
    for (const replica of this.replicas) {
      while (!(await this.prober.ready(replica))) {
        if (Date.now() > deadline) {
          this.violation(
            replica,
            'liveness',
            `not ready ${livenessMs / 1000} s after ${when}; its last lines:\n${replica.tail.slice(-15).join('\n')}`,
          );
          return;
        }
        await sleep(250);
      }
      replica.readyAtEpoch = this.broker.epoch;
    }
    this.checks += 1;
  }

  /** Ends every fault, then holds each replica to liveness and convergence. */
  private async endFaults(): Promise<void> {
    if (this.broker.state === 'frozen') this.broker.thaw();
    if (this.broker.state === 'down') await this.broker.resume();
    for (const replica of this.replicas) replica.start();
    await this.waitReady('the last fault');
    for (const replica of this.replicas) {
      const deadline = Date.now() + convergenceMs;
      let differences = await this.prober.differences(replica);
      while (differences.length > 0 && Date.now() < deadline) {
        await sleep(500);
        differences = await this.prober.differences(replica);
      }
      this.checks += 1;
      for (const d of differences) this.violation(replica, 'nothing lost, nothing doubled', d);
      await this.lookAtAll();
      const deadLetters = deadLettersOf(replica.dataDir);
      this.checks += 1;
      // one dead letter per poison message, and one per batch the operator skipped
      if (deadLetters !== this.poison + this.skipped)
        this.violation(
          replica,
          'dead letters exactly for the poison',
          `${deadLetters} dead letters, for ${this.poison} poison messages and ${this.skipped} skipped batches`,
        );
    }
  }
}

function deadLettersOf(dataDir: string): number {
  const file = new ModelFiles(dataDir).currentFile();
  if (file === null || !existsSync(file)) return -1;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM dead_letters').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs one campaign on a broker and replicas of its own; everything it started is stopped after. */
export async function runCampaign(options: CampaignOptions): Promise<CampaignReport> {
  const dir = mkdtempSync(join(tmpdir(), `campaign-${options.seed}-`));
  const broker = await CampaignBroker.start();
  const replicas: Replica[] = [];
  const kafka = new Kafka({ clientId: 'campaign', brokers: [broker.brokers], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  let report: CampaignReport | null = null;
  try {
    const admin = kafka.admin();
    await admin.connect();
    const topics = await createContractTopicSet(admin, `campaign-${options.seed}`);
    await admin.disconnect();
    await producer.connect();
    for (const name of ['replica-1', 'replica-2'])
      replicas.push(await Replica.create(name, dir, broker.brokers, topics, options.httpWorkers ?? 1));
    report = await new Campaign(options, broker, kafka, producer, replicas, topics, dir).run();
    return report;
  } finally {
    await Promise.all(replicas.map((r) => r.kill('SIGKILL')));
    await producer.disconnect().catch(() => undefined);
    await broker.stop();
    // A failed campaign keeps its replicas' data directories and logs for a look.
    if (report === null || report.violations.length > 0)
      console.log(`[campaign ${options.seed}] kept ${dir}: the replicas' logs and data directories`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

export function formatReport(report: CampaignReport): string {
  const faults = Object.entries(report.faults)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const lines = [
    `seed ${report.seed}${report.httpWorkers > 1 ? ` (HTTP_WORKERS=${report.httpWorkers})` : ''}: ${report.steps.length} steps in ${report.minutes.toFixed(1)} min, ${report.events} events and ${report.poison} poison messages published; faults: ${faults || 'none'}; ${report.checks} checks; slowest revocation ${report.slowestRevocationMs} ms; caller with its position: ${report.caller.answered} answers, ${report.caller.notReached} not reached (503); ${report.violations.length} violations`,
  ];
  if (report.violations.length > 0) {
    lines.push(
      `replay: npm run campaign -- --seed ${report.seed} --steps ${report.steps.length} --http-workers ${report.httpWorkers}`,
    );
    lines.push('steps:', ...report.steps.map((s) => `  ${s}`));
    lines.push(
      'violations:',
      ...report.violations.map((v) => `  step ${v.step} ${v.replica} [${v.invariant}] ${v.detail}`),
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: String(Date.now() % 100_000) },
      minutes: { type: 'string', default: '5' },
      steps: { type: 'string', default: '100000' },
      'http-workers': { type: 'string', default: '1' },
    },
  });
  const numbers = {
    seed: Number(values.seed),
    minutes: Number(values.minutes),
    steps: Number(values.steps),
    httpWorkers: Number(values['http-workers']),
  };
  for (const [name, value] of Object.entries(numbers)) {
    if (!Number.isInteger(value) && name !== 'minutes') throw new Error(`--${name} must be an integer`);
    if (!(value >= 0)) throw new Error(`--${name} must be a number ≥ 0`);
    if (name === 'httpWorkers' && !(value >= 1)) throw new Error('--http-workers must be at least 1');
  }
  const report = await runCampaign({ ...numbers, log: (line) => console.log(line) });
  console.log(formatReport(report));
  process.exitCode = report.violations.length > 0 ? 1 : 0;
}

if (isEntryPoint(import.meta.url)) await main();
