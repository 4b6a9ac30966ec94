/**
 * The randomized fault campaign: one seed draws a sequence of operations (publishing, faults of the
 * service and of the broker, operator commands, request bursts), runs them against the real broker
 * and the service's real processes, and checks the promises from outside after every step.
 *
 *   npm run campaign -- --seed 7 --minutes 10 [--steps N] [--http-workers N] [--targeted P]
 *                      [--scenario skip-while-proposed,concurrent-skips,...]
 *
 * A failure prints the seed and the step list; the same seed draws the same steps.
 */
import { keysFile } from '../../src/keys/keys-store.js';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import {
  Kafka,
  logLevel,
  Partitioners,
  type CompressionTypes,
  type Producer,
  type RecordMetadata,
  type TopicMessages,
} from 'kafkajs';
import type { DomainEvent } from '../../schemas/events.js';
import { rolesOfStore, streamRoles, type TopicRole } from '../../schemas/streams.js';
import { messageKeyOf, topicRoleOf } from '../../src/kafka/publisher.js';
import { codecNames, type CodecName } from '../../src/kafka/codecs.js';
import { compressionOf } from '../../src/kafka/kafkajs-adapter.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { createContractTopicSet, isEntryPoint } from '../harness.js';
import { kcatProduce } from '../kcat.js';
import { markPreviousProjectionVersion } from '../model-progress.js';
import { CampaignBroker, Replica } from './cluster.js';
import { Invariants, Memory, type Violation } from './invariants.js';
import { Oracle } from './oracle.js';
import { get, Prober } from './probe.js';
import { Caller, type CallerCounts } from './caller.js';
import { CallerWaits, type WaitCounts } from './caller-wait.js';
import { CursorWalks, type WalkCounts } from './cursor-walk.js';
import { OwnWrites, type OwnWriteCounts } from './own-writes.js';
import type { AckedRecord } from './positions.js';
import { PagePositions } from './page-positions.js';
import { historyOperations, HistoryOps, type HistoryOperation } from './history.js';
import { Random } from './random.js';
import { RevokedKeyProbes, type KeyProbe, type Pinned } from './threads.js';
import { insertOnlyOrg, organizations, World, type Draw } from './world.js';

export interface CampaignOptions {
  seed: number;
  /**
   * stop drawing after this many steps or after this many minutes of steps, whichever comes first:
   * the minutes count from the replicas' first ready, so that a slow set-up on a loaded machine
   * does not take the steps' time
   */
  steps: number;
  minutes: number;
  /** HTTP_WORKERS of every replica (default 1) */
  httpWorkers?: number;
  /**
   * The chance, at each step, that one of the targeted operations (`targetedOperations`) is drawn
   * instead of one of the others; they are drawn from a random source of their own, so that a seed
   * draws the same sequence of the others whatever this is (0: none of them). Default 0.2.
   */
  targeted?: number;
  /** targeted operations performed first, in this order, before anything is drawn */
  scenario?: readonly string[];
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
  /** revoked keys probed through the request threads' own connections */
  revokedProbes: number;
  /** the options that draw the same steps again */
  targeted: number | undefined;
  scenario: readonly string[];
  /** the caller moved between replicas with its position (`caller.ts`) */
  caller: CallerCounts;
  /** the caller's waiting requests (`caller-wait.ts`) */
  waits: WaitCounts;
  /** walks by the `next` links while orders are created (`cursor-walk.ts`) */
  walks: WalkCounts;
  /** orders asked for at the position their publisher built (`own-writes.ts`) */
  ownWrites: OwnWriteCounts;
}

interface SkippedBatch {
  topic: string;
  partition: number;
  /** the batch's first and last offsets, as /readyz names them */
  from: number;
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
  | 'pause'
  | 'walk'
  | 'wait'
  | 'ownWrite'
  | TargetedOperation;

/**
 * Operations aimed at a promise an operator or a request thread can break: each drives one
 * sequence a reviewer would try, named in the output by its name here.
 */
export const targetedOperations = {
  skipWhileProposed: 'skip-while-proposed',
  concurrentSkips: 'concurrent-skips',
  newReplicaSkipsNewestFirst: 'new-replica-skips-newest-first',
  revokeDuringCatchUp: 'revoke-during-catch-up',
  revokeCachedKey: 'revoke-cached-key',
  garbledPointer: 'garbled-pointer',
  revokeAfterBrokerRestart: 'revoke-after-broker-restart',
  skipKeysBatchDuringCatchUp: 'skip-keys-batch-during-catch-up',
  lz4InflatingBatch: 'lz4-inflating-batch',
  // records deleted from the start of a partition before a build (`history.ts`)
  ...historyOperations,
} as const;
type TargetedOperation = keyof typeof targetedOperations;

/** A batch no consumer may read: 6 MiB of zstd-compressed spaces, beyond the default 4 MiB bound. */
const unreadableLine = `x\t{"padding":"${' '.repeat(6 * 1024 * 1024)}"}`;
/** What a replica's resident memory may rise by while it refuses an LZ4 batch inflating to 200 MB. */
const lz4RiseBoundBytes = 150 * 1024 * 1024;

/** A process's resident memory (`VmRSS`), 0 when it is gone. */
function residentBytes(pid: number | null): number {
  if (pid === null) return 0;
  try {
    const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? 0 : Number(kib) * 1024;
  } catch {
    return 0;
  }
}

/** How many unreadable batches the targeted operations publish in a run at most (each costs every replica a skip). */
const unreadableBudget = 16;

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
  private readonly waits: CallerWaits;
  private readonly walks: CursorWalks;
  private readonly ownWrites: OwnWrites;
  private readonly memories = new Map<Replica, Memory>();
  private readonly steps: string[] = [];
  private readonly faults: Record<string, number> = {};
  private checks = 0;
  private slowestRevocationMs = 0;
  private events = 0;
  private poison = 0;
  private txCount = 0;
  /** unreadable batches published (each skipped by the operator on every replica) */
  private skipped = 0;
  /** inflating batches of the `hostileBatch` operation */
  private inflating = 0;
  /** the targeted operations' own random source, and what they pass on to the partitioner */
  private readonly targeted: Random;
  private readonly partitioner = Partitioners.DefaultPartitioner();
  private readonly revokedProbes: RevokedKeyProbes;
  /** the inflating batches skipped, each with its last offset: a new replica is told them too */
  private readonly skippedBatches: SkippedBatch[] = [];
  /** the operations on a log that has lost its first records */
  private readonly history: HistoryOps;

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
    this.targeted = new Random(options.seed + 3);
    this.revokedProbes = new RevokedKeyProbes(
      replicas,
      options.httpWorkers ?? 1,
      () =>
        [...this.revokedAcked].flatMap((id) => {
          const key = this.world.keys.get(id);
          return key === undefined ? [] : [{ id, raw: key.raw }];
        }),
      this.world.permanentKey(insertOnlyOrg),
      (replica, probe) => this.keyProbed(replica, probe),
      (line) => this.log(line),
    );

    this.caller = new Caller(this.world, this.invariants, new Random(options.seed + 4));
    const callerFeatures = {
      replicas,
      world: this.world,
      oracle: this.oracle,
      invariants: this.invariants,
      brokerUp: () => this.broker.state === 'up',
      publish: (draw: Draw) => this.publish(draw, 'none', 'plain').then(() => undefined),
      publishAcked: (draw: Draw) => this.publishAcked(draw),
    };
    this.walks = new CursorWalks({
      ...callerFeatures,
      random: new Random(options.seed + 6),
      endOffsets: () => this.modelEndOffsets(),
    });
    this.waits = new CallerWaits({
      ...callerFeatures,
      caller: this.caller,
      random: new Random(options.seed + 7),
    });
    this.ownWrites = new OwnWrites({
      ...callerFeatures,
      random: new Random(options.seed + 8),
      memoryOf: (replica) => this.memory(replica),
    });
    this.pagePositions = new PagePositions(
      kafka,
      topics.orders,
      replicas,
      this.world,
      this.invariants,
      new Random(options.seed + 5),
    );
    this.history = new HistoryOps({
      kafka,
      replicas,
      topics,
      world: this.world,
      random: this.targeted,
      dir,
      brokerUp: () => this.broker.state === 'up',
      log: (line) => this.log(line),
      count: (fault) => this.count(fault),
      violation: (replica, invariant, detail) => this.violation(replica, invariant, detail),
      forget: (replica) => this.memories.delete(replica),
      publish: (draw) => this.publish(draw, 'none', 'plain').then(() => undefined),
      lookAtAll: () => this.lookAtAll(),
      ready: (replica) => this.prober.ready(replica),
      waitReady: (when, which) => this.waitReady(when, which),
      converged: (replica, invariant) => this.converged(replica, invariant),
      skipBatch: (replica, batch) => this.skipBatch(replica, batch),
      skippedBatches: () => this.skippedBatches,
      partitionOf: (key) => this.partitionOf(key),
    });
  }

  /** every answer during the campaign checked against its own position (`page-positions.ts`) */
  private readonly pagePositions: PagePositions;

  private keyProbed(replica: Replica, probe: KeyProbe): void {
    this.invariants.key(replica.name, this.memory(replica), probe.keyId, probe.status, probe);
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
    await this.publish({ events: this.world.genesis(), poison: [], revoked: [] }, 'none', 'plain');
    for (const replica of this.replicas) replica.start();
    await this.waitReady('the first start');
    this.revokedProbes.start();
    await this.pagePositions.start();
    const deadline = Date.now() + this.options.minutes * 60_000;
    const scenario = [...(this.options.scenario ?? [])];
    for (let step = 1; step <= this.options.steps && Date.now() < deadline; step += 1) {
      this.invariants.step = step;
      const forced = scenario.shift();
      const op = forced === undefined ? this.draw() : scenarioOperation(forced);
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
    await this.revokedProbes.stop();
    await this.pagePositions.stop();
    const pages = this.pagePositions.counts;
    this.log(
      `[campaign ${this.options.seed}] pages checked against their own position: ${pages.checked}, undecided ${pages.undecided}`,
    );
    for (const replica of this.replicas) {
      for (const refused of replica.refusedTransitions.splice(0))
        this.violation(replica, 'transitions in the table', refused);
    }
    this.countCatchUpReplays();
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
      revokedProbes: this.revokedProbes.count,
      targeted: this.options.targeted,
      scenario: this.options.scenario ?? [],
      caller: this.caller.counts,
      waits: this.waits.counts,
      walks: this.walks.counts,
      ownWrites: this.ownWrites.counts,
    };
  }

  /** How often the replicas caught up by replay, and how those replays ended, from their logs. */
  private countCatchUpReplays(): void {
    const marks = {
      'catch-up replay started': 'far behind: catching up by replaying',
      'catch-up replay finished': 'the catch-up replay finished',
      'catch-up replay failed': 'the catch-up replay failed',
    };
    for (const replica of this.replicas) {
      const log = existsSync(replica.logFile) ? readFileSync(replica.logFile, 'utf8') : '';
      for (const line of log.split('\n')) {
        for (const [name, mark] of Object.entries(marks)) {
          if (!line.includes(mark)) continue;
          // a failure counted by its cause: aborted at a stop, the lock held by a rebuild, a stall
          const cause = /"code":"([A-Z_]+)"/.exec(line)?.[1];
          const key = cause === undefined ? name : `${name} (${cause})`;
          this.faults[key] = (this.faults[key] ?? 0) + 1;
        }
      }
    }
  }

  private draw(): Operation {
    const up = this.broker.state === 'up';
    const running = this.replicas.filter((r) => r.running).length;
    const down = this.replicas.length - running;
    const all = running === this.replicas.length;
    const unreadable = up && all && this.skipped < unreadableBudget;
    if (this.targeted.chance(this.options.targeted ?? 0.2)) {
      const weights: Record<TargetedOperation, number> = {
        skipWhileProposed: unreadable ? 1 : 0,
        concurrentSkips: unreadable && this.skipped + 6 <= unreadableBudget ? 0.7 : 0,
        newReplicaSkipsNewestFirst: unreadable && this.skipped + 2 <= unreadableBudget ? 0.7 : 0,
        revokeDuringCatchUp: up && running > 0 ? 1.5 : 0,
        revokeCachedKey: up && running > 0 ? 2 : 0,
        garbledPointer: running > 0 ? 0.5 : 0,
        revokeAfterBrokerRestart: up && all ? 0.7 : 0,
        skipKeysBatchDuringCatchUp: unreadable ? 0.7 : 0,
        lz4InflatingBatch: unreadable ? 0.5 : 0,
        ...this.history.weights(up, all),
      };
      if (Object.values(weights).some((w) => w > 0)) return this.targeted.weighted(weights);
    }
    return this.ops.weighted<Exclude<Operation, TargetedOperation>>({
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
      hostileBatch: up && running === this.replicas.length && this.inflating < 2 ? 0.3 : 0,
      snapshot: 0.6,
      freezeBroker: up ? 0.7 : 0,
      thawBroker: this.broker.state === 'frozen' ? 4 : 0,
      stopBroker: up ? 0.5 : 0,
      startBroker: this.broker.state === 'down' ? 3 : 0,
      burst: running > 0 ? 1 : 0,
      pause: 1,
      walk: running > 0 ? 3 : 0,
      wait: running > 0 ? 3 : 0,
      ownWrite: up && running > 0 ? 3 : 0,
    });
  }

  private async perform(op: Operation): Promise<string> {
    const random = this.ops;
    // a replica left on an older projection version by a refused rebuild gets its remedy
    await this.history.settlePending();
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
        if (file !== null) markPreviousProjectionVersion(file);
        replica.start();
        this.count('projection version change');
        if (!this.history.ordersShortened()) return `projection version change on ${replica.name}`;
        return `projection version change on ${replica.name}: ${await this.history.afterVersionChange(replica)}`;
      }
      case 'snapshot': {
        const [from, to] = random.chance(0.5) ? this.replicas : [...this.replicas].reverse();
        if (from === undefined || to === undefined) return 'snapshot: no replicas';
        // On a shortened log, a replica is emptied only for a snapshot it can restore: the log no
        // longer holds what it would need to build from nothing.
        if (this.history.ordersShortened() && !this.history.currentVersion(from))
          return `snapshot of ${from.name}: of an older projection version on a shortened log, ${to.name} kept`;
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
        // skips them there too, as the runbook says. A restored snapshot brings the orders model's
        // skips, but its keys store is built from the keys topic and meets the keys batches again.
        // Newest first, the order `dead-letters list` prints them in.
        for (const batch of [...this.skippedBatches].reverse())
          if (!restored || batch.topic === this.topics.apiKeys) await this.skipBatch(to, batch);
        await this.history.tellNewReplica(to);
        to.start();
        this.count(restored ? 'snapshot restored into a new replica' : 'new empty replica');
        const settled = restored ? null : await this.history.settleNewReplica(to, `a new empty ${to.name}`);
        return restored
          ? `snapshot of ${from.name} restored into a new ${to.name}`
          : `snapshot of ${from.name} refused; a new empty ${to.name}, told the skipped batches${settled === null ? '' : `: ${settled}`}`;
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
        const role = random.pick(streamRoles);
        const partition = random.int(0, 2);
        const topic = this.topics[role];
        const line = `x\t{"padding":"${' '.repeat(24 * 1024 * 1024)}"}`;
        const offsetOfBatch = await this.endOffset(topic, partition);
        kcatProduce({ brokers: this.broker.brokers, topic, partition, lines: [line] });
        this.skipped += 1;
        this.inflating += 1;
        this.count('inflating batch skipped by the operator');
        let first: SkippedBatch | null = null;
        for (const replica of this.replicas) {
          const reported = await this.reportedBatch(replica, topic, partition, offsetOfBatch);
          if (reported === null) {
            this.violation(
              replica,
              'liveness',
              `${topic}[${partition}]'s inflating batch was not reported in /readyz within 30 s`,
            );
            continue;
          }
          if (first === null) {
            first = { topic, partition, ...reported };
            this.skippedBatches.push(first);
          }
          await this.skipBatch(replica, { topic, partition, ...reported });
        }
        return `inflating zstd batch on ${topic}[${partition}], skipped by the operator on every replica`;
      }
      case 'pause': {
        const ms = random.int(100, 2000);
        await sleep(ms);
        return `pause ${ms} ms`;
      }
      case 'walk':
        return this.walks.walk();
      case 'wait':
        return `caller: ${await this.waits.wait()}`;
      case 'ownWrite':
        return `built position: ${await this.ownWrites.ownWrites()}`;
      case 'skipWhileProposed':
        return this.named(op, await this.skipWhileProposed());
      case 'concurrentSkips':
        return this.named(op, await this.concurrentSkips());
      case 'newReplicaSkipsNewestFirst':
        return this.named(op, await this.newReplicaSkipsNewestFirst());
      case 'revokeDuringCatchUp':
        return this.named(op, await this.revokeDuringCatchUp());
      case 'revokeCachedKey':
        return this.named(op, await this.revokeCachedKey());
      case 'garbledPointer':
        return this.named(op, await this.garbledPointer());
      case 'revokeAfterBrokerRestart':
        return this.named(op, await this.revokeAfterBrokerRestart());
      case 'skipKeysBatchDuringCatchUp':
        return this.named(op, await this.skipKeysBatchDuringCatchUp());
      case 'lz4InflatingBatch':
        return this.named(op, await this.lz4InflatingBatch());
      default:
        return this.named(op, await this.history.perform(op satisfies HistoryOperation));
    }
  }

  private named(op: TargetedOperation, description: string): string {
    this.count(targetedOperations[op]);
    return `[${targetedOperations[op]}] ${description}`;
  }

  /**
   * A kept build proposed behind the served model, then an unreadable batch after readable orders,
   * and the operator's skip-batch while the replica is down: the proposal must not move past the
   * readable orders (after its switch, every order the replica listed is still listed).
   */
  private async skipWhileProposed(): Promise<string> {
    const replica = this.targeted.pick(this.replicas);
    const kept = await this.keptBuild(replica);
    if (kept === null) return `rebuild --no-promote on ${replica.name} failed`;
    const { partition, orders } = await this.ordersOnSomePartition(this.targeted.int(8, 15));
    await this.waitListed(replica, orders);
    await this.lookAtAll();
    const batch = await this.unreadableBatch('orders', partition);
    if (batch === null) return `the unreadable batch on ${this.topics.orders}[${partition}] was not reported`;
    await replica.kill('SIGKILL');
    new ModelFiles(replica.dataDir).proposeNext(kept);
    for (const r of this.replicas) await this.skipBatch(r, batch);
    replica.start();
    const switched = await this.waitSwitched(replica);
    await this.lookAtAll();
    return `rebuild --no-promote on ${replica.name} kept ${basename(kept)}; ${orders.length} new orders, on ${this.topics.orders}[${partition}] among others, listed; an unreadable batch after them (offsets through ${batch.through}); SIGKILL ${replica.name}, the kept file proposed in NEXT, skip-batch on every replica, start ${replica.name}: ${switched ? 'switched to the proposal' : 'the proposal was not switched to within 60 s'}`;
  }

  /**
   * Unreadable batches on every partition of two topics, and the operator skips them all at once
   * on each replica (a loop over the partitions with `&`): every run must succeed, and a rebuild
   * after them must move past every batch (its skip recorded), not wait at one.
   */
  private async concurrentSkips(): Promise<string> {
    const roles = streamRoles.filter(() => this.targeted.chance(0.5));
    const chosen: readonly TopicRole[] = roles.length >= 2 ? roles.slice(0, 2) : ['orderStatus', 'articles'];
    const batches = await Promise.all(
      chosen.flatMap((role) => [0, 1, 2].map((p) => this.unreadableBatch(role, p, false))),
    );
    const found = batches.filter((b): b is SkippedBatch => b !== null);
    for (const replica of this.replicas)
      await Promise.all(found.map((batch) => this.skipBatch(replica, batch)));
    for (const replica of this.replicas) await this.rebuildPassesSkips(replica, found);
    return `unreadable batches on the three partitions of ${chosen.map((r) => this.topics[r]).join(' and ')}; on each replica skip-batch ×${found.length} at once, then a rebuild`;
  }

  /**
   * Two unreadable batches on one partition with readable orders between them (made if the run has
   * none yet), then a new empty replica told the skips newest first (the order `dead-letters
   * list` prints them) before it starts: it must still list every order between them.
   */
  private async newReplicaSkipsNewestFirst(): Promise<string> {
    let made = '';
    const onOrders = (p: number): SkippedBatch[] =>
      this.skippedBatches.filter((b) => b.topic === this.topics.orders && b.partition === p);
    let partition = [0, 1, 2].find((p) => onOrders(p).length >= 2);
    if (partition === undefined) {
      partition = [0, 1, 2].find((p) => onOrders(p).length === 1) ?? this.targeted.int(0, 2);
      if (onOrders(partition).length === 0 && (await this.unreadableBatch('orders', partition)) === null)
        return `the unreadable batch on ${this.topics.orders}[${partition}] was not reported`;
      const orders = await this.ordersOnPartition(partition);
      for (const replica of this.replicas) await this.waitListed(replica, orders);
      if ((await this.unreadableBatch('orders', partition)) === null)
        return `the unreadable batch on ${this.topics.orders}[${partition}] was not reported`;
      made = `two unreadable batches on ${this.topics.orders}[${partition}] with ${orders.length} new orders between them, each skipped on every replica; `;
    }
    const replica = this.targeted.pick(this.replicas);
    await replica.wipe();
    this.memories.delete(replica);
    const newestFirst = [...this.skippedBatches].reverse();
    for (const batch of newestFirst) await this.skipBatch(replica, batch);
    await this.history.tellNewReplica(replica);
    replica.start();
    this.count('new empty replica');
    const settled = await this.history.settleNewReplica(replica, `a new empty ${replica.name}`);
    if (settled !== null) return `${made}${settled}`;
    await this.waitReady(`${replica.name} started empty`, [replica]);
    await this.converged(replica, 'nothing lost (new replica)');
    return `${made}a new empty ${replica.name} told the ${newestFirst.length} skipped batches newest first, started, ready and compared with the oracle`;
  }

  /**
   * A kept build proposed while many events have come since: while the candidate catches up,
   * revocations on one partition of the keys topic, each followed by a fact on another, with every
   * revoked key probed through every request thread meanwhile.
   */
  private async revokeDuringCatchUp(): Promise<string> {
    const replica = this.targeted.pick(this.replicas.filter((r) => r.running));
    const kept = await this.keptBuild(replica);
    if (kept === null) return `rebuild --no-promote on ${replica.name} failed`;
    const bulk = this.world.draw(this.targeted.int(60, 150), false);
    await this.publish(bulk, 'none', 'plain');
    new ModelFiles(replica.dataDir).proposeNext(kept);
    const revoked: string[] = [...bulk.revoked];
    const until = Date.now() + 10_000;
    let rounds = 0;
    while (rounds < 10 && Date.now() < until && existsSync(join(replica.dataDir, 'NEXT'))) {
      rounds += 1;
      let live = [...this.world.keys.entries()].filter(([, k]) => !k.revoked).map(([id]) => id);
      if (live.length === 0) {
        const issued = this.world.issueKey();
        await this.publish(issued.draw, 'none', 'plain');
        live = [issued.id];
      }
      const id = this.targeted.pick(live);
      const partition = this.keyPartition(id);
      await this.publish(this.world.revokeKey(id), 'none', 'plain');
      revoked.push(id);
      await sleep(this.targeted.int(0, 40));
      // a fact on another partition of the keys topic: an issue whose key lands elsewhere
      const others: Draw = { events: [], poison: [], revoked: [] };
      for (let i = 0; i < 6; i += 1) {
        const issued = this.world.issueKey();
        others.events.push(...issued.draw.events);
        if (this.keyPartition(issued.id) !== partition) break;
      }
      await this.publish(others, 'none', 'plain');
      await sleep(this.targeted.int(0, 300));
    }
    await this.checkRevocations(revoked);
    const switched = await this.waitSwitched(replica);
    return `a kept build of ${replica.name} proposed ${bulk.events.length} events behind; ${rounds} revocations during its catch-up (${revoked.join(',')}), each followed by an issue on another keys partition; ${switched ? 'switched' : 'not switched within 60 s'}`;
  }

  /**
   * New keys asked through one request thread alone (so that only it has them cached), revoked in
   * one batch, then asked once each, in turn, through every other thread (a thread that has not
   * cached a key reads the model, and so sees the revocation as soon as it is committed), each
   * refusal followed at once by the same key through the first thread: no thread may accept a key
   * once another has refused it. The main thread, which tells the others to forget their keys, is
   * kept busy with pages meanwhile.
   */
  private async revokeCachedKey(): Promise<string> {
    const replica = this.targeted.pick(this.replicas.filter((r) => r.running));
    const pinned = await this.revokedProbes.measured(replica);
    const threads = [...pinned].sort((a, b) => (a.thread === 'main' ? 1 : b.thread === 'main' ? -1 : 0));
    const [holder, ...others] = threads;
    if (holder === undefined) return `no request thread of ${replica.name} reached by a connection yet`;
    const keys = Array.from({ length: this.targeted.int(30, 60) }, () => this.world.issueKey());
    await this.publish(
      { events: keys.flatMap((k) => k.draw.events), poison: [], revoked: [] },
      'none',
      'plain',
    );
    const url = replica.apiUrl('/orders?limit=1');
    const ask = async (through: Pinned, key: { id: string; raw: string }): Promise<number | null> => {
      const via = through.thread ?? 'a reopened connection';
      const answer = await through.get(url, key.raw, 2000);
      if (answer !== null) this.keyProbed(replica, { ...answer, keyId: key.id, via });
      return answer?.status ?? null;
    };
    const accepted = Date.now() + 10_000;
    for (const key of keys) {
      while ((await ask(holder, key)) !== 200) {
        if (Date.now() > accepted) return `${key.id} was not accepted by ${replica.name} within 10 s`;
        await sleep(20);
      }
    }
    const until = Date.now() + 5000;
    let busy = true;
    const load = Array.from({ length: 8 }, async () => {
      while (busy && Date.now() < until) {
        const answer = await get(replica.apiUrl('/orders?limit=200'), this.world.permanentKey(insertOnlyOrg));
        if (answer !== null) this.invariants.status(replica.name, 'load during a revocation', answer.status);
      }
    });
    const revocation: Draw = { events: [], poison: [], revoked: [] };
    for (const key of keys) {
      const draw = this.world.revokeKey(key.id);
      revocation.events.push(...draw.events);
      revocation.revoked.push(...draw.revoked);
    }
    await this.publish(revocation, 'none', 'plain');
    let refusals = 0;
    await Promise.all(
      others.map(async (through, index) => {
        const order = index % 2 === 0 ? keys : [...keys].reverse();
        for (const key of order) {
          if ((await ask(through, key)) !== 401) continue;
          refusals += 1;
          await ask(holder, key);
        }
      }),
    );
    busy = false;
    await Promise.all(load);
    await this.checkRevocations(revocation.revoked);
    return `${keys.length} keys (${keys[0]?.id}…) issued, asked through ${holder.thread} of ${replica.name} alone, revoked in one batch, then asked once each through ${others.map((t) => t.thread).join(', ') || 'no other thread'} (${refusals} refusals there, each followed by the same key through ${holder.thread}), with 8 more connections asking for pages meanwhile`;
  }

  /**
   * A replica stopped, its CURRENT pointer garbled (naming a file that does not exist), started:
   * it must stop with exit code 1 and a message naming the pointer, not serve an empty model.
   */
  private async garbledPointer(): Promise<string> {
    const replica = this.targeted.pick(this.replicas.filter((r) => r.running));
    const code = await replica.kill('SIGTERM');
    if (code !== 0 && replica.answered)
      this.violation(replica, 'clean stop', `SIGTERM ended it with exit code ${code}`);
    const pointer = join(replica.dataDir, 'CURRENT');
    if (!existsSync(pointer)) {
      replica.start();
      return `${replica.name} has no CURRENT yet; started again`;
    }
    const original = readFileSync(pointer, 'utf8');
    const name = original.trim();
    const garbled = this.targeted.chance(0.5)
      ? name.replace(/(\d)(\d)/, '$2$1x')
      : 'model-20000101000000000-000000.sqlite';
    writeFileSync(pointer, `${garbled}\n`);
    replica.lastExit = null;
    replica.exitExpected = true;
    replica.start();
    const deadline = Date.now() + 90_000;
    let answer: Awaited<ReturnType<typeof get>> = null;
    const exited = (): boolean => replica.lastExit !== null;
    while (!exited() && answer === null && Date.now() < deadline) {
      await sleep(200);
      answer = await get(replica.apiUrl('/orders?limit=200'), this.world.permanentKey(insertOnlyOrg), 1000);
    }
    replica.exitExpected = false;
    const exit = replica.lastExit as { code: number | null; lines: string[] } | null;
    let outcome: string;
    if (exit !== null) {
      if (exit.code !== 1 || !exit.lines.some((line) => line.includes('CURRENT')))
        this.violation(
          replica,
          'garbled pointer refused',
          `with CURRENT naming ${garbled}, which does not exist, it exited with code ${exit.code} and its last lines do not name CURRENT:\n${exit.lines.join('\n')}`,
        );
      outcome = `it exited with code ${exit.code}`;
    } else if (answer !== null) {
      const total = (answer.body as { total?: number }).total;
      const expected = this.oracle.ordersOf(insertOnlyOrg).length;
      this.violation(
        replica,
        'garbled pointer refused',
        `with CURRENT naming ${garbled}, which does not exist, it started serving instead of stopping with exit code 1: organization ${insertOnlyOrg}'s key answered ${answer.status}${total === undefined ? ' (a model without its keys)' : ` with ${total} orders`} where the model CURRENT named holds ${expected} orders of it`,
      );
      await this.lookAtAll();
      await replica.kill('SIGTERM');
      outcome = `it served (organization ${insertOnlyOrg}'s key answered ${answer.status})`;
    } else {
      this.violation(
        replica,
        'garbled pointer refused',
        `with CURRENT naming ${garbled}, it neither exited nor answered within 90 s`,
      );
      await replica.kill('SIGKILL');
      outcome = 'it neither exited nor answered';
    }
    writeFileSync(pointer, original);
    replica.start();
    return `SIGTERM ${replica.name}, CURRENT garbled to ${garbled}, start: ${outcome}; the pointer restored and ${replica.name} started`;
  }

  /**
   * The broker stopped for 3–20 s and started again; once every replica is ready again, a
   * revocation every second for 10 s, each held to the revocation bound: a consumer whose retries
   * run out after the broker came back must not leave a ready replica accepting a revoked key.
   */
  private async revokeAfterBrokerRestart(): Promise<string> {
    const downMs = this.targeted.int(3000, 20_000);
    await this.broker.halt();
    this.count('broker stopped');
    await sleep(downMs);
    await this.broker.resume();
    await this.waitReady('the broker came back');
    const revoked: string[] = [];
    for (let i = 0; i < 10 && this.invariants.violations.length === 0; i += 1) {
      let live = [...this.world.keys.entries()].filter(([, k]) => !k.revoked).map(([id]) => id);
      if (live.length === 0) {
        const issued = this.world.issueKey();
        await this.publish(issued.draw, 'none', 'plain');
        await sleep(500);
        live = [issued.id];
      }
      const draw = this.world.revokeKey(this.targeted.pick(live));
      await this.publish(draw, 'none', 'plain');
      revoked.push(...draw.revoked);
      await this.checkRevocations(draw.revoked);
      await sleep(1000);
    }
    return `the broker stopped for ${downMs} ms and started again; once the replicas were ready, ${revoked.length} revocations a second apart (${revoked.join(',')}), each held to the bound`;
  }

  /**
   * A revocation queued behind an unreadable batch on its keys partition, read by the served model
   * and a candidate at different times: the served model has waited at the batch for a while (its
   * retries 8–10 s apart), a kept build proposed behind it meets the batch later (retries 1 s
   * apart), and the operator skips it while the candidate still catches up the other topics. The
   * candidate reads the revocation first; issues on the other keys partitions follow every 100 ms,
   * which the served model reads first: a revoked key refused once must stay refused meanwhile.
   */
  private async skipKeysBatchDuringCatchUp(): Promise<string> {
    const replica = this.targeted.pick(this.replicas);
    const kept = await this.keptBuild(replica);
    if (kept === null) return `rebuild --no-promote on ${replica.name} failed`;
    let live = [...this.world.keys.entries()].filter(([, k]) => !k.revoked).map(([id]) => id);
    if (live.length === 0) {
      const issued = this.world.issueKey();
      await this.publish(issued.draw, 'none', 'plain');
      live = [issued.id];
    }
    const id = this.targeted.pick(live);
    const partition = this.keyPartition(id);
    const batch = await this.unreadableBatch('apiKeys', partition, false);
    if (batch === null)
      return `the unreadable batch on ${this.topics.apiKeys}[${partition}] was not reported`;
    const revocation = this.world.revokeKey(id);
    await this.publish(revocation, 'none', 'plain');
    const bulk: Draw = { events: [], poison: [], revoked: [] };
    for (let i = 0; i < 10; i += 1) {
      const draw = this.world.draw(40, false);
      bulk.events.push(...draw.events);
      bulk.revoked.push(...draw.revoked);
    }
    await this.publish(bulk, 'none', 'plain');
    const waitedMs = this.targeted.int(12_000, 20_000);
    await sleep(waitedMs);
    new ModelFiles(replica.dataDir).proposeNext(kept);
    const meetsMs = this.targeted.int(1500, 4000);
    await sleep(meetsMs);
    await Promise.all(this.replicas.map((r) => this.skipBatch(r, batch)));
    let issues = 0;
    const until = Date.now() + 8000;
    while (Date.now() < until) {
      const issued = this.world.issueKey();
      if (this.keyPartition(issued.id) === partition) continue;
      await this.publish(issued.draw, 'none', 'plain');
      issues += 1;
      await sleep(100);
    }
    await this.checkRevocations(revocation.revoked);
    const switched = await this.waitSwitched(replica);
    return `${id}'s revocation behind an unreadable batch on ${this.topics.apiKeys}[${partition}] with ${bulk.events.length} events after it; after ${waitedMs} ms a kept build of ${replica.name} proposed, skip-batch ${meetsMs} ms later on every replica, then ${issues} issues on the other keys partitions 100 ms apart; ${switched ? 'switched' : 'not switched within 60 s'}`;
  }

  /** `rebuild --no-promote` on a replica's directory: the kept file, or null when it failed. */
  private async keptBuild(replica: Replica): Promise<string | null> {
    const built = await replica.run(['rebuild', '--no-promote'], 180_000);
    const file = /into (\S+?); /.exec(built.stdout)?.[1];
    if (built.code !== 0 || file === undefined) {
      this.log(`rebuild --no-promote on ${replica.name}: exit ${built.code} ${built.stderr.slice(-400)}`);
      return null;
    }
    return file;
  }

  /** New orders published until some land on `partition` of the orders topic (three tries). */
  private async ordersOnPartition(partition: number): Promise<number[]> {
    const orders: number[] = [];
    for (let tries = 0; tries < 3; tries += 1) {
      const landed = await this.ordersOnSomePartition(this.targeted.int(6, 12));
      orders.push(...landed.orders);
      if ((landed.counts[partition] ?? 0) > 0) break;
    }
    return orders;
  }

  /** Publishes new orders; the partition of the orders topic most of them landed on, and their ids. */
  private async ordersOnSomePartition(
    count: number,
  ): Promise<{ partition: number; orders: number[]; counts: number[] }> {
    const draw = this.world.newOrders(count);
    await this.publish(draw, 'none', 'plain');
    const orders = draw.events.flatMap((e) => (e.type === 'order.created' ? [e.data.order_id] : []));
    const counts = [0, 1, 2].map((p) => orders.filter((id) => this.partitionOf(String(id)) === p).length);
    const partition = counts.indexOf(Math.max(...counts));
    return { partition, orders, counts };
  }

  private partitionOf(key: string): number {
    return this.partitioner({
      topic: '',
      partitionMetadata: [0, 1, 2].map((partitionId) => ({
        partitionId,
        leader: 0,
        partitionErrorCode: 0,
        replicas: [0],
        isr: [0],
      })),
      message: { key, value: null },
    });
  }

  private keyPartition(keyId: string): number {
    return this.partitionOf(keyId);
  }

  /** Waits (30 s at most) until the replica lists every one of `orders` (each in its organization's page). */
  private async waitListed(replica: Replica, orders: readonly number[]): Promise<void> {
    const deadline = Date.now() + 30_000;
    const pending = new Set(orders.filter((id) => this.oracle.orgOfOrder(id) !== null));
    while (pending.size > 0 && Date.now() < deadline) {
      for (const org of organizations) {
        const answer = await get(replica.apiUrl('/orders?limit=200'), this.world.permanentKey(org));
        const rows = (answer?.body as { data?: { id: number }[] } | undefined)?.data ?? [];
        for (const row of rows) pending.delete(row.id);
      }
      if (pending.size > 0) await sleep(250);
    }
  }

  /** Waits (60 s at most) until the replica has switched to its proposal (NEXT gone) and is ready. */
  private async waitSwitched(replica: Replica): Promise<boolean> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (!existsSync(join(replica.dataDir, 'NEXT')) && (await this.prober.ready(replica))) return true;
      await sleep(250);
    }
    return false;
  }

  /**
   * Publishes an unreadable batch to a partition, waits until every replica's /readyz names it,
   * and (unless told not to) has the operator skip it on every replica. Null when one never names it.
   */
  private async unreadableBatch(
    role: ReturnType<typeof topicRoleOf>,
    partition: number,
    skip = true,
  ): Promise<SkippedBatch | null> {
    const topic = this.topics[role];
    const offsetOfBatch = await this.endOffset(topic, partition);
    await kcatLine(this.broker.brokers, topic, partition, unreadableLine);
    this.skipped += 1;
    this.count('unreadable batch skipped by the operator');
    let batch: SkippedBatch | null = null;
    for (const replica of this.replicas) {
      const reported = await this.reportedBatch(replica, topic, partition, offsetOfBatch);
      if (reported === null) {
        this.violation(
          replica,
          'liveness',
          `${topic}[${partition}]'s unreadable batch was not reported in /readyz within 30 s`,
        );
        return null;
      }
      batch ??= { topic, partition, ...reported };
    }
    if (batch === null) return null;
    this.skippedBatches.push(batch);
    if (skip) for (const replica of this.replicas) await this.skipBatch(replica, batch);
    return batch;
  }

  /**
   * Under 1 MB of LZ4 (framed as Java's producer does, no content size) inflating to 200 MB, on a
   * random partition: every replica must refuse it within BATCH_MAX_INFLATED_BYTES's budget, its
   * resident memory sampled every 50 ms while it reports the batch (each retry inflates it again);
   * then skip-batch on each. A codec that inflates the frame before it compares raises it by
   * hundreds of MB.
   */
  private async lz4InflatingBatch(): Promise<string> {
    const role = this.targeted.pick(rolesOfStore('orders'));
    const partition = this.targeted.int(0, 2);
    const topic = this.topics[role];
    const offsetOfBatch = await this.endOffset(topic, partition);
    // A replica still starting, catching up or rebuilding grows by itself: its baseline is taken
    // once it is ready (30 s at most), or the rise of its start would be blamed on the batch.
    const unready = new Set<Replica>();
    for (const replica of this.replicas) {
      const until = Date.now() + 30_000;
      while (!(await this.prober.ready(replica)))
        if (Date.now() < until) await sleep(250);
        else {
          // still growing by itself: its rise is not the batch's, so it is not judged
          unready.add(replica);
          break;
        }
    }
    const baseline = new Map(this.replicas.map((r) => [r, residentBytes(r.pid)]));
    const peak = new Map(baseline);
    const sampler = setInterval(() => {
      for (const r of this.replicas) peak.set(r, Math.max(peak.get(r) ?? 0, residentBytes(r.pid)));
    }, 50);
    try {
      // kafkajs with the service's LZ4 codec (lz4-napi's frames state no content size, as Java's
      // producer's do not): kcat reads a line of 200 MB too slowly
      await this.producer.send({
        topic,
        acks: -1,
        compression: compressionOf.lz4,
        messages: [{ partition, key: 'x', value: `{"padding":"${' '.repeat(200 * 1024 * 1024)}"}` }],
      });
      this.skipped += 1;
      const rises: string[] = [];
      for (const replica of this.replicas) {
        const reported = await this.reportedBatch(replica, topic, partition, offsetOfBatch);
        // a few retries of the batch, each inflating it again, before the memory is judged
        await sleep(2000);
        const rise = (peak.get(replica) ?? 0) - (baseline.get(replica) ?? 0);
        rises.push(
          `${replica.name} +${Math.round(rise / 1e6)} MB${unready.has(replica) ? ' (not judged: not ready when it began)' : ''}`,
        );
        if (rise > lz4RiseBoundBytes && !unready.has(replica))
          this.violation(
            replica,
            'every input within its bound',
            `resident memory rose by ${Math.round(rise / 1e6)} MB while an LZ4 batch inflating to 200 MB was refused (BATCH_MAX_INFLATED_BYTES is 4 MiB)`,
          );
        if (reported === null) {
          this.violation(
            replica,
            'liveness',
            `${topic}[${partition}]'s LZ4 batch was not reported in /readyz within 30 s`,
          );
          continue;
        }
        const batch = { topic, partition, ...reported };
        if (!this.skippedBatches.some((b) => b.topic === topic && b.from === batch.from))
          this.skippedBatches.push(batch);
        await this.skipBatch(replica, batch);
      }
      return `LZ4 batch inflating to 200 MB on ${topic}[${partition}]: resident memory ${rises.join(', ')} while refused; skipped by the operator on every replica`;
    } finally {
      clearInterval(sampler);
    }
  }

  /** A rebuild on the replica's directory must finish (past every skipped batch) within 120 s. */
  private async rebuildPassesSkips(replica: Replica, batches: readonly SkippedBatch[]): Promise<void> {
    const built = await replica.run(['rebuild', '--no-promote'], 120_000);
    this.checks += 1;
    const file = /into (\S+?); /.exec(built.stdout)?.[1];
    if (file !== undefined) rmSync(file, { force: true });
    if (built.code === 0) return;
    // refused for records the campaign deleted from the start of a partition: as it must be
    if (built.code !== null && this.history.refusedForLostHistory(built.stderr + built.stdout)) return;
    this.violation(
      replica,
      'skips recorded',
      built.code === null
        ? `a rebuild after skip-batch of ${batches.map((b) => `${b.topic}[${b.partition}] through ${b.through}`).join(', ')} did not finish within 120 s: it waits at a batch the operator skipped, missing from the record`
        : `a rebuild after the skips failed with exit code ${built.code}: ${built.stderr.slice(-400)}`,
    );
  }

  /** The replica's pages, articles and keys equal the oracle's within 60 s, or each difference is a violation. */
  private async converged(replica: Replica, invariant: string): Promise<void> {
    const deadline = Date.now() + convergenceMs;
    let differences = await this.prober.differences(replica);
    while (differences.length > 0 && Date.now() < deadline) {
      await sleep(500);
      differences = await this.prober.differences(replica);
    }
    this.checks += 1;
    for (const d of differences) this.violation(replica, invariant, d);
  }

  /** The operator's `skip-batch` for one batch on one replica; a failed run is a violation. */
  private async skipBatch(replica: Replica, batch: SkippedBatch): Promise<boolean> {
    const args = [
      'skip-batch',
      '--topic',
      batch.topic,
      '--partition',
      String(batch.partition),
      '--from',
      String(batch.from),
      '--through',
      String(batch.through),
      '--reason',
      'campaign: an unreadable batch',
    ];
    const run = await replica.run(args, 180_000);
    this.checks += 1;
    if (run.code === 0) return true;
    const said =
      run.code === null
        ? 'it did not finish within 180 s'
        : (run.stderr
            .trim()
            .split('\n')
            .filter((line) => !line.startsWith('{'))
            .at(-1) ?? run.stderr.slice(-400));
    this.violation(
      replica,
      'skip-batch succeeds',
      `${args.slice(0, 7).join(' ')} exited ${run.code ?? '(killed)'}: ${said.slice(0, 400)}`,
    );
    return false;
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
  private async reportedBatch(
    replica: Replica,
    topic: string,
    partition: number,
    atLeast: number,
  ): Promise<{ from: number; through: number } | null> {
    const deadline = Date.now() + 30_000;
    const pattern = new RegExp(
      `skip-batch --topic ${topic.replace(/[.]/g, '\\.')} --partition ${partition} --from (\\d+) --through (\\d+)`,
    );
    while (Date.now() < deadline) {
      const answer = await get(replica.adminUrl('/readyz'), undefined, 2000);
      const match = pattern.exec(JSON.stringify(answer?.body ?? ''));
      if (match !== null && Number(match[2]) >= atLeast)
        return { from: Number(match[1]), through: Number(match[2]) };
      await sleep(250);
    }
    return null;
  }

  private violation(replica: Replica, invariant: string, detail: string): void {
    this.invariants.violate(replica.name, invariant, detail);
  }

  /** Publishes a draw of at most one event per topic, plainly: each event's record as acknowledged. */
  private async publishAcked(draw: Draw): Promise<AckedRecord[]> {
    const topics = draw.events.map((event) => this.topics[topicRoleOf(event)]);
    if (new Set(topics).size !== topics.length) throw new Error('publishAcked: one event per topic');
    const acked = await this.publish(draw, 'none', 'plain');
    return topics.flatMap((topic) => {
      const record = acked.find((m) => m.topicName === topic);
      return record?.baseOffset === undefined
        ? []
        : [{ topic, partition: record.partition, offset: Number(record.baseOffset) }];
    });
  }

  /** The end offset of every partition of the orders model's topics; null when the broker did not say. */
  private async modelEndOffsets(): Promise<Map<string, number[]> | null> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const ends = new Map<string, number[]>();
      for (const role of rolesOfStore('orders')) {
        const topic = this.topics[role];
        const offsets = await admin.fetchTopicOffsets(topic);
        const list = Array.from({ length: offsets.length }, () => 0);
        for (const o of offsets) list[o.partition] = Number(o.high);
        ends.set(topic, list);
      }
      return ends;
    } catch {
      return null;
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  /** Publishes a draw; in plain mode, what the broker acknowledged (one entry per topic and partition). */
  private async publish(
    draw: Draw,
    codec: CodecName,
    mode: 'plain' | 'commit' | 'abort',
  ): Promise<RecordMetadata[]> {
    let acked: RecordMetadata[] = [];
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
      acked = await this.producer.sendBatch({
        acks: -1,
        compression,
        topicMessages: topicMessages(draw.events, true),
      });
    } else {
      this.txCount += 1;
      const transactionalId = `campaign-${this.options.seed}-${this.txCount}`;
      const aborted = mode === 'abort' ? topicMessages(this.world.aborted(), false) : null;
      const committed = topicMessages(draw.events, true);
      for (let attempt = 1; ; attempt++) {
        try {
          await this.transaction(transactionalId, compression, aborted, committed);
          break;
        } catch (error) {
          // A transaction whose end the coordinator refused (a broker just thawed or restarted:
          // "the coordinator is loading") cannot be ended again by kafkajs. A new producer of the
          // same transactional id fences it, so the coordinator aborts it; the events are sent
          // again in a new transaction. Had the first one been committed after all, the service
          // would read each event twice, which the projection tolerates.
          const retriable = (error as { retriable?: unknown }).retriable === true;
          if (!retriable || attempt === 5) throw error;
          this.log(
            `[campaign ${this.options.seed}]    transaction ${transactionalId} not ended (${(error as Error).message}); attempt ${attempt + 1}`,
          );
          await sleep(500 * attempt);
        }
      }
    }
    for (const event of draw.events) this.oracle.apply(event);
    for (const id of draw.revoked) this.revokedAcked.add(id);
    this.events += draw.events.length;
    this.poison += draw.poison.length;
    return acked;
  }

  /** One transaction of the campaign's transactional producer: optionally an aborted one first. */
  private async transaction(
    transactionalId: string,
    compression: CompressionTypes,
    aborted: TopicMessages[] | null,
    committed: TopicMessages[],
  ): Promise<void> {
    const producer = this.kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      if (aborted !== null) {
        const tx = await producer.transaction();
        await tx.sendBatch({ compression, topicMessages: aborted });
        await tx.abort();
      }
      const tx = await producer.transaction();
      await tx.sendBatch({ compression, topicMessages: committed });
      await tx.commit();
    } finally {
      await producer.disconnect();
    }
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

  private async waitReady(when: string, replicas: readonly Replica[] = this.replicas): Promise<void> {
    const deadline = Date.now() + livenessMs;
    for (const replica of replicas) {
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
    // a replica left on an older projection version while the broker was away gets its remedy
    await this.history.settlePending();
    await this.waitReady('the last fault');
    for (const replica of this.replicas) {
      await this.converged(replica, 'nothing lost, nothing doubled');
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

/** The counts of the caller's three features: walks, waits and built positions. */
function callerFeatures(report: CampaignReport): string {
  const { walks: k, waits: w, ownWrites: o } = report;
  return [
    `cursor walks ${k.walks} (${k.complete} complete, ${k.unsettled} begun behind the log's end): ${k.pages} pages, ${k.inserted} orders created meanwhile, ${k.heldSeen} orders held to be seen, ${k.notReached} not reached`,
    `waits ${w.asked}: ${w.changed} 200, ${w.notModified} 304 (${w.held} held; ${w.samePosition} 304s compared at their own position; ${w.changeCovered} past a change published meanwhile; ${w.wakeChecked} 200s watched for a prompt wake), ${w.notReached} not reached`,
    `built positions: ${o.published} orders published, ${o.held} answers held to them, ${o.notReached} not reached, ${o.skipped} replicas skipped`,
  ].join('; ');
}

/** A targeted operation named in `--scenario` (its name in the output, or its name in the code). */
function scenarioOperation(name: string): TargetedOperation {
  for (const [op, shown] of Object.entries(targetedOperations))
    if (name === shown || name === op) return op as TargetedOperation;
  throw new Error(
    `unknown operation ${name} in --scenario: one of ${Object.values(targetedOperations).join(', ')}`,
  );
}

/** One line published by kcat to a partition, zstd-compressed, without blocking the probes meanwhile. */
function kcatLine(brokers: string, topic: string, partition: number, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'kcat',
      [
        '-P',
        '-b',
        brokers,
        '-t',
        topic,
        '-p',
        String(partition),
        '-z',
        'zstd',
        '-K',
        '\t',
        '-X',
        'message.max.bytes=1000000000',
      ],
      { stdio: ['pipe', 'ignore', 'pipe'] },
    );
    let said = '';
    child.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kcat exited ${code}: ${said}`))));
    child.stdin.end(`${line}\n`);
  });
}

/** The dead letters of a replica: its orders model's and its keys store's. */
function deadLettersOf(dataDir: string): number {
  const file = new ModelFiles(dataDir).currentFile();
  if (file === null || !existsSync(file)) return -1;
  return [file, keysFile(dataDir)].reduce((sum, each) => {
    if (!existsSync(each)) return sum;
    const db = new Database(each, { readonly: true, fileMustExist: true });
    try {
      return sum + (db.prepare('SELECT count(*) AS n FROM dead_letters').get() as { n: number }).n;
    } finally {
      db.close();
    }
  }, 0);
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
    `seed ${report.seed}${report.httpWorkers > 1 ? ` (HTTP_WORKERS=${report.httpWorkers})` : ''}: ${report.steps.length} steps in ${report.minutes.toFixed(1)} min, ${report.events} events and ${report.poison} poison messages published; faults: ${faults || 'none'}; ${report.checks} checks, ${report.revokedProbes} revoked-key probes through the request threads' own connections; slowest revocation ${report.slowestRevocationMs} ms; caller with its position: ${report.caller.answered} answers, ${report.caller.notReached} not reached (503); ${callerFeatures(report)}; ${report.violations.length} violations`,
  ];
  if (report.violations.length > 0) {
    const options = [
      `--seed ${report.seed}`,
      `--steps ${report.steps.length}`,
      `--http-workers ${report.httpWorkers}`,
      ...(report.targeted === undefined ? [] : [`--targeted ${report.targeted}`]),
      ...(report.scenario.length === 0 ? [] : [`--scenario ${report.scenario.join(',')}`]),
    ];
    lines.push(`replay: npm run campaign -- ${options.join(' ')}`);
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
      targeted: { type: 'string', default: '0.2' },
      scenario: { type: 'string', default: '' },
    },
  });
  const targeted = Number(values.targeted);
  if (!(targeted >= 0 && targeted <= 1)) throw new Error('--targeted must be a chance between 0 and 1');
  const scenario = values.scenario === '' ? [] : values.scenario.split(',');
  for (const name of scenario) scenarioOperation(name);
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
  const report = await runCampaign({ ...numbers, targeted, scenario, log: (line) => console.log(line) });
  console.log(formatReport(report));
  process.exitCode = report.violations.length > 0 ? 1 : 0;
}

if (isEntryPoint(import.meta.url)) await main();
