/**
 * Reads that never go back for a caller across replicas. Every answer carries, in `X-Read-Position`,
 * the position of the snapshot it was read from (what the model had applied of every partition),
 * as a compact opaque token. A caller that sends the newest token it has seen back in the same
 * header is answered only by a replica that has applied at least that much: the request waits for
 * it up to a bound, then gets 503 with `Retry-After`, never an older answer.
 *
 * Token: base64url of a format byte, then per topic a 3-byte digest of its name (so replicas agree
 * without sharing an order of topics, and one that has read nothing of a topic yet still compares),
 * the number of partitions and the next offset of each partition from 0 on, as unsigned LEB128.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiReads, ModelPosition, ModelSnapshot } from '../read-model/reader.js';
import { ApiError, sendError } from './api-error.js';

export const positionHeader = 'x-read-position';

/** Longer tokens are refused: about 500 partitions at offsets of a billion. */
export const maxPositionTokenLength = 4096;

const tokenFormat = 1;
const topicIdBytes = 3;
/** LEB128 bytes of a safe integer (53 bits) */
const maxVarintBytes = 8;

/** What a presented token requires: the next offset per topic id (hex) and partition. */
export type RequiredPosition = ReadonlyMap<string, readonly number[]>;

export const invalidPosition = new ApiError(
  400,
  'Invalid read position',
  `X-Read-Position must be a token an answer of this API gave, unchanged (at most ${maxPositionTokenLength} characters).`,
);

export const positionNotReached = (waitedMs: number): ApiError =>
  new ApiError(
    503,
    'Position not reached',
    `This replica has not yet applied every event the X-Read-Position token names (waited ${waitedMs} ms); retry, and another replica or this one later will answer.`,
    { 'retry-after': '1' },
  );

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
function byTopic(position: ModelPosition): Map<string, number[]> {
  const topics = new Map<string, number[]>();
  for (const [key, next] of position) {
    const at = key.lastIndexOf('\u0000');
    const topic = key.slice(0, at);
    const partition = Number(key.slice(at + 1));
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
const tokens = new WeakMap<ModelPosition, string>();
/** Positions by topic id, for the comparisons: computed once per position object. */
const compared = new WeakMap<ModelPosition, Map<string, number[]>>();

export function positionToken(position: ModelPosition): string {
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
export function reached(position: ModelPosition, required: RequiredPosition): boolean {
  const mine = idsOf(position);
  for (const [id, offsets] of required) {
    const have = mine.get(id);
    for (let partition = 0; partition < offsets.length; partition++) {
      if ((have?.[partition] ?? 0) < (offsets[partition] ?? 0)) return false;
    }
  }
  return true;
}

export interface PositionOptions {
  /** how long a request waits for a presented position (READ_POSITION_WAIT_MS) */
  waitMs: number;
  /**
   * The ids (`topicIdsOf`) of the topics the served model is read from, as configured (every
   * replica of a deployment has the same): a token may name these, even one this replica has read
   * nothing of yet, and the topics of the position this replica gives. A token naming any other
   * topic was never given by this API (another deployment's, or one given before the topics were
   * renamed) and is refused with 400: offset 0 of it would always be reached and any other never.
   * Absent: any topic (an app built without a configuration, as in benchmarks).
   */
  topicIds?: ReadonlySet<string>;
}

/** The topic ids of `topics`, for the check of a presented token. */
export function topicIdsOf(topics: readonly string[]): ReadonlySet<string> {
  return new Set(topics.map((topic) => topicId(topic).toString('hex')));
}

export const unknownPositionTopic = new ApiError(
  400,
  'Invalid read position',
  "X-Read-Position names a topic this API does not read from: it is not a token an answer of this API gave (another deployment's, or one given before its topics were renamed). Send the request without it.",
);

/** The topic ids of a position (by `topicId`), computed once per position object. */
function idsOf(position: ModelPosition): Map<string, number[]> {
  let mine = compared.get(position);
  if (mine === undefined) {
    mine = new Map(
      [...byTopic(position)].map(([topic, offsets]) => [topicId(topic).toString('hex'), offsets]),
    );
    compared.set(position, mine);
  }
  return mine;
}

export const defaultPositionWaitMs = 1000;

const notReached = Symbol('not reached');

/**
 * Answers a request from one snapshot of the model, with its position in `X-Read-Position`, once
 * the model has reached the position the request presents: at once when it has (no promise), else
 * after polling for it up to `waitMs`, or 503. A malformed token is answered 400 rather than
 * ignored: ignoring it would drop the guarantee the caller asked for without telling it.
 */
export function answerAtPosition(
  request: FastifyRequest,
  reply: FastifyReply,
  reads: () => ApiReads,
  options: PositionOptions,
  answer: (snapshot: ModelSnapshot) => void,
): void | Promise<void> {
  const header = request.headers[positionHeader];
  let required: RequiredPosition | null = null;
  if (header !== undefined) {
    required = typeof header === 'string' ? parsePositionToken(header.trim()) : null;
    if (required === null) {
      void sendError(reply, invalidPosition);
      return;
    }
  }
  // Topics the configuration does not name: given only if this replica's own position names them.
  const known = options.topicIds;
  const foreign =
    required === null || known === undefined ? [] : [...required.keys()].filter((id) => !known.has(id));
  // Only a conditional request may be answered from what the reader remembers alone (a 304): any
  // other reads a page, in the same read transaction as its tag and its position.
  const remembered = request.headers['if-none-match'] !== undefined;
  const attempt = (fresh: boolean): typeof notReached | undefined =>
    reads().inSnapshot(
      (snapshot) => {
        const position = snapshot.position();
        if (foreign.length > 0 && foreign.some((id) => !idsOf(position).has(id))) {
          void sendError(reply, unknownPositionTopic);
          return undefined;
        }
        if (required !== null && !reached(position, required)) return notReached;
        // Set before the answer reads anything more: the reader runs this again in one read
        // transaction if the answer needs the file, and this header is then set again.
        void reply.header(positionHeader, positionToken(position));
        answer(snapshot);
        return undefined;
      },
      { fresh, remembered: remembered && !fresh },
    );
  // What the reader remembers may be a commit behind the file: look at the file before waiting.
  if (attempt(false) !== notReached || attempt(true) !== notReached) return;
  return waitThenAnswer(reply, () => attempt(true), options.waitMs);
}

/** Polls more often at first: a replica slightly behind usually catches up within milliseconds. */
const pollDelaysMs = [2, 5, 10, 20, 50];

async function waitThenAnswer(
  reply: FastifyReply,
  attempt: () => typeof notReached | undefined,
  waitMs: number,
): Promise<void> {
  const started = performance.now();
  for (let i = 0; ; i++) {
    const left = waitMs - (performance.now() - started);
    if (left <= 0) break;
    const delay = Math.min(left, pollDelaysMs[Math.min(i, pollDelaysMs.length - 1)] ?? 50);
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (attempt() !== notReached) return;
  }
  void sendError(reply, positionNotReached(waitMs));
}
