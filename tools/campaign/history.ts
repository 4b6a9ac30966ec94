/**
 * The campaign's operations on a log that has lost its first records, as retention does: records
 * deleted from the start of a partition (`deleteTopicRecords`) below what every model of every
 * replica has applied, then a rebuild, a projection-version change, a catch-up, a new empty replica,
 * or the keys store's successor. No build missing history may be served: a refused build must name
 * the gap in `/readyz` (or in the command's output), and the replica it leaves unready is given the
 * documented remedy, a snapshot of a replica that holds the whole history, never an acceptance of the
 * loss, which would serve fewer orders than the oracle says.
 *
 * The keys topic is shortened only below every dead letter and skipped batch of its partition. The
 * keys store of a new version is then seeded from its predecessor and must keep every key valid and
 * apply every revocation since. Where a keys store is refused all the same, the upstream sends again
 * the issue of every valid key and every revocation (redeliveries, which the contract allows) and the
 * operator accepts the loss on every replica, and on every new replica before its start. Without the
 * revocations, a revocation lost below the log start and an older issue redelivered above it would
 * bring the key back.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Kafka } from 'kafkajs';
import type { TopicRole } from '../../schemas/streams.js';
import { KEYS_STORE_VERSION } from '../../projections/keys/schema.js';
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { keysFile } from '../../src/keys/keys-files.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { markPreviousProjectionVersion } from '../model-progress.js';
import type { Replica } from './cluster.js';
import { get } from './probe.js';
import type { Random } from './random.js';
import { organizations, type Draw, type World } from './world.js';

/** What a refused build says of a partition its log no longer holds (`src/kafka/history.ts`). */
const gapPattern = /(\S+) partition (\d+): the log starts at offset (\d+)/g;
const refusedWithinMs = 30_000;
/** At most this many events are published to put a replica far enough behind for a catch-up by replay. */
const catchUpEventsBound = 3000;

export interface SkippedBatchRef {
  topic: string;
  partition: number;
  from: number;
  through: number;
}

/** What the operations need of the campaign. */
export interface HistoryHost {
  kafka: Kafka;
  replicas: readonly Replica[];
  topics: Record<TopicRole, string>;
  world: World;
  random: Random;
  dir: string;
  brokerUp: () => boolean;
  log: (line: string) => void;
  count: (fault: string) => void;
  violation: (replica: Replica, invariant: string, detail: string) => void;
  /** the replica's data directory starts anew: a new replica to the invariants */
  forget: (replica: Replica) => void;
  publish: (draw: Draw) => Promise<void>;
  lookAtAll: () => Promise<void>;
  ready: (replica: Replica) => Promise<boolean>;
  waitReady: (when: string, replicas: readonly Replica[]) => Promise<void>;
  converged: (replica: Replica, invariant: string) => Promise<void>;
  skipBatch: (replica: Replica, batch: SkippedBatchRef) => Promise<boolean>;
  skippedBatches: () => readonly SkippedBatchRef[];
  partitionOf: (key: string) => number;
}

interface Loss {
  topic: string;
  partition: number;
  /** the partition's log starts here since the deletion */
  below: number;
}

export const historyOperations = {
  deleteThenRebuild: 'delete-then-rebuild',
  deleteThenVersionChange: 'delete-then-version-change',
  deleteThenCatchUp: 'delete-then-catch-up',
  deleteThenNewReplica: 'delete-then-new-replica',
  deleteKeysThenVersionChange: 'delete-keys-then-version-change',
} as const;
export type HistoryOperation = keyof typeof historyOperations;

const key = (topic: string, partition: number): string => `${topic}:${partition}`;

export class HistoryOps {
  /** partitions whose first records the campaign deleted, with their log start now */
  private readonly lost = new Map<string, Loss>();
  /** keys partitions' losses the operator accepted: every new replica is told them too */
  private readonly acceptedKeys: Loss[] = [];
  /** replicas left serving an older projection version (the rebuild refused) while the broker was away */
  private readonly pending = new Set<Replica>();
  private snapshots = 0;

  constructor(private readonly host: HistoryHost) {}

  /** Whether an orders-model topic has lost records: a replica built from nothing would miss them. */
  ordersShortened(): boolean {
    return [...this.lost.values()].some((loss) => loss.topic !== this.host.topics.apiKeys);
  }

  /** The weights of the operations in the current state. */
  weights(up: boolean, all: boolean): Record<HistoryOperation, number> {
    const possible = up && all && this.host.replicas.every((r) => this.currentVersion(r));
    const keysPossible =
      possible && this.host.replicas.every((r) => !existsSync(keysFile(r.dataDir, KEYS_STORE_VERSION - 1)));
    return {
      deleteThenRebuild: possible ? 1 : 0,
      deleteThenVersionChange: possible ? 1 : 0,
      deleteThenCatchUp: possible ? 0.7 : 0,
      deleteThenNewReplica: possible ? 1 : 0,
      deleteKeysThenVersionChange: keysPossible ? 0.7 : 0,
    };
  }

  async perform(op: HistoryOperation): Promise<string> {
    switch (op) {
      case 'deleteThenRebuild':
        return this.deleteThenRebuild();
      case 'deleteThenVersionChange':
        return this.deleteThenVersionChange();
      case 'deleteThenCatchUp':
        return this.deleteThenCatchUp();
      case 'deleteThenNewReplica':
        return this.deleteThenNewReplica();
      case 'deleteKeysThenVersionChange':
        return this.deleteKeysThenVersionChange();
    }
  }

  /**
   * Whether a command's output is a refusal for history the campaign deleted: it names a partition
   * the campaign shortened at the offset its log starts at now. Any other failure stays a failure.
   */
  refusedForLostHistory(output: string): boolean {
    const named = [...output.matchAll(gapPattern)];
    return (
      named.length > 0 &&
      named.every((m) => this.lost.get(key(m[1] ?? '', Number(m[2])))?.below === Number(m[3]))
    );
  }

  /** Whether the replica's served model is of this code's projection version (its rebuild done). */
  currentVersion(replica: Replica): boolean {
    const file = new ModelFiles(replica.dataDir).currentFile();
    if (file === null || !existsSync(file)) return false;
    return (
      readOne(file, `SELECT value FROM projection_meta WHERE key = 'projection_version'`)?.['value'] ===
      String(PROJECTION_VERSION)
    );
  }

  /** A new replica is told the keys losses the operator accepted, as it is told the skipped batches. */
  async tellNewReplica(replica: Replica): Promise<void> {
    for (const loss of this.acceptedKeys) await this.accept(replica, loss);
  }

  /**
   * A replica just started with nothing to build from but the topics: on a shortened log it must
   * say why it is not ready, and it is then given a snapshot of a replica that holds the history.
   * Returns a description of what happened, or null when it did not name a gap (the log is whole,
   * or it became ready: the caller holds it to the oracle).
   */
  async settleNewReplica(replica: Replica, what: string): Promise<string | null> {
    if (!this.ordersShortened() || !this.host.brokerUp()) return null;
    const refusal = await this.refusal(replica, 'reasons');
    // ready, or unready without naming a gap: the caller holds it to liveness and the oracle
    if (refusal === null) return null;
    this.host.count('new replica refused for missing history');
    const restored = await this.restoreFrom(replica, `${what} refused (${refusal})`);
    return `${what} unready (${refusal}); ${restored}`;
  }

  /** Replicas left on an older projection version while the broker was away get their remedy now. */
  async settlePending(): Promise<void> {
    if (!this.host.brokerUp()) return;
    for (const replica of [...this.pending]) {
      // a replica stopped meanwhile keeps its remedy until it runs again
      if (!replica.running) continue;
      this.pending.delete(replica);
      await this.afterVersionChange(replica);
    }
  }

  /**
   * After a projection-version change on a shortened log: the replica keeps serving its older model
   * and names the gap among its warnings; it is given a snapshot of a replica of this version.
   */
  async afterVersionChange(replica: Replica): Promise<string> {
    if (!this.ordersShortened()) return 'the log is whole';
    if (!this.host.brokerUp()) {
      this.pending.add(replica);
      return 'the broker is away: its remedy waits';
    }
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (this.currentVersion(replica) && (await this.host.ready(replica))) {
        this.missingHistoryServed(replica, 'the rebuild of a projection-version change was switched to');
        await this.host.lookAtAll();
        await this.host.converged(replica, 'nothing lost (version change)');
        return 'its rebuild was switched to';
      }
      const gap = await this.namedGap(replica, 'warnings');
      if (gap !== null) {
        this.host.count('version change refused for missing history');
        // The older model answers read-only meanwhile (nothing projects into it): held to never
        // older by the looks, not to the oracle.
        await this.host.lookAtAll();
        const ready = (await this.host.ready(replica)) ? 'ready' : 'unready';
        return `its rebuild refused (${gap}; ${ready} on the older model); ${await this.restoreFrom(replica, 'the version change refused')}`;
      }
      await sleep(250);
    }
    this.host.violation(
      replica,
      'a refused build names the gap',
      `60 s after a projection-version change on a shortened log, the rebuild has neither been switched to nor has /readyz named the gap`,
    );
    return 'neither switched nor refused within 60 s';
  }

  private async deleteThenRebuild(): Promise<string> {
    const deleted = await this.deleteOrdersRecords();
    if (deleted === null) return 'no partition to shorten';
    await this.newOrders();
    const replica = this.host.random.pick(this.host.replicas);
    const built = await replica.run(['rebuild'], 180_000);
    let outcome: string;
    if (built.code === 0) {
      this.missingHistoryServed(replica, 'rebuild exited 0');
      const switched = await this.switched(replica);
      await this.host.lookAtAll();
      outcome = `rebuild exited 0; ${switched ? 'switched to' : 'not switched to within 60 s'}`;
    } else if (this.refusedForLostHistory(built.stderr + built.stdout)) {
      this.host.count('rebuild refused for missing history');
      outcome = 'rebuild refused, naming the gap';
    } else {
      this.host.log(`rebuild on ${replica.name}: exit ${built.code} ${built.stderr.slice(-400)}`);
      outcome = `rebuild failed (exit ${built.code})`;
    }
    await this.host.converged(replica, 'nothing lost (rebuild)');
    return `${deleted}; new orders; ${outcome} on ${replica.name}`;
  }

  private async deleteThenVersionChange(): Promise<string> {
    const deleted = await this.deleteOrdersRecords();
    if (deleted === null) return 'no partition to shorten';
    await this.newOrders();
    const replica = this.host.random.pick(this.host.replicas.filter((r) => r.running));
    await replica.kill('SIGTERM');
    const file = new ModelFiles(replica.dataDir).currentFile();
    if (file !== null) markPreviousProjectionVersion(file);
    replica.start();
    this.host.count('projection version change');
    return `${deleted}; new orders; projection version change on ${replica.name}: ${await this.afterVersionChange(replica)}`;
  }

  /**
   * A replica killed while many events come, then started: far behind, it would catch up by replay,
   * which the shortened log cannot give; it must catch up batch by batch and lose nothing.
   */
  private async deleteThenCatchUp(): Promise<string> {
    const deleted = await this.deleteOrdersRecords();
    if (deleted === null) return 'no partition to shorten';
    const replica = this.host.random.pick(this.host.replicas.filter((r) => r.running));
    await replica.kill('SIGKILL');
    this.host.count('SIGKILL');
    const wanted = Math.min(catchUpEventsBound, Math.max(150, Math.ceil(0.4 * (await this.logSize()))));
    let published = 0;
    while (published < wanted) {
      const draw = this.host.world.draw(40, false);
      await this.host.publish(draw);
      published += draw.events.length;
    }
    replica.start();
    await this.host.waitReady(`${replica.name} started ${published} events behind on a shortened log`, [
      replica,
    ]);
    await this.host.converged(replica, 'nothing lost (catch-up)');
    return `${deleted}; SIGKILL ${replica.name}, ${published} events published, start: ready and compared with the oracle`;
  }

  private async deleteThenNewReplica(): Promise<string> {
    const deleted = await this.deleteOrdersRecords();
    if (deleted === null) return 'no partition to shorten';
    await this.newOrders();
    const replica = this.host.random.pick(this.host.replicas);
    await replica.wipe();
    this.host.forget(replica);
    for (const batch of [...this.host.skippedBatches()].reverse()) await this.host.skipBatch(replica, batch);
    await this.tellNewReplica(replica);
    replica.start();
    this.host.count('new empty replica');
    const refusal = await this.refusal(replica, 'reasons');
    if (refusal === null) {
      if (await this.host.ready(replica))
        this.missingHistoryServed(replica, 'a new empty replica became ready');
      await this.host.waitReady(`${replica.name} started empty`, [replica]);
      await this.host.lookAtAll();
      await this.host.converged(replica, 'nothing lost (new replica)');
      return `${deleted}; a new empty ${replica.name}: ready, compared with the oracle`;
    }
    this.host.count('new replica refused for missing history');
    return `${deleted}; a new empty ${replica.name} unready (${refusal}); ${await this.restoreFrom(replica, 'the new replica refused')}`;
  }

  /**
   * Records deleted from the start of a keys partition that holds a permanent key's issue, then
   * the keys store of a new projection version (its predecessor answers until it has been reached):
   * the key must stay valid; the replica says why it is not ready, until the upstream sends the
   * valid keys' issues again and the operator accepts the loss.
   */
  private async deleteKeysThenVersionChange(): Promise<string> {
    const org = this.host.random.pick(organizations);
    const topic = this.host.topics.apiKeys;
    const partition = this.host.partitionOf(`perm-${org}`);
    const room = this.room(topic, partition, true);
    if (room < 1) return `no room below the first dead letter of ${topic}[${partition}]`;
    const below = this.host.random.int(Math.ceil(room / 2), room);
    await this.deleteRecords(topic, partition, below);
    const replica = this.host.random.pick(this.host.replicas.filter((r) => r.running));
    await replica.kill('SIGTERM');
    makePredecessor(replica.dataDir);
    replica.start();
    this.host.count('keys store of a new version');
    const deadline = Date.now() + 30_000;
    let gap: string | null = null;
    // A seeded store retires its predecessor once it has read on from it; the gap's words stay in
    // /readyz until that first fetch, so they count only once the wait for the retirement is over.
    while (Date.now() < deadline && existsSync(keysFile(replica.dataDir, KEYS_STORE_VERSION - 1))) {
      await this.host.lookAtAll();
      await sleep(250);
    }
    if (existsSync(keysFile(replica.dataDir, KEYS_STORE_VERSION - 1)))
      gap = await this.namedGap(replica, 'reasons');
    await this.host.lookAtAll();
    if (gap === null) {
      // seeded from its predecessor (the service's remedy): nothing for the operator to do, and
      // every issue and revocation since must be applied all the same
      this.host.count('keys store seeded from its predecessor');
      await this.host.waitReady('the keys store of a new version replaced its predecessor', [replica]);
      await this.host.lookAtAll();
      await this.host.converged(replica, 'nothing lost (keys store of a new version)');
      return `${topic}[${partition}] (perm-${org}'s issue among them) deleted below ${below}; the keys store of a new version on ${replica.name} replaced its predecessor`;
    }
    this.host.count('keys store refused for missing history');
    const outcome = `the successor store refused (${gap}), the predecessor answering`;
    // The remedy: the upstream sends again every key's issue and every revocation (redeliveries):
    // a revocation lost with the deleted records would otherwise let a redelivered issue after it
    // bring a revoked key back in a store built from the shortened log.
    const again = [
      ...organizations.map((o) => `perm-${o}`),
      ...[...this.host.world.keys.entries()].filter(([, k]) => !k.revoked).map(([id]) => id),
    ].flatMap((id) => {
      const issue = this.host.world.issues.get(id);
      return issue === undefined ? [] : [issue];
    });
    again.push(...this.host.world.revocations.values());
    await this.host.publish({ events: again, poison: [], revoked: [] });
    const loss = { topic, partition, below };
    this.acceptedKeys.push(loss);
    for (const each of this.host.replicas) await this.accept(each, loss);
    await this.host.waitReady(`the loss on ${topic}[${partition}] was accepted`, [replica]);
    await this.host.lookAtAll();
    await this.host.converged(replica, 'nothing lost (keys store of a new version)');
    return `${topic}[${partition}] (perm-${org}'s issue among them) deleted below ${below}; the keys store of a new version on ${replica.name}: ${outcome}; ${again.length} keys' issues and revocations sent again, the loss accepted on every replica`;
  }

  /**
   * Deletes the first records of a random partition of an orders-model topic, below an offset every
   * model of every replica has applied. A description, or null when none has applied two records.
   */
  private async deleteOrdersRecords(): Promise<string | null> {
    const roles = ['orders', 'orders', 'orders', 'orderStatus', 'articles'] as const;
    const topic = this.host.topics[this.host.random.pick(roles)];
    const partition = this.host.random.int(0, 2);
    // events published until every model has applied some of the partition (four rounds at most)
    let room = this.room(topic, partition, false);
    for (let round = 0; round < 4 && room < 2; round += 1) {
      await this.host.publish(this.host.world.draw(40, false));
      const deadline = Date.now() + 8000;
      while ((room = this.room(topic, partition, false)) < 2 && Date.now() < deadline) await sleep(250);
    }
    if (room < 2) return null;
    const below = this.host.random.int(Math.ceil(room / 2), room);
    await this.deleteRecords(topic, partition, below);
    return `${topic}[${partition}] deleted below offset ${below} (every model had applied ${room})`;
  }

  /** A build from the start of a log the campaign shortened (with no acceptance) served or switched to. */
  private missingHistoryServed(replica: Replica, what: string): void {
    const lost = [...this.lost.values()].filter(
      (loss) => loss.topic !== this.host.topics.apiKeys && !this.acceptedKeys.includes(loss),
    );
    if (lost.length === 0) return;
    this.host.violation(
      replica,
      'no build missing history is served',
      `${what}, though the log of ${lost.map((l) => `${l.topic}[${l.partition}]`).join(', ')} no longer starts at offset 0 (records deleted below what every model had applied)`,
    );
  }

  private async deleteRecords(topic: string, partition: number, below: number): Promise<void> {
    const admin = this.host.kafka.admin();
    await admin.connect();
    try {
      await admin.fetchTopicMetadata({ topics: [topic] });
      await admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(below) }] });
    } finally {
      await admin.disconnect();
    }
    const before = this.lost.get(key(topic, partition))?.below ?? 0;
    this.lost.set(key(topic, partition), { topic, partition, below: Math.max(before, below) });
    this.host.count('records deleted from the start of a partition');
  }

  /**
   * The highest offset below which every model of every replica has applied the partition (0 when
   * one has not read it); for the keys topic, no higher than its first dead letter or skipped batch.
   */
  private room(topic: string, partition: number, keys: boolean): number {
    let room = Number.MAX_SAFE_INTEGER;
    for (const replica of this.host.replicas) {
      const files = new ModelFiles(replica.dataDir);
      const models = keys ? [keysFile(replica.dataDir)] : [files.currentFile(), files.nextFile()];
      for (const file of models) {
        if (file === null) continue;
        if (!existsSync(file)) return 0;
        const position = readOne(
          file,
          'SELECT next_offset FROM consumer_offsets WHERE topic = ? AND partition = ?',
          topic,
          partition,
        );
        room = Math.min(room, Number(position?.['next_offset'] ?? 0));
        if (keys) {
          const first = readOne(
            file,
            'SELECT min("offset") AS o FROM dead_letters WHERE topic = ? AND partition = ?',
            topic,
            partition,
          );
          if (typeof first?.['o'] === 'number') room = Math.min(room, first['o']);
        }
      }
    }
    if (keys)
      for (const batch of this.host.skippedBatches())
        if (batch.topic === topic && batch.partition === partition) room = Math.min(room, batch.from);
    return room === Number.MAX_SAFE_INTEGER ? 0 : room;
  }

  private async newOrders(): Promise<void> {
    await this.host.publish(this.host.world.newOrders(this.host.random.int(2, 6)));
  }

  /** Messages the topics hold now. */
  private async logSize(): Promise<number> {
    const admin = this.host.kafka.admin();
    await admin.connect();
    try {
      let size = 0;
      for (const topic of Object.values(this.host.topics))
        for (const o of await admin.fetchTopicOffsets(topic)) size += Number(o.high) - Number(o.low);
      return size;
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * Waits until the replica is unready and `/readyz` names a gap of a shortened partition in its
   * reasons (or warnings): that gap, or null if it became ready instead or named none in 30 s.
   */
  private async refusal(replica: Replica, where: 'reasons' | 'warnings'): Promise<string | null> {
    const deadline = Date.now() + refusedWithinMs;
    while (Date.now() < deadline) {
      const answer = await get(replica.adminUrl('/readyz'), undefined, 2000);
      if (answer?.status === 200) return null;
      const gap = gapIn(answer?.body, where, this);
      if (gap !== null) return gap;
      await sleep(250);
    }
    return null;
  }

  private async namedGap(replica: Replica, where: 'reasons' | 'warnings'): Promise<string | null> {
    const answer = await get(replica.adminUrl('/readyz'), undefined, 2000);
    return gapIn(answer?.body, where, this);
  }

  /**
   * The documented remedy for a replica refused for missing history: its directory emptied, a
   * snapshot of a replica of this projection version restored into it (the snapshot carries the
   * history the log has lost), the keys batches skipped and the keys losses accepted, started.
   */
  private async restoreFrom(target: Replica, why: string): Promise<string> {
    const source = this.host.replicas.find((r) => r !== target && this.currentVersion(r));
    if (source === undefined) {
      this.host.violation(
        target,
        'a remedy exists',
        `${why}, and no other replica holds a model of this version`,
      );
      return 'no replica to take a snapshot of';
    }
    this.snapshots += 1;
    const file = join(this.host.dir, `history-snapshot-${this.snapshots}.sqlite`);
    const taken = await source.run(['snapshot', '--to', file], 120_000);
    if (taken.code !== 0) {
      this.host.violation(
        source,
        'a remedy exists',
        `snapshot --to exited ${taken.code}: ${taken.stderr.slice(-300)}`,
      );
      return `the snapshot of ${source.name} failed`;
    }
    await target.wipe();
    this.host.forget(target);
    const restored = await target.run(['snapshot', '--restore', file], 120_000);
    rmSync(file, { force: true });
    if (restored.code !== 0)
      this.host.violation(
        target,
        'a remedy exists',
        `snapshot --restore exited ${restored.code}: ${restored.stderr.slice(-300)}`,
      );
    for (const batch of [...this.host.skippedBatches()].reverse())
      if (batch.topic === this.host.topics.apiKeys) await this.host.skipBatch(target, batch);
    await this.tellNewReplica(target);
    target.start();
    this.host.count('snapshot restored after a refused build');
    await this.host.waitReady(`${target.name} restored from a snapshot of ${source.name} (${why})`, [target]);
    await this.host.lookAtAll();
    await this.host.converged(target, 'nothing lost (restored after a refused build)');
    return `a snapshot of ${source.name} restored into ${target.name}, ready and compared with the oracle`;
  }

  private async accept(replica: Replica, loss: Loss): Promise<void> {
    const args = [
      'accept-history-loss',
      '--topic',
      loss.topic,
      '--partition',
      String(loss.partition),
      '--below',
      String(loss.below),
      '--reason',
      'campaign: the valid keys were issued again',
    ];
    const run = await replica.run(args, 60_000);
    if (run.code !== 0)
      this.host.violation(
        replica,
        'accept-history-loss succeeds',
        `exited ${run.code}: ${run.stderr.slice(-300)}`,
      );
  }

  private async switched(replica: Replica): Promise<boolean> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (!existsSync(join(replica.dataDir, 'NEXT')) && (await this.host.ready(replica))) return true;
      await sleep(250);
    }
    return false;
  }
}

/** The first gap of a partition the campaign shortened that `/readyz` names in `where`, or null. */
function gapIn(body: unknown, where: 'reasons' | 'warnings', ops: HistoryOps): string | null {
  const lines = (body as Record<string, unknown> | undefined)?.[where];
  if (!Array.isArray(lines)) return null;
  for (const line of lines) {
    if (typeof line !== 'string') continue;
    const match = /\S+ partition \d+: the log starts at offset \d+/.exec(line);
    if (match !== null && ops.refusedForLostHistory(match[0])) return match[0];
  }
  return null;
}

/** The keys store of `dataDir` turned into the predecessor of this version's, as after a keys store version change. */
function makePredecessor(dataDir: string): void {
  const store = keysFile(dataDir);
  const db = new Database(store, { fileMustExist: true });
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.prepare(`UPDATE projection_meta SET value = ? WHERE key = 'projection_version'`).run(
      String(KEYS_STORE_VERSION - 1),
    );
  } finally {
    db.close();
  }
  rmSync(`${store}-wal`, { force: true });
  rmSync(`${store}-shm`, { force: true });
  renameSync(store, keysFile(dataDir, KEYS_STORE_VERSION - 1));
}

function readOne(file: string, sql: string, ...params: unknown[]): Record<string, unknown> | undefined {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).get(...params) as Record<string, unknown> | undefined;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
