/**
 * Publishing through kcat (librdkafka): a producer this project did not write, for tests, benchmarks
 * and the fault campaign that need batches kafkajs would not build (hostile or odd ones).
 */
import { openSync, closeSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

export interface KcatBatch {
  brokers: string;
  topic: string;
  partition: number;
  /** lines of `key<TAB>value`, or a file of them */
  lines: readonly string[] | { file: string };
  codec?: 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
  /** more librdkafka settings, as `-X name=value` pairs */
  settings?: readonly string[];
}

/** Produces the lines to one partition, compressed; throws with kcat's own words when it fails. */
export function kcatProduce(batch: KcatBatch): void {
  const args = [
    '-P',
    '-b',
    batch.brokers,
    '-t',
    batch.topic,
    '-p',
    String(batch.partition),
    '-z',
    batch.codec ?? 'zstd',
    '-K',
    '\t',
    // one message may be as large as librdkafka allows: the bound under test is the consumer's
    '-X',
    'message.max.bytes=1000000000',
    ...(batch.settings ?? []).flatMap((setting) => ['-X', setting]),
  ];
  const fromFile = 'file' in batch.lines ? openSync(batch.lines.file, 'r') : null;
  try {
    const run = spawnSync('kcat', args, {
      ...(fromFile === null
        ? { input: `${(batch.lines as readonly string[]).join('\n')}\n` }
        : { stdio: [fromFile, 'ignore', 'pipe'] }),
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (run.error !== undefined || run.status !== 0) {
      throw new Error(
        `kcat failed (is the Debian package kcat installed? .ci/run installs it): ${run.error?.message ?? ''}${run.stderr}`,
      );
    }
  } finally {
    if (fromFile !== null) closeSync(fromFile);
  }
}
