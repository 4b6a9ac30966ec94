/**
 * A proposed model that waits in NEXT while the service restarts is served only once it has
 * reached what the served file already holds: before the served projector has reported a position,
 * the served file's own stored positions are the mark (issue: a restart switched to the older model).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { sha256Hex } from '../../src/http/auth.js';
import { keyOf, issueKeyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated, orderDeleted } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { tempDir } from '../helpers/temp.js';
import { markProjectionVersion1 } from '../../tools/model-progress.js';

const root = tempDir('proposal-at-restart');
let n = 0;
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

const first: DomainEvent[] = [
  issueKeyOf(1),
  ...[1, 2, 3].map((id) => orderCreated({ order_id: id }, { occurred_at: at(id) })),
];
const later: DomainEvent[] = [
  apiKeyRevoked('test-api-key-of-org-1', { occurred_at: at(10) }),
  orderDeleted(1, { occurred_at: at(11) }),
];

const keyAccepted = (f: LifecycleFixture): boolean =>
  f.lifecycle.reads.orgOfKeyHash(sha256Hex(keyOf(1))) !== null;
const listed = (f: LifecycleFixture): number =>
  f.lifecycle.reads.orderPage({ orgId: 1, status: null, limit: 10, offset: 0 }).total;

/**
 * A data directory whose served model has applied `first` and `later` (the key revoked, order 1
 * deleted), with a copy taken after `first` alone proposed in NEXT, as a rebuild finished just
 * before the service was stopped leaves it.
 */
async function servedNewerThanProposal(): Promise<string> {
  const dataDir = join(root, `data-${(n += 1)}`);
  const f = lifecycleFixture(dataDir);
  running.push(f);
  f.publish(first);
  f.lifecycle.start();
  await waitUntil('the first events are applied', async () => {
    await f.tick();
    return f.lifecycle.health().totalLag === 0 && listed(f) === 3;
  });
  const older = f.files.newGenerationFile();
  const db = new Database(f.lifecycle.servedFile(), { readonly: true });
  db.prepare('VACUUM INTO ?').run(older);
  db.close();
  f.publish(later);
  await waitUntil('the revocation and the deletion are applied', async () => {
    await f.tick();
    return !keyAccepted(f) && listed(f) === 2;
  });
  await f.lifecycle.stop();
  running.splice(running.indexOf(f), 1);
  f.files.proposeNext(older);
  return dataDir;
}

/** The same log in the restarted service's broker. */
function restarted(dataDir: string): LifecycleFixture {
  const f = lifecycleFixture(dataDir);
  running.push(f);
  f.publish([...first, ...later]);
  return f;
}

describe('a proposal waiting in NEXT at a restart', () => {
  it('is not served while the broker is down at the restart: the newer served model stays', async () => {
    const dataDir = await servedNewerThanProposal();
    const f = restarted(dataDir);
    const served = f.files.currentFile();
    f.kafka.breakDown();
    f.lifecycle.start();
    for (let i = 0; i < 5; i += 1) {
      await f.tick();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(f.files.currentFile()).toBe(served);
      expect(keyAccepted(f)).toBe(false);
      expect(listed(f)).toBe(2);
    }
  });

  it('is served with the broker up only once it holds what the served model held: no older answer in between', async () => {
    const dataDir = await servedNewerThanProposal();
    const f = restarted(dataDir);
    const served = f.files.currentFile();
    f.lifecycle.start();
    await waitUntil(
      'the proposal is caught up and served',
      async () => {
        await f.tick();
        expect(keyAccepted(f)).toBe(false);
        expect(listed(f)).toBe(2);
        return f.files.currentFile() !== served;
      },
      10_000,
      1,
    );
    expect(keyAccepted(f)).toBe(false);
    expect(listed(f)).toBe(2);
  });
});

describe('a switch while the keys watch runs', () => {
  it('waits until the candidate has the keys the watch answered from, so that no issued key is refused after it', async () => {
    const dataDir = join(root, `data-${(n += 1)}`);
    // A served model of an older release holding the first events, and a proposal of this
    // version holding the same: the proposal has reached the served model at once.
    const older = lifecycleFixture(dataDir);
    older.publish(first);
    older.lifecycle.start();
    await waitUntil('the first events are applied', async () => {
      await older.tick();
      return older.lifecycle.health().totalLag === 0;
    });
    const proposal = older.files.newGenerationFile();
    const copy = new Database(older.lifecycle.servedFile(), { readonly: true });
    copy.prepare('VACUUM INTO ?').run(proposal);
    copy.close();
    await older.lifecycle.stop();
    markProjectionVersion1(older.files.currentFile()!);
    older.files.proposeNext(proposal);

    // The proposal's projector is held back; a newer key reaches the keys watch only.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const f = lifecycleFixture(dataDir, {
      keysWatch: true,
      beforeBatch: (file) => (file === proposal ? held : undefined),
    });
    running.push(f);
    f.publish(first);
    f.publish([issueKeyOf(2, at(20))]);
    f.lifecycle.start();
    const key2 = sha256Hex(keyOf(2));
    try {
      // No tick yet: switches are considered on ticks (the proposal's held projector applies nothing).
      await waitUntil(
        'the keys watch has the new key',
        () => f.lifecycle.reads.orgOfKeyHash(key2) === 2,
        3000,
      );
      for (let i = 0; i < 5; i += 1) {
        await f.tick();
        expect(f.lifecycle.reads.orgOfKeyHash(key2)).toBe(2);
      }
      expect(f.files.currentFile()).not.toBe(proposal);
    } finally {
      release();
    }
    await waitUntil('the proposal is served', async () => {
      await f.tick();
      expect(f.lifecycle.reads.orgOfKeyHash(key2)).toBe(2);
      return f.files.currentFile() === proposal;
    });
    expect(f.lifecycle.reads.orgOfKeyHash(key2)).toBe(2);
  });
});
