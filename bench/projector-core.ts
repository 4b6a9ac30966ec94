/**
 * The projector's own work without Kafka: decode + apply of a seeded history in batches per
 * partition, as the projector receives them. For profiling (`node --cpu-prof`) and for quick
 * before/after figures of changes to the write path.
 *   npx tsx bench/projector-core.ts [orders=100000] [batch=2000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { perStream, type TopicRole } from '../schemas/streams.js';
import { messageKeyOf, topicRoleOf } from '../src/kafka/publisher.js';
import { decodeBatch } from '../src/projector/decode.js';
import { demoEvents } from '../tools/demo-data.js';
import { openReadModel } from '../src/read-model/database.js';
import { ReadModelWriter } from '../src/read-model/writer.js';
import type { RawMessage } from '../src/kafka/port.js';

const orders = Number(process.argv[2] ?? 100_000);
const batchSize = Number(process.argv[3] ?? 2000);
const partitions = 3;
const topics: Record<TopicRole, string> = perStream((role) => role);
const roleOf = new Map(Object.entries(topics).map(([role, topic]) => [topic, role as TopicRole]));

const logs = new Map<string, RawMessage[]>();
let total = 0;
for (const event of demoEvents({ seed: 7, organizations: 1000, orders, articlesPerOrder: 5 })) {
  const topic = topics[topicRoleOf(event)];
  const key = messageKeyOf(event);
  const partition = createHash('md5').update(key).digest().readUInt8(0) % partitions;
  const id = `${topic}:${partition}`;
  const log = logs.get(id) ?? [];
  log.push({
    key: Buffer.from(key),
    value: Buffer.from(JSON.stringify(event)),
    offset: String(log.length),
  });
  logs.set(id, log);
  total += 1;
}
const dir = mkdtempSync(join(tmpdir(), 'projector-core-'));
const db = openReadModel(join(dir, 'model.sqlite'));
const writer = new ReadModelWriter(db, (topic) => roleOf.get(topic));
const cursors = [...logs].map(([id, log]) => ({
  topic: id.split(':')[0]!,
  partition: Number(id.split(':')[1]),
  log,
  at: 0,
}));
const started = performance.now();
let decodeMs = 0;
for (let progress = true; progress;) {
  progress = false;
  for (const c of cursors) {
    if (c.at >= c.log.length) continue;
    progress = true;
    const slice = c.log.slice(c.at, c.at + batchSize);
    const t = performance.now();
    const decoded = decodeBatch(roleOf.get(c.topic)!, slice);
    decodeMs += performance.now() - t;
    writer.applyBatch(c.topic, c.partition, decoded);
    c.at += slice.length;
  }
}
const ms = performance.now() - started;
console.log(
  `${total} events in ${Math.round(ms)} ms: ${Math.round(total / (ms / 1000))} ev/s ` +
    `(decode ${Math.round(decodeMs)} ms, ${Math.round((((ms - decodeMs) * 1000) / total) * 100) / 100} µs/event apply)`,
);
db.close();
rmSync(dir, { recursive: true, force: true });
