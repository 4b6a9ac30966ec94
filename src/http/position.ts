/**
 * Reads that never go back for a caller across replicas. Every answer carries, in `X-Read-Position`,
 * the position of the read transaction it was read in (what the model had applied of every partition),
 * as a compact opaque token. A caller that sends the newest token it has seen back in the same
 * header is answered only by a replica that has applied at least that much: the request waits for
 * it up to a bound, then gets 503 with `Retry-After`, never an older answer.
 * The token's format is in `position-token.ts`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiReads, ModelRead } from '../read-model/reader.js';
import { ApiError, sendError } from './api-error.js';
import {
  idsOf,
  maxPositionTokenLength,
  parsePositionToken,
  positionToken,
  reached,
  type RequiredPosition,
} from './position-token.js';
import { isBuiltPosition, maxBuiltPartition, parseBuiltPosition } from './position-built.js';

export {
  maxPositionTokenLength,
  parsePositionToken,
  positionToken,
  reached,
  topicIdsOf,
  type RequiredPosition,
} from './position-token.js';

export const positionHeader = 'x-read-position';

export const invalidPosition = new ApiError(
  400,
  'Invalid read position',
  `X-Read-Position must be a token an answer of this API gave, unchanged (at most ${maxPositionTokenLength} characters).`,
);

export const invalidBuiltPosition = new ApiError(
  400,
  'Invalid read position',
  `X-Read-Position of a publisher must be \`topic=<name>;partition=<n>;offset=<n>\` entries, comma-separated, naming records a producer had acknowledged (partitions 0–${maxBuiltPartition}, at most ${maxPositionTokenLength} characters).`,
);

/** A built position naming a topic the model is not read from: waiting for it could never end. */
export const unknownBuiltTopic = (topic: string): ApiError =>
  new ApiError(
    400,
    'Invalid read position',
    `X-Read-Position names the topic ${topic}, which this API does not read orders, statuses or articles from. Name a record of one it reads, or send the request without it.`,
  );

export const positionNotReached = (waitedMs: number): ApiError =>
  new ApiError(
    503,
    'Position not reached',
    `This replica has not yet applied every event the X-Read-Position token names (waited ${waitedMs} ms); retry, and another replica or this one later will answer.`,
    { 'retry-after': '1' },
  );

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
  /** the same topics by name, which a built position (`position-built.ts`) must name; absent: any */
  topics?: ReadonlySet<string>;
}

export const unknownPositionTopic = new ApiError(
  400,
  'Invalid read position',
  "X-Read-Position names a topic this API does not read from: it is not a token an answer of this API gave (another deployment's, or one given before its topics were renamed). Send the request without it.",
);

export const defaultPositionWaitMs = 1000;

const notReached = Symbol('not reached');

/**
 * Answers a request from one read transaction of the model, with its position in `X-Read-Position`, once
 * the model has reached the position the request presents: at once when it has (no promise), else
 * after polling for it up to `waitMs`, or 503. A malformed token is answered 400 rather than
 * ignored: ignoring it would drop the guarantee the caller asked for without telling it.
 */
export function answerAtPosition(
  request: FastifyRequest,
  reply: FastifyReply,
  reads: () => ApiReads,
  options: PositionOptions,
  answer: (model: ModelRead) => void,
): void | Promise<void> {
  const header = request.headers[positionHeader];
  let required: RequiredPosition | null = null;
  if (typeof header === 'string' && isBuiltPosition(header)) {
    const built = parseBuiltPosition(header.trim());
    if (built === null) {
      void sendError(reply, invalidBuiltPosition);
      return;
    }
    const unknown = [...built.topics].find(
      (topic) => options.topics !== undefined && !options.topics.has(topic),
    );
    if (unknown !== undefined) {
      void sendError(reply, unknownBuiltTopic(unknown));
      return;
    }
    required = built.required;
  } else if (header !== undefined) {
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
    reads().inReadTransaction(
      (model) => {
        const position = model.position();
        if (foreign.length > 0 && foreign.some((id) => !idsOf(position).has(id))) {
          void sendError(reply, unknownPositionTopic);
          return undefined;
        }
        if (required !== null && !reached(position, required)) return notReached;
        // Set before the answer reads anything more: the reader runs this again in one read
        // transaction if the answer needs the file, and this header is then set again.
        void reply.header(positionHeader, positionToken(position));
        answer(model);
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
