/**
 * The form of `X-Read-Position` a publisher builds from what its producer got back for a record
 * it published: `topic=<name>;partition=<n>;offset=<n>`, several comma-separated. It asks for an
 * answer once the model has applied that record, that is once its next offset of the partition is
 * beyond `offset`. It becomes the same requirement as a token (`position-token.ts`), so it is
 * accepted wherever a token is. A token never holds `=`, so the two forms cannot be confused.
 */
import { maxPositionTokenLength, topicIdOf, type RequiredPosition } from './position-token.js';

/** The highest partition number a built position may name (a dense list up to it is compared). */
export const maxBuiltPartition = 9999;

/** A topic name as Kafka allows it: letters, digits, `.`, `_` and `-`, at most 249 of them. */
const topicName = /^[A-Za-z0-9._-]{1,249}$/;
const natural = /^(0|[1-9]\d{0,15})$/;

/** True when `text` is of the built form (not necessarily well-formed). */
export function isBuiltPosition(text: string): boolean {
  return text.includes('=');
}

export interface BuiltPosition {
  /** what the model must have reached: offset + 1 of every record named */
  required: RequiredPosition;
  /** the topics named */
  topics: ReadonlySet<string>;
}

/** One `topic=…;partition=…;offset=…` entry (its keys in any order, each once), or null. */
function entryOf(text: string): { topic: string; partition: number; offset: number } | null {
  const fields = new Map<string, string>();
  for (const pair of text.split(';')) {
    const at = pair.indexOf('=');
    if (at < 0) return null;
    const name = pair.slice(0, at).trim();
    if (fields.has(name)) return null;
    fields.set(name, pair.slice(at + 1).trim());
  }
  const topic = fields.get('topic') ?? '';
  const partition = fields.get('partition') ?? '';
  const offset = fields.get('offset') ?? '';
  if (fields.size !== 3 || !topicName.test(topic) || !natural.test(partition) || !natural.test(offset)) {
    return null;
  }
  const entry = { topic, partition: Number(partition), offset: Number(offset) };
  // offset + 1 must be exact: the record after the last offset a JSON number carries is refused
  if (entry.partition > maxBuiltPartition || entry.offset >= Number.MAX_SAFE_INTEGER) return null;
  return entry;
}

/** The position `text` names; null when it is not well-formed or longer than a token may be. */
export function parseBuiltPosition(text: string): BuiltPosition | null {
  if (text.length === 0 || text.length > maxPositionTokenLength) return null;
  const byTopic = new Map<string, number[]>();
  for (const part of text.split(',')) {
    const entry = entryOf(part);
    if (entry === null) return null;
    let offsets = byTopic.get(entry.topic);
    if (offsets === undefined) {
      offsets = [];
      byTopic.set(entry.topic, offsets);
    }
    while (offsets.length <= entry.partition) offsets.push(0);
    // the same partition twice: the later record is the one to wait for
    offsets[entry.partition] = Math.max(offsets[entry.partition] ?? 0, entry.offset + 1);
  }
  const required = new Map<string, number[]>();
  for (const [topic, offsets] of byTopic) {
    // two names of one 3-byte id (as unlikely as it is) must both be reached
    const other = required.get(topicIdOf(topic)) ?? [];
    const longer = other.length > offsets.length ? other : offsets;
    required.set(
      topicIdOf(topic),
      longer.map((_, i) => Math.max(other[i] ?? 0, offsets[i] ?? 0)),
    );
  }
  return { required, topics: new Set(byTopic.keys()) };
}
