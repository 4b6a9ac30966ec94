/**
 * An LZ4 batch against BATCH_MAX_INFLATED_BYTES (4 MiB): a frame of zeros made by lz4-napi's
 * `compressFrame` (which, like Java's producer, states no content size) of about 823 KB that inflates
 * to 210 MB, handed to the codec kafkajs calls, in a process of its own; the peak RSS (VmHWM) of
 * that process against one that only reads the frame. Then the codec's speed on an ordinary 4 MiB
 * batch of JSON events, against lz4-napi's whole-frame inflation in the same rounds. Writes bench/results/lz4-bound-<git commit>-<UTC date-time>.json.
 *
 *   npm run bench:lz4-bound
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { compressFrame, decompressFrame } from 'lz4-napi';
import { kafkaCodecs } from '../src/kafka/codecs.js';

const MB = 1_000_000;

function peakRssMb(): number {
  const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
  return kb / 1024;
}

/** In a child: reads the frame, inflates it unless `readOnly`, prints the outcome and VmHWM. */
async function child(file: string, readOnly: boolean): Promise<void> {
  const frame = readFileSync(file);
  let outcome = 'read only';
  if (!readOnly) {
    try {
      outcome = `inflated ${(await kafkaCodecs[3]().decompress(frame)).length} bytes`;
    } catch (error) {
      outcome = (error as Error).message;
    }
  }
  process.stdout.write(JSON.stringify({ outcome, peakRssMb: peakRssMb() }));
}

function inChild(file: string, readOnly: boolean): { outcome: string; peakRssMb: number } {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', import.meta.filename, readOnly ? '--read' : '--inflate', file],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout) as { outcome: string; peakRssMb: number };
}

/**
 * MB/s of inflating a 4 MiB batch of JSON events: the codec kafkajs calls against lz4-napi's
 * `decompressFrame` alone (what the codec did before it measured frames), alternating within each
 * of `rounds` rounds of `times` inflations each, so that both see the same load.
 */
async function speed(
  rounds: number,
  times: number,
): Promise<{ frameBytes: number; codecMbPerS: number[]; wholeFrameMbPerS: number[]; ratios: number[] }> {
  const lines: string[] = [];
  for (let i = 0, bytes = 0; bytes < 4 * 1024 * 1024 - 300; i += 1) {
    const line = JSON.stringify({
      event_id: `e-${i}`,
      type: 'order.updated',
      occurred_at: new Date(Date.UTC(2026, 0, 1) + i * 997).toISOString(),
      data: {
        order_id: i,
        organization_id: (i * 7919) % 500,
        press_release_title: `Press release ${(i * 104729) % 100000}`,
      },
    });
    lines.push(line);
    bytes += line.length + 1;
  }
  const batch = Buffer.from(lines.join('\n'));
  const frame = await compressFrame(batch);
  const codec = kafkaCodecs[3]();
  const mbPerS = async (inflate: () => Promise<Buffer>): Promise<number> => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < times; i += 1) await inflate();
    return Math.round((batch.length * times) / MB / (Number(process.hrtime.bigint() - start) / 1e9));
  };
  const codecMbPerS: number[] = [];
  const wholeFrameMbPerS: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    codecMbPerS.push(await mbPerS(() => codec.decompress(frame)));
    wholeFrameMbPerS.push(await mbPerS(async () => Buffer.from(await decompressFrame(frame))));
  }
  const ratios = codecMbPerS.map((mb, i) => Math.round((mb / (wholeFrameMbPerS[i] ?? mb)) * 1000) / 1000);
  return { frameBytes: frame.length, codecMbPerS, wholeFrameMbPerS, ratios };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'lz4-bound-'));
  try {
    const file = join(dir, 'zeros.lz4');
    const inflates = 210 * MB;
    const frame = await compressFrame(Buffer.alloc(inflates));
    writeFileSync(file, frame);
    const readOnly = inChild(file, true);
    const inflated = inChild(file, false);
    const result = {
      commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
      loadAverage: loadavg(),
      bomb: {
        frameBytes: frame.length,
        inflatesTo: inflates,
        statesSize: (frame[4]! & 0x08) !== 0,
        readOnly,
        inflated,
      },
      peakRssRiseMb: Math.round(inflated.peakRssMb - readOnly.peakRssMb),
      ordinaryBatch: await speed(10, 30),
    };
    const out = join(
      import.meta.dirname,
      'results',
      `lz4-bound-${result.commit}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    console.log(`written to ${out}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const [mode, file] = process.argv.slice(2);
if (mode === '--read' || mode === '--inflate') await child(file ?? '', mode === '--read');
else await main();
