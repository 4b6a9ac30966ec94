import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { keysFile } from '../../src/keys/keys-store.js';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { decodeBatch } from '../../src/projector/decode.js';
import { MemoryKafka } from '../helpers/memory-kafka.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('keys-store');
let n = 0;
const dataDir = (): string => join(root, `data-${(n += 1)}`);
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

function started(f: LifecycleFixture): LifecycleFixture {
  running.push(f);
  f.lifecycle.start();
  return f;
}

const orgOf = (f: LifecycleFixture, org: number): number | null =>
  f.lifecycle.reads.orgOfKeyHash(sha256Hex(keyOf(org)));
const revokeKeyOf = (org: number, minutes: number): DomainEvent =>
  apiKeyRevoked(`test-api-key-of-org-${org}`, { occurred_at: at(minutes) });

/** A keys store of projection version 1 in `dir` that has read `events` at the offsets the fixture's broker gives them. */
function predecessorWith(dir: string, events: readonly DomainEvent[]): string {
  mkdirSync(dir, { recursive: true });
  const predecessor = keysFile(dir, 1);
  const stored = memoryReadModel(openReadModel(predecessor, { store: keysStoreSchema }));
  const partitions = new MemoryKafka([]);
  const offsets = new Map<number, number>();
  for (const event of events) {
    const key = `test-api-key-of-org-${event.type === 'api_key.issued' ? event.data.organization_id : 1}`;
    const partition = partitions.partitionOf(key);
    const offset = offsets.get(partition) ?? 0;
    offsets.set(partition, offset + 1);
    const message = {
      offset: String(offset),
      key: Buffer.from(key),
      value: Buffer.from(JSON.stringify(event)),
    };
    stored.writer.applyBatch(testTopics.apiKeys, partition, decodeBatch('apiKeys', [message]), offset + 1);
  }
  stored.db.prepare(`UPDATE projection_meta SET value = '1' WHERE key = 'projection_version'`).run();
  stored.db.close();
  return predecessor;
}

describe('the keys store', () => {
  it('keeps a revocation through a restart with the broker down and a switch to a proposal', async () => {
    const dir = dataDir();
    const first = started(lifecycleFixture(dir));
    first.publish([issueKeyOf(1, at(1)), issueKeyOf(2, at(1)), orderCreated({ order_id: 1 })]);
    await waitUntil('both keys are accepted', () => orgOf(first, 1) === 1 && orgOf(first, 2) === 2);
    first.publish([revokeKeyOf(1, 2)]);
    await waitUntil('the revocation counts', () => orgOf(first, 1) === null);
    // A proposal waits in NEXT: a model of this version that has read nothing.
    const proposal = first.files.newGenerationFile();
    openReadModel(proposal).close();
    first.files.proposeNext(proposal);
    await first.lifecycle.stop();
    running.splice(running.indexOf(first), 1);

    // The next start reaches no broker: the store on disk answers at once.
    const second = lifecycleFixture(dir);
    second.kafka.breakDown();
    started(second);
    expect(orgOf(second, 1)).toBeNull();
    expect(orgOf(second, 2)).toBe(2);
    second.kafka.recover();
    second.publish([orderCreated({ order_id: 1 })]);
    await waitUntil('the proposal is switched to', async () => {
      await second.tick();
      expect(orgOf(second, 1)).toBeNull();
      return second.files.currentFile() === proposal;
    });
    expect(orgOf(second, 1)).toBeNull();
    expect(orgOf(second, 2)).toBe(2);
  });

  it('is built from the keys topic where a data directory has none, refusing every key until then', async () => {
    const dir = dataDir();
    // A data directory of a release that kept keys in the orders model: no keys store in it.
    const older = started(lifecycleFixture(dir));
    await waitUntil('started', () => older.lifecycle.state() !== 'starting');
    await older.lifecycle.stop();
    running.splice(running.indexOf(older), 1);
    const served = older.files.currentFile()!;
    const model = memoryReadModel(openOneFileModel(served));
    model.apply(issueKeyOf(1, at(1)), issueKeyOf(2, at(1)));
    model.db.close();
    rmSync(keysFile(dir), { force: true });

    const f = lifecycleFixture(dir);
    f.kafka.breakDown();
    started(f);
    expect(orgOf(f, 1)).toBeNull();
    expect(orgOf(f, 2)).toBeNull();
    expect(f.lifecycle.health().reasons.join('; ')).toMatch(
      /the keys consumer has not read the keys topic yet/,
    );
    f.publish([issueKeyOf(1, at(1)), issueKeyOf(2, at(1)), revokeKeyOf(1, 2)]);
    f.kafka.recover();
    await waitUntil('the store has read the keys topic', async () => {
      await f.tick();
      expect(orgOf(f, 1)).toBeNull();
      return orgOf(f, 2) === 2 && f.lifecycle.health().ready;
    });
  });

  it('replaces a consumer that stays joined but fetches nothing, and reads on with the new one', async () => {
    const f = started(lifecycleFixture(dataDir(), { keysStallMs: 300 }));
    f.publish([issueKeyOf(1, at(1)), orderCreated({ order_id: 1 })]);
    await waitUntil('the key is accepted', () => orgOf(f, 1) === 1, 8000);
    // a client stuck in its retries: joined, fetching nothing
    f.lifecycle.keysProjector()!.pause();
    f.publish([revokeKeyOf(1, 2)]);
    await waitUntil(
      'a new keys consumer',
      () => f.restarts.some((r) => r.projector === 'keys' && r.reason === 'stalled'),
      8000,
    );
    await waitUntil('the new consumer reads the revocation', () => orgOf(f, 1) === null, 8000);
  });

  it('gives each consumer replaced without a fetch twice as long, so that slow starts end up reading', async () => {
    const f = lifecycleFixture(dataDir(), { keysStallMs: 150 });
    // every start needs 500 ms to fetch: more than the first consumer's and the second's patience
    f.kafka.firstFetchDelayMs = 500;
    started(f);
    f.publish([issueKeyOf(1, at(1)), orderCreated({ order_id: 1 })]);
    await waitUntil('the key is accepted', () => orgOf(f, 1) === 1, 8000);
    const stalled = f.restarts.filter((r) => r.projector === 'keys' && r.reason === 'stalled').length;
    expect(stalled).toBeGreaterThanOrEqual(1);
    expect(stalled).toBeLessThanOrEqual(3);
  });

  it('makes the replica unready while its consumer cannot fetch, and ready again once it reads', async () => {
    const f = started(lifecycleFixture(dataDir(), { keysStallMs: 300 }));
    f.publish([issueKeyOf(1, at(1)), orderCreated({ order_id: 1 })]);
    await waitUntil(
      'ready',
      async () => {
        await f.tick();
        return f.lifecycle.health().ready;
      },
      8000,
    );
    f.kafka.breakDown();
    await waitUntil(
      'unready, naming the keys consumer',
      () => f.lifecycle.health().reasons.some((r) => /the keys consumer has not fetched for 1 s/.test(r)),
      8000,
    );
    expect(f.lifecycle.health().ready).toBe(false);
    f.kafka.recover();
    await waitUntil(
      'ready again',
      async () => {
        await f.tick();
        return f.lifecycle.health().ready;
      },
      8000,
    );
  });

  it('reports a keys batch that cannot be read: the replica is unready, naming the partition', async () => {
    const f = started(lifecycleFixture(dataDir()));
    const partition = f.kafka.partitionOf('test-api-key-of-org-1');
    f.kafka.makeUnreadable(testTopics.apiKeys, partition, 0, 'a codec the client lacks');
    f.publish([issueKeyOf(1, at(1)), orderCreated({ order_id: 1 })]);
    const reason = `${testTopics.apiKeys} partition ${partition} cannot be read at offset 0 (a codec the client lacks); keys issued or revoked after it are not seen`;
    await waitUntil(
      'unready, naming the keys partition',
      async () => {
        await f.tick();
        return f.lifecycle.health().reasons.includes(reason);
      },
      8000,
    );
    expect(f.lifecycle.health().ready).toBe(false);
    expect(orgOf(f, 1)).toBeNull();
    f.kafka.readable(testTopics.apiKeys, partition);
    await waitUntil(
      'read, and ready',
      async () => {
        await f.tick();
        return orgOf(f, 1) === 1 && f.lifecycle.health().ready;
      },
      8000,
    );
  });

  it('moves past a keys batch an operator skipped, with one dead letter, and reads on', async () => {
    const dir = dataDir();
    const f = started(lifecycleFixture(dir));
    const partition = f.kafka.partitionOf('test-api-key-of-org-1');
    f.kafka.makeUnreadableBatch(testTopics.apiKeys, partition, 0, 0, 'a codec the client lacks');
    f.publish([issueKeyOf(1, at(1)), revokeKeyOf(1, 2)]);
    await waitUntil('the batch is reported', async () => {
      await f.tick();
      return f.lifecycle.health().reasons.some((r) => r.includes('cannot be read at offset 0'));
    });
    f.files.recordOperatorSkip({
      topic: testTopics.apiKeys,
      partition,
      firstOffset: 0,
      lastOffset: 0,
      reason: 'a producer bug',
      by: 'test@host',
      at: new Date().toISOString(),
    });
    await waitUntil('past the batch: the revocation after it is read', async () => {
      await f.tick();
      return f.lifecycle.health().ready;
    });
    expect(orgOf(f, 1)).toBeNull();
    const keys = openReadModel(keysFile(dir), { readonly: true, store: keysStoreSchema });
    const letters = keys.prepare('SELECT "offset", reason FROM dead_letters').all();
    keys.close();
    expect(letters).toEqual([{ offset: 0, reason: 'skipped_by_operator' }]);
  });

  it('answers with its predecessor of an older projection version until it has reached it, then retires it', async () => {
    const dir = dataDir();
    const events = [issueKeyOf(1, at(1)), issueKeyOf(2, at(1)), revokeKeyOf(1, 2)];
    const predecessor = predecessorWith(dir, events);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const f = lifecycleFixture(dir, { beforeBatch: (file) => (file === keysFile(dir) ? held : undefined) });
    f.publish(events);
    started(f);
    try {
      // The successor has read nothing yet: the predecessor answers.
      expect(orgOf(f, 1)).toBeNull();
      expect(orgOf(f, 2)).toBe(2);
    } finally {
      release();
    }
    await waitUntil('the predecessor is retired', () => !existsSync(predecessor));
    expect(orgOf(f, 1)).toBeNull();
    expect(orgOf(f, 2)).toBe(2);
  });

  it('keeps its predecessor across a restart while it has not reached it', async () => {
    const dir = dataDir();
    const events = [issueKeyOf(1, at(1)), issueKeyOf(2, at(1)), revokeKeyOf(1, 2)];
    const predecessor = predecessorWith(dir, events);
    // The successor reads nothing before the service stops.
    const first = lifecycleFixture(dir, {
      beforeBatch: (file) => (file === keysFile(dir) ? new Promise<void>(() => undefined) : undefined),
    });
    first.kafka.breakDown();
    started(first);
    await first.lifecycle.stop();
    running.splice(running.indexOf(first), 1);

    const second = lifecycleFixture(dir);
    second.kafka.breakDown();
    started(second);
    expect(existsSync(predecessor)).toBe(true);
    expect(orgOf(second, 1)).toBeNull();
    expect(orgOf(second, 2)).toBe(2);
    second.publish(events);
    second.kafka.recover();
    await waitUntil('the predecessor is retired', () => !existsSync(predecessor));
    expect(orgOf(second, 1)).toBeNull();
    expect(orgOf(second, 2)).toBe(2);
  });
});
