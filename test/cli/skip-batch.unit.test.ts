/**
 * `skip-batch` records a fact and moves no model: what it refuses, what it records, and what it
 * tells the operator about each model of the data directory (served in CURRENT, proposed in NEXT).
 * A snapshot carries the skips its model applied to the new replica's record.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { skipBatch, skipBatchLines, SkipRefused } from '../../src/cli/skip-batch.js';
import { restoreSnapshot, takeSnapshot } from '../../src/cli/snapshot.js';
import type { CommandContext } from '../../src/cli/commands.js';
import { loadConfig } from '../../src/config.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import type { OperatorSkip } from '../../src/read-model/operator-skips.js';
import { markPreviousProjectionVersion } from '../../tools/model-progress.js';
import { descriptorsOn } from '../helpers/open-files.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { topicVariables } from '../../schemas/streams.js';

const orders = testTopics.orders;
const input = (over: Partial<OperatorSkip> = {}): Omit<OperatorSkip, 'at'> => ({
  topic: orders,
  partition: 0,
  firstOffset: 20,
  lastOffset: 21,
  reason: 'padded',
  by: 'ops@h',
  ...over,
});
const when = new Date(Date.UTC(2026, 0, 1));

describe('skip-batch', () => {
  const root = tempDir('skip-batch-unit');
  let n = 0;
  const context = (): CommandContext & { dataDir: string; files: ModelFiles } => {
    const dataDir = join(root, `data-${(n += 1)}`);
    return {
      dataDir,
      files: new ModelFiles(dataDir),
      config: loadConfig({
        DATA_DIR: dataDir,
        ...topicVariables(testTopics),
      }),
      logger: pino({ level: 'silent' }),
      print: () => undefined,
    };
  };
  /** A model file of the directory whose orders partition 0 is at `position` (none: never read). */
  const model = (files: ModelFiles, position?: number): string => {
    const file = files.newGenerationFile();
    const { db, writer } = memoryReadModel(openReadModel(file));
    if (position !== undefined) writer.applyBatch(orders, 0, [], position);
    db.close();
    return file;
  };

  it('refuses what names no batch, and records nothing', () => {
    const ctx = context();
    expect(() => skipBatch(ctx, input({ topic: 'pr.other' }))).toThrow(SkipRefused);
    expect(() => skipBatch(ctx, input({ topic: 'pr.other' }))).toThrow(
      `pr.other is not one of the configured topics (${Object.values(testTopics).join(', ')})`,
    );
    expect(() => skipBatch(ctx, input({ firstOffset: 22 }))).toThrow('--through 21 is before --from 22');
    expect(() => skipBatch(ctx, input({ reason: ' ' }))).toThrow('--reason is required');
    expect(ctx.files.operatorSkips()).toEqual([]);
  });

  it('records the batch where no model exists yet, and says so', () => {
    const ctx = context();
    const report = skipBatch(ctx, input(), when);
    const skip = { ...input(), at: when.toISOString() };
    expect(report).toEqual({ skip, added: true, models: [] });
    expect(ctx.files.operatorSkips()).toEqual([skip]);
    expect(skipBatchLines(report, 'REC')).toEqual([
      'Recorded in REC: orders partition 0, the record batch at offsets 20–21, skipped by ops@h: padded',
      'No model in this data directory yet: a build from the topics moves past the batch when it meets it.',
      'No model was moved by this command. Every projector that meets exactly this batch (the service, a proposal catching up, a rebuild) moves past it with a skipped_by_operator dead letter of its own; it moves past nothing else.',
    ]);
  });

  it('moves neither the served model at the batch nor a proposal behind it, and says where each is', () => {
    const ctx = context();
    const served = model(ctx.files, 20);
    const proposed = model(ctx.files, 10);
    ctx.files.promote(served);
    ctx.files.proposeNext(proposed);
    const report = skipBatch(ctx, input(), when);
    expect(report.models).toEqual([
      { file: served, pointer: 'CURRENT', position: 20, place: 'at' },
      { file: proposed, pointer: 'NEXT', position: 10, place: 'before' },
    ]);
    for (const [file, position] of [
      [served, 20],
      [proposed, 10],
    ] as const) {
      const db = openReadModel(file, { readonly: true });
      expect(db.prepare('SELECT next_offset FROM consumer_offsets').pluck().all()).toEqual([position]);
      expect(db.prepare('SELECT count(*) FROM dead_letters').pluck().get()).toBe(0);
      db.close();
    }
    expect(skipBatchLines(report, 'REC').slice(1, 3)).toEqual([
      `The served model (CURRENT, ${served}) is at offset 20, this batch: it moves past it at its next attempt to read the partition (within 10 s while the service runs, else when it starts).`,
      `The proposed model (NEXT, ${proposed}) is at offset 10, before the batch: it reads offsets 10–19 first, then moves past the batch.`,
    ]);
    expect(skipBatchLines(report, 'REC')).toHaveLength(4);
  });

  it('leaves no connection open on the models it looked at, or on the record', () => {
    const ctx = context();
    const served = model(ctx.files, 20);
    const proposed = model(ctx.files, 10);
    ctx.files.promote(served);
    ctx.files.proposeNext(proposed);
    skipBatch(ctx, input(), when);
    const record = join(ctx.dataDir, 'operator-skips.sqlite');
    expect([served, proposed, record].map(descriptorsOn)).toEqual([0, 0, 0]);
  });

  it('records the batch when no model is at it, saying where each one is', () => {
    const ctx = context();
    const served = model(ctx.files, 22);
    const proposed = model(ctx.files);
    ctx.files.promote(served);
    ctx.files.proposeNext(proposed);
    const report = skipBatch(ctx, input(), when);
    expect(report.added).toBe(true);
    expect(report.models.map((m) => [m.position, m.place])).toEqual([
      [22, 'past'],
      [undefined, 'not read yet'],
    ]);
    expect(skipBatchLines(report, 'REC').slice(1)).toEqual([
      `The served model (CURRENT, ${served}) is at offset 22, past the batch already: nothing changes for it.`,
      `The proposed model (NEXT, ${proposed}) has not read this partition yet: it moves past the batch when it reaches it.`,
      'No model here is at this batch now: nothing moves until a model reaches it, and one that never does is not affected.',
      'No model was moved by this command. Every projector that meets exactly this batch (the service, a proposal catching up, a rebuild) moves past it with a skipped_by_operator dead letter of its own; it moves past nothing else.',
    ]);
  });

  it('tells of a model inside the batch, of an older projection version, and of a batch recorded before', () => {
    const ctx = context();
    const served = model(ctx.files, 21);
    ctx.files.promote(served);
    const older = model(ctx.files, 20);
    markPreviousProjectionVersion(older);
    ctx.files.proposeNext(older);
    skipBatch(ctx, input({ firstOffset: 5, lastOffset: 5, reason: 'first' }), when);
    const first = skipBatch(ctx, input(), when);
    const again = skipBatch(ctx, input({ reason: 'again', by: 'x@y' }), new Date(Date.UTC(2026, 1, 1)));
    expect(first.added).toBe(true);
    expect(again).toEqual({ ...first, added: false });
    expect(again.models.map((m) => m.place)).toEqual(['inside', null]);
    expect(skipBatchLines(again, 'REC').slice(0, 3)).toEqual([
      'Recorded already in REC (2026-01-01T00:00:00.000Z, by ops@h: padded): orders partition 0, the record batch at offsets 20–21; nothing added.',
      `The served model (CURRENT, ${served}) is at offset 21, inside offsets 20–21: it never meets a batch starting at 20, so this skip does not apply to it. If it waits at an unreadable batch, /readyz names that batch's offsets: record that one.`,
      `The proposed model (NEXT, ${older}) is of an older projection version, served read-only while its successor is built: nothing projects into it.`,
    ]);
    expect(
      skipBatchLines({ ...again, models: [], added: true, skip: { ...again.skip, firstOffset: 21 } }, 'R')[0],
    ).toBe('Recorded in R: orders partition 0, the record batch at offset 21, skipped by ops@h: padded');
    expect(ctx.files.operatorSkips().map((s) => s.reason)).toEqual(['first', 'padded']);
  });

  it('reports the skips it imported from a skipped-batches.json of an older version', () => {
    const ctx = context();
    const warnings: unknown[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    mkdirSync(ctx.dataDir, { recursive: true });
    writeFileSync(
      join(ctx.dataDir, 'skipped-batches.json'),
      JSON.stringify([
        { topic: orders, partition: 0, from: null, through: 3, reason: 'r', by: 'b', at: 't' },
      ]),
    );
    skipBatch({ ...ctx, logger }, input(), when);
    expect(warnings).toMatchObject([
      {
        imported: 0,
        leftOut: [{ from: null, through: 3 }],
        msg: 'imported the skips of skipped-batches.json',
      },
    ]);
  });

  it('leaves a new replica restored from a snapshot with the skips its model applied', () => {
    const ctx = context();
    const served = model(ctx.files, 20);
    const { db, writer } = memoryReadModel(openReadModel(served));
    writer.skipByOperator({ ...input(), at: 'then' });
    db.close();
    ctx.files.promote(served);
    const snapshot = join(root, `snapshot-${n}.sqlite`);
    takeSnapshot(ctx.dataDir, snapshot);
    const replica = join(root, `replica-${n}`);
    restoreSnapshot(replica, snapshot);
    expect(new ModelFiles(replica).operatorSkips()).toEqual([{ ...input(), at: '2026-01-01T00:00:00.000Z' }]);
  });
});
