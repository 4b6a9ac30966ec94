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
import { ApiError, sendError, unauthorized } from './api-error.js';
import type { ChangeWaits, EpochMark, Recheck } from './change-waits.js';
import { holdNotModified, releaseNotModified, sendNotModified } from './conditional.js';
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
    `X-Read-Position names the topic ${topic}, which is not one of the topics this API reads. Name a record of one it reads, or send the request without it.`,
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
  /** holds conditional requests with `Prefer: wait=N` until their answer changes (`change-waits.ts`); absent: none is held */
  changes?: ChangeWaits;
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
/** The answer would be a 304, held for a waiting request (`holdNotModified`). */
const unchanged = Symbol('unchanged');
type Outcome = typeof notReached | typeof unchanged | undefined;

/** A held request whose key was revoked while it waited: it is refused, never answered with data. */
const revokedWhileWaiting = unauthorized('The API key is unknown or has been revoked.');

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
  const seconds = options.changes?.applicable(request) ?? null;
  const holding = seconds === null ? null : holdNotModified(reply);
  const attempt = (fresh: boolean): Outcome => {
    if (holding !== null) holding.unchanged = false;
    const outcome = reads().inReadTransaction(
      (model): Outcome => {
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
    return outcome === undefined && holding?.unchanged === true ? unchanged : outcome;
  };
  // Taken before the first read: a commit after it wakes the request once held.
  const since = seconds === null ? null : (options.changes?.mark() ?? null);
  const settle = (outcome: Outcome): void | Promise<void> => {
    if (outcome !== unchanged || options.changes === undefined || seconds === null || since === null) return;
    return holdUntilChanged(request, reply, { reads, changes: options.changes, seconds, attempt, since });
  };
  // What the reader remembers may be a commit behind the file: a request that will be held reads
  // the file, and any other looks at it before waiting for its position.
  const first = attempt(since !== null);
  if (first !== notReached) return settle(first);
  const second = attempt(true);
  if (second !== notReached) return settle(second);
  return waitThenAnswer(reply, () => attempt(true), options.waitMs).then(settle);
}

/**
 * Holds a request whose answer is unchanged (`change-waits.ts`): after each commit it is read
 * again, answered 200 as soon as its tag moved; at the end of its wait (or when the app closes),
 * answered whatever it is then, a 304 when unchanged. Its key is looked up again each time, so
 * a key revoked while it waits gets 401, never the new answer.
 */
function holdUntilChanged(
  request: FastifyRequest,
  reply: FastifyReply,
  held: {
    reads: () => ApiReads;
    changes: ChangeWaits;
    seconds: number;
    attempt: (fresh: boolean) => Outcome;
    since: EpochMark;
  },
): Promise<void> {
  const { reads, changes, seconds, attempt, since } = held;
  return new Promise((resolve) => {
    const recheck: Recheck = (final) => {
      let done = true;
      try {
        if (reads().orgOfKeyHash(request.caller.keySha256) !== request.caller.orgId) {
          void sendError(reply, revokedWhileWaiting);
        } else {
          if (final) releaseNotModified(reply);
          const outcome = attempt(true);
          // Never behind the position once reached; if it were, a 503 rather than an older answer.
          if (outcome === notReached && final) void sendError(reply, positionNotReached(0));
          done = final || outcome === undefined;
        }
      } catch (error) {
        void reply.send(error instanceof Error ? error : new Error(String(error)));
      }
      if (done) resolve();
      return done;
    };
    void reply.header('preference-applied', `wait=${seconds}`);
    if (changes.hold(request, reply, seconds, recheck, since)) return;
    // A bound is reached: answered at once, as if no wait had been asked.
    void reply.removeHeader('preference-applied');
    releaseNotModified(reply);
    sendNotModified(reply);
    resolve();
  });
}

/** Polls more often at first: a replica slightly behind usually catches up within milliseconds. */
const pollDelaysMs = [2, 5, 10, 20, 50];

async function waitThenAnswer(reply: FastifyReply, attempt: () => Outcome, waitMs: number): Promise<Outcome> {
  const started = performance.now();
  for (let i = 0; ; i++) {
    const left = waitMs - (performance.now() - started);
    if (left <= 0) break;
    const delay = Math.min(left, pollDelaysMs[Math.min(i, pollDelaysMs.length - 1)] ?? 50);
    await new Promise((resolve) => setTimeout(resolve, delay));
    const outcome = attempt();
    if (outcome !== notReached) return outcome;
  }
  void sendError(reply, positionNotReached(waitMs));
  return undefined;
}
