/**
 * Kafka's compression codecs as the kafkajs adapter registers them: kafkajs itself reads only gzip.
 * Snappy and LZ4 come from napi-rs builds of the reference libraries (prebuilt binaries shipped as
 * npm packages), zstd from Node's own zlib (Node 22.15 and later).
 */
import { zstdCompress, zstdDecompress } from 'node:zlib';
import { promisify } from 'node:util';
import { compressFrame, decompressFrame } from 'lz4-napi';
import { compress as snappyCompress, uncompress as snappyUncompress } from 'snappy';

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

async function snappyDecompress(buffer: Buffer): Promise<Buffer> {
  if (buffer.length < xerialHeaderLength || !buffer.subarray(0, 8).equals(xerialMagic)) {
    return Buffer.from(await snappyUncompress(buffer));
  }
  const blocks: Buffer[] = [];
  for (let at = xerialHeaderLength; at < buffer.length;) {
    const length = buffer.readUInt32BE(at);
    blocks.push(Buffer.from(await snappyUncompress(buffer.subarray(at + 4, at + 4 + length))));
    at += 4 + length;
  }
  return Buffer.concat(blocks);
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

const zstd = { compress: promisify(zstdCompress), decompress: promisify(zstdDecompress) };

/** The codecs kafkajs lacks, by Kafka's codec id (2 snappy, 3 lz4, 4 zstd). */
export const kafkaCodecs: Record<2 | 3 | 4, () => Codec> = {
  2: () => ({
    compress: (encoder) => snappyCompressXerial(encoder.buffer),
    decompress: snappyDecompress,
  }),
  3: () => ({
    compress: async (encoder) => Buffer.from(await compressFrame(encoder.buffer)),
    decompress: async (buffer) => Buffer.from(await decompressFrame(buffer)),
  }),
  4: () => ({
    compress: (encoder) => zstd.compress(encoder.buffer),
    decompress: (buffer) => zstd.decompress(buffer),
  }),
};
