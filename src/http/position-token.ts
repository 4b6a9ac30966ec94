/**
 * The token of `X-Read-Position` (`position.ts`): base64url of a format byte, then per topic a
 * 3-byte digest of its name (so replicas agree without sharing an order of topics, and one that has
 * read nothing of a topic yet still compares), the number of partitions and the next offset of each
 * partition from 0 on, as unsigned LEB128.
 */
import { createHash } from 'node:crypto';
import { splitOffsetKey, type Positions } from '../read-model/reader.js';

/** Longer tokens are refused: about 500 partitions at offsets of a billion. */
export const maxPositionTokenLength = 4096;

const tokenFormat = 1;
const topicIdBytes = 3;
/** LEB128 bytes of a safe integer (53 bits) */
const maxVarintBytes = 8;

/** What a presented token requires: the next offset per topic id (hex) and partition. */
export type RequiredPosition = ReadonlyMap<string, readonly number[]>;

const topicIds = new Map<string, Buffer>();

function topicId(topic: string): Buffer {
  let id = topicIds.get(topic);
  if (id === undefined) {
    id = createHash('sha256').update(topic).digest().subarray(0, topicIdBytes);
    if (topicIds.size < 1000) topicIds.set(topic, id);
  }
  return id;
}

function pushVarint(bytes: number[], value: number): void {
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
}

/** The partitions of each topic of a position, by partition number (absent ones as 0). */
function byTopic(position: Positions): Map<string, number[]> {
  const topics = new Map<string, number[]>();
  for (const [key, next] of position) {
    const [topic, partition] = splitOffsetKey(key);
    let offsets = topics.get(topic);
    if (offsets === undefined) {
      offsets = [];
      topics.set(topic, offsets);
    }
    while (offsets.length <= partition) offsets.push(0);
    offsets[partition] = next;
  }
  return topics;
}

/** Tokens of positions recently answered: a position object stays the same while its file does not change. */
const tokens = new WeakMap<Positions, string>();
/** Positions by topic id, for the comparisons: computed once per position object. */
const compared = new WeakMap<Positions, Map<string, number[]>>();

export function positionToken(position: Positions): string {
  const cached = tokens.get(position);
  if (cached !== undefined) return cached;
  const bytes: number[] = [tokenFormat];
  const topics = [...byTopic(position)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [topic, offsets] of topics) {
    bytes.push(...topicId(topic));
    pushVarint(bytes, offsets.length);
    for (const next of offsets) pushVarint(bytes, next);
  }
  const token = Buffer.from(bytes).toString('base64url');
  tokens.set(position, token);
  return token;
}

/** Tokens parsed lately: a poller presents the same one until the model moves. */
const parsed = new Map<string, RequiredPosition | null>();

/** The position a token names; null when it is not one this API gives. */
export function parsePositionToken(token: string): RequiredPosition | null {
  const known = parsed.get(token);
  if (known !== undefined) return known;
  const required = parseToken(token);
  if (parsed.size >= 1000) parsed.clear();
  parsed.set(token, required);
  return required;
}

function parseToken(token: string): RequiredPosition | null {
  if (token.length === 0 || token.length > maxPositionTokenLength || !/^[A-Za-z0-9_-]+$/.test(token)) {
    return null;
  }
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.toString('base64url') !== token || bytes[0] !== tokenFormat) return null;
  let at = 1;
  const varint = (): number | null => {
    let value = 0;
    for (let i = 0; i < maxVarintBytes; i++) {
      const byte = bytes[at];
      if (byte === undefined) return null;
      at += 1;
      value += (byte & 0x7f) * 2 ** (7 * i);
      if (byte < 0x80) return Number.isSafeInteger(value) ? value : null;
    }
    return null;
  };
  const required = new Map<string, number[]>();
  while (at < bytes.length) {
    if (at + topicIdBytes > bytes.length) return null;
    const id = bytes.subarray(at, at + topicIdBytes).toString('hex');
    at += topicIdBytes;
    const count = varint();
    if (count === null || count > bytes.length || required.has(id)) return null;
    const offsets: number[] = [];
    for (let i = 0; i < count; i++) {
      const next = varint();
      if (next === null) return null;
      offsets.push(next);
    }
    required.set(id, offsets);
  }
  return required;
}

/** True when `position` has applied every offset `required` names (a partition never read counts as 0). */
export function reached(position: Positions, required: RequiredPosition): boolean {
  const mine = idsOf(position);
  for (const [id, offsets] of required) {
    const have = mine.get(id);
    for (let partition = 0; partition < offsets.length; partition++) {
      if ((have?.[partition] ?? 0) < (offsets[partition] ?? 0)) return false;
    }
  }
  return true;
}

/** The id (hex) a token names `topic` by. */
export function topicIdOf(topic: string): string {
  return topicId(topic).toString('hex');
}

/** The topic ids of `topics`, for the check of a presented token. */
export function topicIdsOf(topics: readonly string[]): ReadonlySet<string> {
  return new Set(topics.map((topic) => topicId(topic).toString('hex')));
}

/** The topic ids of a position (by `topicId`), computed once per position object. */
export function idsOf(position: Positions): Map<string, number[]> {
  let mine = compared.get(position);
  if (mine === undefined) {
    mine = new Map(
      [...byTopic(position)].map(([topic, offsets]) => [topicId(topic).toString('hex'), offsets]),
    );
    compared.set(position, mine);
  }
  return mine;
}
