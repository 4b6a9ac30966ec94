import fc from 'fast-check';
import { compressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import { kafkaCodecs } from '../../src/kafka/codecs.js';

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
