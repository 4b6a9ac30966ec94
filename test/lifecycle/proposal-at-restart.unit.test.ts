/**
 * A proposed model that waits in NEXT while the service restarts is served only once it has
 * reached what the served file already holds: before the served projector has reported a position,
 * the served file's own stored positions are the mark (issue: a restart switched to the older model).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { keyOf, issueKeyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated, orderDeleted } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { tempDir } from '../helpers/temp.js';

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
