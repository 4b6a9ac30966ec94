import fc from 'fast-check';
import { compressFrame } from 'lz4-napi';
import { compressSync } from 'snappy';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BatchTooLarge,
  defaultBatchInflatedBytes,
  kafkaCodecs,
  limitInflatedBatches,
} from '../../src/kafka/codecs.js';

/** How many bytes each call into lz4-napi inflated. */
const inflatedByLz4 = vi.hoisted((): number[] => []);
vi.mock('lz4-napi', async (original) => {
  const lz4 = await original<typeof import('lz4-napi')>();
  const counted =
    <A extends unknown[]>(inflate: (...args: A) => Promise<Buffer>) =>
    async (...args: A): Promise<Buffer> => {
      const inflated = await inflate(...args);
      inflatedByLz4.push(inflated.length);
      return inflated;
    };
  return { ...lz4, decompressFrame: counted(lz4.decompressFrame), uncompress: counted(lz4.uncompress) };
});

const names = { 2: 'snappy', 3: 'lz4', 4: 'zstd' } as const;

describe('compression codecs', () => {
  for (const id of [2, 3, 4] as const) {
    it(`${names[id]}: decompresses what it compressed, for any bytes`, async () => {
      const codec = kafkaCodecs[id]();
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 100_000 }), async (bytes) => {
          const buffer = Buffer.from(bytes);
          expect(await codec.decompress(await codec.compress({ buffer }))).toEqual(buffer);
        }),
        { numRuns: 50 },
      );
    });
  }

  it('snappy: writes the framing Java producers use and reads raw snappy as librdkafka may send it', async () => {
    const codec = kafkaCodecs[2]();
    const data = Buffer.from('x'.repeat(100_000));
    const framed = await codec.compress({ buffer: data });
    expect(framed.subarray(0, 8)).toEqual(Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]));
    expect(await codec.decompress(compressSync(data))).toEqual(data);
  });
});

/** xxHash32 of a few bytes (under 16), as an LZ4 frame's header checksum needs. */
function xxh32Short(bytes: Buffer): number {
  const [p1, p2, p3, p4, p5] = [0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f, 0x165667b1];
  const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));
  let h = (p5 + bytes.length) | 0;
  let i = 0;
  for (; i + 4 <= bytes.length; i += 4)
    h = Math.imul(rotl((h + Math.imul(bytes.readUInt32LE(i), p3)) | 0, 17), p4);
  for (; i < bytes.length; i += 1) h = Math.imul(rotl((h + Math.imul(bytes[i] ?? 0, p5)) | 0, 11), p1);
  h = Math.imul(h ^ (h >>> 15), p2);
  h = Math.imul(h ^ (h >>> 13), p3);
  return (h ^ (h >>> 16)) >>> 0;
}

/** An LZ4 frame of 64 KiB linked blocks, each given as [stored, bytes]. */
function linkedFrame(blocks: [boolean, Buffer][]): Buffer {
  const descriptor = Buffer.from([0x40, 0x40]);
  const parts: Buffer[] = [
    Buffer.from([0x04, 0x22, 0x4d, 0x18]),
    descriptor,
    Buffer.from([(xxh32Short(descriptor) >>> 8) & 0xff]),
  ];
  for (const [stored, bytes] of blocks) {
    const size = Buffer.alloc(4);
    size.writeUInt32LE((bytes.length | (stored ? 0x80000000 : 0)) >>> 0);
    parts.push(size, bytes);
  }
  parts.push(Buffer.alloc(4));
  return Buffer.concat(parts);
}

describe('LZ4 against BATCH_MAX_INFLATED_BYTES', () => {
  const lz4 = kafkaCodecs[3]();
  afterEach(() => {
    limitInflatedBatches(defaultBatchInflatedBytes);
    inflatedByLz4.length = 0;
  });

  it('stops inflating a frame that states no size within the limit and one block', async () => {
    limitInflatedBatches(1024 * 1024);
    const frame = await compressFrame(Buffer.alloc(64 * 1024 * 1024));
    expect(frame.readUInt8(4) & 0x08).toBe(0);
    const blockMax = 2 ** (2 * ((frame.readUInt8(5) >> 4) & 7) + 8);
    await expect(lz4.decompress(frame)).rejects.toBeInstanceOf(BatchTooLarge);
    const inflated = inflatedByLz4.reduce((sum, bytes) => sum + bytes, 0);
    expect(inflated).toBeGreaterThan(1024 * 1024);
    expect(inflated).toBeLessThanOrEqual(1024 * 1024 + blockMax);
  });

  it('returns any bytes within the limit and refuses any beyond it', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300_000 }),
        fc.integer({ min: 1, max: 300_000 }),
        fc.boolean(),
        async (bytes, limit, checksums) => {
          const data = Buffer.from(bytes);
          const frame = await compressFrame(data, { blockChecksums: checksums, contentChecksum: checksums });
          limitInflatedBatches(limit);
          if (data.length <= limit) expect(await lz4.decompress(frame)).toEqual(data);
          else await expect(lz4.decompress(frame)).rejects.toBeInstanceOf(BatchTooLarge);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('reads linked blocks, whose matches reach into the block before, block by block too', async () => {
    // the second block: no literal, a 100-byte match 13 bytes back (into the first block), then 5 literals
    const second = Buffer.from([0x0f, 13, 0, 100 - 4 - 15, 0x50, ...Buffer.from('!!!!!')]);
    const frame = linkedFrame([
      [true, Buffer.from('hello world, ')],
      [false, second],
    ]);
    const text = `hello world, ${'hello world, '.repeat(8).slice(0, 100)}!!!!!`;
    limitInflatedBatches(text.length);
    expect((await lz4.decompress(frame)).toString()).toBe(text);
    limitInflatedBatches(text.length - 1);
    await expect(lz4.decompress(frame)).rejects.toBeInstanceOf(BatchTooLarge);
  });

  it('still refuses a frame whose content checksum is wrong, and bytes that are not one whole frame', async () => {
    const data = Buffer.from('an order '.repeat(1000));
    const frame = await compressFrame(data, { contentChecksum: true });
    const damaged = Buffer.from(frame);
    damaged[damaged.length - 1] = (damaged.at(-1) ?? 0) ^ 0xff;
    await expect(lz4.decompress(damaged)).rejects.toThrow();
    await expect(lz4.decompress(Buffer.concat([frame, frame]))).rejects.toThrow(/after the LZ4 frame/);
    await expect(lz4.decompress(frame.subarray(0, frame.length - 6))).rejects.toThrow(/LZ4/);
    expect(await lz4.decompress(frame)).toEqual(data);
  });
});
