/**
 * Kafka's compression codecs as the kafkajs adapter registers them: kafkajs itself reads only gzip.
 * Snappy and LZ4 come from napi-rs builds of the reference libraries (prebuilt binaries shipped as
 * npm packages), zstd from Node's own zlib (Node 22.15 and later).
 */
import { gzip, unzip, zstdCompress, zstdDecompress } from 'node:zlib';
import { promisify } from 'node:util';
import { compressFrame, decompressFrame, uncompress } from 'lz4-napi';
import { compress as snappyCompress, uncompress as snappyUncompress } from 'snappy';

/** What one record batch may inflate to by default: above the batches producers send by default (a Java producer's 16 KiB, this service's 256 KiB), far under the memory budget (npm run bench:hostile). */
export const defaultBatchInflatedBytes = 4 * 1024 * 1024;

let inflatedLimit = defaultBatchInflatedBytes;

/** Sets what a record batch may inflate to in this module instance (BATCH_MAX_INFLATED_BYTES). */
export function limitInflatedBatches(bytes: number): void {
  inflatedLimit = bytes;
}

/**
 * A record batch that would inflate beyond the limit: never inflated, reported as a batch this
 * client cannot read (its partition paused and tried again), so it costs no more memory than the limit.
 */
export class BatchTooLarge extends Error {
  readonly code = 'BATCH_TOO_LARGE';
  constructor(codec: string, inflated: number | null) {
    super(
      `the ${codec} record batch inflates beyond BATCH_MAX_INFLATED_BYTES (${inflatedLimit} bytes${inflated === null ? '' : `; it states ${inflated}`})`,
    );
  }
}

function tooLarge(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
}

export const codecNames = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type CodecName = (typeof codecNames)[number];

/** What kafkajs calls for a compressed record batch. */
export interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/**
 * Java producers frame snappy the way snappy-java's stream does ("xerial" framing: a magic header,
 * then length-prefixed blocks); librdkafka reads and writes it too. Raw snappy is read as well.
 */
const xerialMagic = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const xerialHeaderLength = 16;
const xerialBlock = 32 * 1024;

/** The uncompressed length a raw snappy block states in its preamble (a little-endian varint). */
function snappyLength(block: Buffer): number {
  let length = 0;
  for (let i = 0, shift = 1; i < Math.min(block.length, 5); i += 1, shift *= 128) {
    const byte = block[i] ?? 0;
    length += (byte & 0x7f) * shift;
    if (byte < 0x80) return length;
  }
  return Number.POSITIVE_INFINITY;
}

async function snappyDecompress(buffer: Buffer): Promise<Buffer> {
  const xerial = buffer.length >= xerialHeaderLength && buffer.subarray(0, 8).equals(xerialMagic);
  const blocks: Buffer[] = [];
  if (!xerial) blocks.push(buffer);
  for (let at = xerialHeaderLength; xerial && at < buffer.length;) {
    const length = buffer.readUInt32BE(at);
    blocks.push(buffer.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  // Every block states its length: the batch is refused before anything is inflated.
  const total = blocks.reduce((sum, block) => sum + snappyLength(block), 0);
  if (total > inflatedLimit) throw new BatchTooLarge('snappy', Number.isFinite(total) ? total : null);
  const inflated: Buffer[] = [];
  for (const block of blocks) inflated.push(Buffer.from(await snappyUncompress(block)));
  return Buffer.concat(inflated);
}

/** An LZ4 frame as Kafka producers write it: a descriptor, then blocks each of at most `blockMax` bytes inflated. */
interface Lz4Frame {
  stated: number | null;
  blockMax: number;
  /** blocks that refer to the 64 KiB inflated before them (flag bit 5 unset) */
  linked: boolean;
  blocks: { stored: boolean; data: Buffer }[];
}

const lz4Magic = 0x184d2204;
const lz4Window = 64 * 1024;
const lz4BlockMax: Partial<Record<number, number>> = {
  4: 64 * 1024,
  5: 256 * 1024,
  6: 1024 * 1024,
  7: 4 * 1024 * 1024,
};

/**
 * Reads an LZ4 frame's descriptor and the size word of each block (its high bit marks a block
 * stored uncompressed) without inflating anything. The checksums are left to lz4-napi.
 */
function lz4Frame(frame: Buffer): Lz4Frame {
  if (frame.length < 7 || frame.readUInt32LE(0) !== lz4Magic) throw new Error('not an LZ4 frame');
  const flags = frame[4] ?? 0;
  const blockMax = lz4BlockMax[((frame[5] ?? 0) >> 4) & 7];
  if (flags >> 6 !== 1 || blockMax === undefined)
    throw new Error('an LZ4 frame of an unknown version or block size');
  let at = 6;
  const stated = (flags & 0x08) === 0 ? null : Number(frame.readBigUInt64LE(at));
  at += ((flags & 0x08) === 0 ? 0 : 8) + ((flags & 0x01) === 0 ? 0 : 4) + 1;
  const checked = (flags & 0x10) === 0 ? 0 : 4;
  const blocks: Lz4Frame['blocks'] = [];
  for (;;) {
    if (at + 4 > frame.length) throw new Error('an LZ4 frame without its end mark');
    const word = frame.readUInt32LE(at);
    at += 4;
    if (word === 0) break;
    const length = word & 0x7fffffff;
    if (length > blockMax || at + length + checked > frame.length) throw new Error('a truncated LZ4 block');
    blocks.push({ stored: word >>> 31 === 1, data: frame.subarray(at, at + length) });
    at += length + checked;
  }
  if (at + ((flags & 0x04) === 0 ? 0 : 4) !== frame.length) throw new Error('bytes after the LZ4 frame');
  return { stated, blockMax, linked: (flags & 0x20) === 0, blocks };
}

/**
 * Inflates a frame's blocks one at a time, each into at most the frame's block size, keeping none
 * of them: throws as soon as the total passes the limit, so a bomb costs a block or two of memory.
 */
async function lz4Measure(frame: Lz4Frame): Promise<void> {
  let inflated = 0;
  let window: Buffer | undefined;
  for (const block of frame.blocks) {
    let data = block.data;
    if (!block.stored) {
      // lz4-napi's `uncompress` reads a block after its 4-byte inflated size, and fails past it
      const sized = Buffer.allocUnsafe(4 + data.length);
      sized.writeUInt32LE(frame.blockMax);
      data.copy(sized, 4);
      data = await uncompress(sized, window);
    }
    inflated += data.length;
    if (inflated > inflatedLimit) throw new BatchTooLarge('lz4', null);
    if (frame.linked)
      window = Buffer.concat(window === undefined ? [data] : [window, data]).subarray(-lz4Window);
  }
}

/**
 * Java's producer and lz4-napi never state the content size, so the bound comes from the blocks:
 * a frame whose blocks cannot pass the limit is inflated at once (its checksums verified), any other
 * is measured block by block first, and refused at the first block past the limit.
 */
async function lz4Decompress(buffer: Buffer): Promise<Buffer> {
  const frame = lz4Frame(buffer);
  if (frame.stated !== null && frame.stated > inflatedLimit) throw new BatchTooLarge('lz4', frame.stated);
  const most = frame.blocks.reduce(
    (sum, block) => sum + (block.stored ? block.data.length : frame.blockMax),
    0,
  );
  if (most > inflatedLimit) await lz4Measure(frame);
  return Buffer.from(await decompressFrame(buffer));
}

/** zlib's own codecs stop at the limit while inflating: nothing past it is ever allocated. */
function zlibDecompress(
  codec: string,
  inflate: (
    buffer: Buffer,
    options: { maxOutputLength: number },
    done: (error: Error | null, result: Buffer) => void,
  ) => void,
): (buffer: Buffer) => Promise<Buffer> {
  return (buffer) =>
    new Promise((resolve, reject) => {
      inflate(buffer, { maxOutputLength: inflatedLimit }, (error, result) => {
        if (error === null) resolve(result);
        else reject(tooLarge(error) ? new BatchTooLarge(codec, null) : error);
      });
    });
}

async function snappyCompressXerial(data: Buffer): Promise<Buffer> {
  const header = Buffer.alloc(xerialHeaderLength);
  xerialMagic.copy(header);
  header.writeUInt32BE(1, 8);
  header.writeUInt32BE(1, 12);
  const parts: Buffer[] = [header];
  for (let at = 0; at < data.length; at += xerialBlock) {
    const block = await snappyCompress(data.subarray(at, at + xerialBlock));
    const length = Buffer.alloc(4);
    length.writeUInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

const zstd = { compress: promisify(zstdCompress), decompress: zlibDecompress('zstd', zstdDecompress) };
const gzipCodec = { compress: promisify(gzip), decompress: zlibDecompress('gzip', unzip) };

/** The codecs the adapter registers with kafkajs, by Kafka's codec id (1 gzip, 2 snappy, 3 lz4, 4 zstd). */
export const kafkaCodecs: Record<1 | 2 | 3 | 4, () => Codec> = {
  1: () => ({
    compress: (encoder) => gzipCodec.compress(encoder.buffer),
    decompress: gzipCodec.decompress,
  }),
  2: () => ({
    compress: (encoder) => snappyCompressXerial(encoder.buffer),
    decompress: snappyDecompress,
  }),
  3: () => ({
    compress: async (encoder) => Buffer.from(await compressFrame(encoder.buffer)),
    decompress: lz4Decompress,
  }),
  4: () => ({
    compress: (encoder) => zstd.compress(encoder.buffer),
    decompress: zstd.decompress,
  }),
};
