/**
 * `skip-batch`: records an operator's skip of one record batch (`read-model/operator-skips.ts`)
 * and says where each model of the data directory stands against it. It moves no model.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { operatorSql } from '../../projections/orders/sql.js';
import { openReadModel, projectionVersionOf } from '../read-model/database.js';
import { ModelFiles } from '../read-model/files.js';
import { placeOf, skipProblem, type ModelPlace, type OperatorSkip } from '../read-model/operator-skips.js';
import type { CommandContext } from './commands.js';

/** Where one model of the directory stands on the skipped batch's partition. */
export interface ModelAtSkip {
  file: string;
  /** named by CURRENT (served) or NEXT (proposed) */
  pointer: 'CURRENT' | 'NEXT';
  /** its stored position on the partition; undefined when it has not read it */
  position: number | undefined;
  /** null: a file of another projection version, served read-only while its successor is built */
  place: ModelPlace | null;
}

export interface SkipBatchReport {
  /** the skip as recorded: the earlier one when the batch was recorded before */
  skip: OperatorSkip;
  /** false: the same batch was recorded before, and nothing was added */
  added: boolean;
  models: ModelAtSkip[];
}

/**
 * Records an operator's decision that one record batch can never be read: topic, partition, and
 * its first and last offsets as the service names them (/readyz, the log). No model is moved by
 * the command. Every projector that meets exactly this batch (the served model's, a proposal's
 * catching up, a rebuild's, the service's rebuild after a projection-version change) moves past it
 * with a dead letter of its own; a model that is elsewhere on the partition goes on reading
 * everything before the batch. The report says where each model of the directory stands.
 */
export function skipBatch(
  ctx: CommandContext,
  input: Omit<OperatorSkip, 'at'>,
  at: Date = new Date(),
): SkipBatchReport {
  const problem = skipProblem(input, Object.values(ctx.config.topics));
  if (problem !== null) throw new SkipRefused(problem);
  const files = new ModelFiles(ctx.config.dataDir);
  const pointed = [
    { pointer: 'CURRENT' as const, file: files.currentFile() },
    { pointer: 'NEXT' as const, file: files.nextFile() },
  ];
  const models = pointed.flatMap(({ pointer, file }): ModelAtSkip[] => {
    if (file === null) return [];
    const db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
    try {
      const row = db.prepare(operatorSql.storedOffset).get(input.topic, input.partition) as
        { next_offset: number } | undefined;
      const position = row?.next_offset;
      const place = projectionVersionOf(db) === PROJECTION_VERSION ? placeOf(position, input) : null;
      return [{ file, pointer, position, place }];
    } finally {
      db.close();
    }
  });
  const { recorded, added } = files.recordOperatorSkip(
    { ...input, at: at.toISOString() },
    { onImport: (report) => ctx.logger.warn(report, 'imported the skips of skipped-batches.json') },
  );
  return { skip: recorded, added, models };
}

/** What `skip-batch` tells the operator: what it recorded, and where each model stands. */
export function skipBatchLines(report: SkipBatchReport, recordFile: string): string[] {
  const { skip } = report;
  const batch = `${skip.topic} partition ${skip.partition}, the record batch at ${skip.firstOffset === skip.lastOffset ? `offset ${skip.firstOffset}` : `offsets ${skip.firstOffset}–${skip.lastOffset}`}`;
  const lines = [
    report.added
      ? `Recorded in ${recordFile}: ${batch}, skipped by ${skip.by}: ${skip.reason}`
      : `Recorded already in ${recordFile} (${skip.at}, by ${skip.by}: ${skip.reason}): ${batch}; nothing added.`,
  ];
  for (const model of report.models) {
    const name = `${model.pointer === 'CURRENT' ? 'The served model' : 'The proposed model'} (${model.pointer}, ${model.file})`;
    lines.push(`${name} ${whereModelIs(model, skip)}`);
  }
  if (report.models.length === 0) {
    lines.push(
      'No model in this data directory yet: a build from the topics moves past the batch when it meets it.',
    );
  } else if (!report.models.some((m) => m.place === 'at')) {
    lines.push(
      'No model here is at this batch now: nothing moves until a model reaches it, and one that never does is not affected.',
    );
  }
  lines.push(
    'No model was moved by this command. Every projector that meets exactly this batch (the service, a proposal catching up, a rebuild) moves past it with a skipped_by_operator dead letter of its own; it moves past nothing else.',
  );
  return lines;
}

function whereModelIs(model: ModelAtSkip, skip: OperatorSkip): string {
  const at = `is at offset ${model.position ?? 0}`;
  switch (model.place) {
    case null:
      return 'is of an older projection version, served read-only while its successor is built: nothing projects into it.';
    case 'not read yet':
      return 'has not read this partition yet: it moves past the batch when it reaches it.';
    case 'before':
      return `${at}, before the batch: it reads offsets ${model.position ?? 0}–${skip.firstOffset - 1} first, then moves past the batch.`;
    case 'at':
      return `${at}, this batch: it moves past it at its next attempt to read the partition (within 10 s while the service runs, else when it starts).`;
    case 'past':
      return `${at}, past the batch already: nothing changes for it.`;
    case 'inside':
      return `${at}, inside offsets ${skip.firstOffset}–${skip.lastOffset}: it never meets a batch starting at ${skip.firstOffset}, so this skip does not apply to it. If it waits at an unreadable batch, /readyz names that batch's offsets: record that one.`;
  }
}

export class SkipRefused extends Error {
  readonly code = 'SKIP_REFUSED';
}
