import type { Admin } from 'kafkajs';

export interface PartitionLag {
  topic: string;
  partition: number;
  /** next offset stored with the model (the log start when never read) */
  nextOffset: number;
  highWatermark: number;
  lag: number;
}

/** Lag of the model per partition: the broker's high watermark minus the offset stored in SQLite. */
export async function modelLag(
  admin: Admin,
  topics: readonly string[],
  storedOffset: (topic: string, partition: number) => number | undefined,
): Promise<PartitionLag[]> {
  const result: PartitionLag[] = [];
  for (const topic of topics) {
    for (const p of await admin.fetchTopicOffsets(topic)) {
      const highWatermark = Number(p.high);
      const nextOffset = storedOffset(topic, p.partition) ?? Number(p.low);
      result.push({
        topic,
        partition: p.partition,
        nextOffset,
        highWatermark,
        lag: Math.max(0, highWatermark - nextOffset),
      });
    }
  }
  return result;
}
