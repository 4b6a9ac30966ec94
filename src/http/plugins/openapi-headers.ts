/**
 * The headers the OpenAPI document states (`openapi.ts`), as the plugins and helpers every secured,
 * conditional route goes through send them. New objects per use: the document is assembled by mutation.
 */

export interface HeaderObject {
  description: string;
  schema: { type: 'string'; const?: string; enum?: string[] };
}

/** The validators every endpoint sends, on 200 and on 304 (`conditional.ts`); new objects per use. */
export const validatorHeaders = (): Record<string, HeaderObject> => ({
  ETag: {
    description:
      'Weak entity tag of the answer, derived from the projection version, a digest of every field the answer shows and what the request selects, the organization included. It depends on the data alone: every replica holding the same data gives the same tag. Send it back in `If-None-Match`.',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description: 'The answer may be kept by the caller only, and revalidated before each use.',
    schema: { type: 'string', const: 'private, no-cache' },
  },
});

/** What compression (`compression.ts`) sets: `Vary` on every 200 and 304, `Content-Encoding` when it compressed. */
export const varyHeader = (): Record<string, HeaderObject> => ({
  Vary: {
    description:
      'The answer depends on `Accept-Encoding` (compressed or not), so that a shared cache keeps one copy per encoding.',
    schema: { type: 'string', const: 'accept-encoding' },
  },
});

export const compressionHeaders = (): Record<string, HeaderObject> => ({
  'Content-Encoding': {
    description:
      'Present when the answer is compressed: an answer of 1 024 bytes or more, when `Accept-Encoding` accepts brotli (`br`, preferred) or gzip. `Content-Length` is then the compressed size.',
    schema: { type: 'string', enum: ['br', 'gzip'] },
  },
  ...varyHeader(),
});

/** The budget headers of every answer to a known key while `RATE_LIMIT_MAX` is set (`rate-limit.ts`). */
export const rateLimitHeaders = (): Record<string, HeaderObject> => ({
  'X-RateLimit-Limit': {
    description:
      'While the service limits requests (`RATE_LIMIT_MAX` > 0): requests one API key may make per window. Absent when there is no limit.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Remaining': {
    description:
      'Requests left to this key in the current window. A 304 Not Modified answer is not counted, and a 429 leaves 0.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Reset': {
    description: 'When the current window ends, in UTC epoch seconds (GitHub’s convention).',
    schema: { type: 'string' },
  },
});

export const retryAfter = (): Record<string, HeaderObject> => ({
  'Retry-After': {
    description: 'Seconds until the window ends and the key may make requests again.',
    schema: { type: 'string' },
  },
});

const positionDescription =
  'The position of the replica’s model the answer was read from (what it had applied of every topic partition), as an opaque token of a few dozen characters.';

/** What every answer read from the model carries (`position.ts`). */
export const positionHeaders = (): Record<string, HeaderObject> => ({
  'X-Read-Position': {
    description: `${positionDescription} Send the newest one received back in \`X-Read-Position\` so that no replica answers from an older model.`,
    schema: { type: 'string' },
  },
});

export const readPosition = (): object => ({
  in: 'header',
  name: 'X-Read-Position',
  required: false,
  description: `${positionDescription} A token received before (at most 4 096 characters): the replica answers only once it has applied at least as much, waiting up to \`READ_POSITION_WAIT_MS\` (1 s by default), else 503 with \`Retry-After\`; never an older answer. Or, from a publisher, the records its producer had acknowledged: \`topic=<name>;partition=<n>;offset=<n>\`, several comma-separated, answered once the model has applied each of them (a topic the model is not read from: 400). Without it, a replica answers from what it has, which may be older than what another replica answered before. A token this API did not give is answered 400.`,
  schema: { type: 'string' },
});

export const retryPosition = (): Record<string, HeaderObject> => ({
  'Retry-After': {
    description: 'Seconds after which to try again (this replica or another).',
    schema: { type: 'string' },
  },
});

/** Sent on every answer, errors included (`observability.ts`, and the 431 written before any request). */
export const requestIdHeader = (): Record<string, HeaderObject> => ({
  'X-Request-Id': {
    description:
      'The id of the request in the service’s logs: the caller’s own `X-Request-Id` when it is 1–64 letters, digits, `_`, `.` or `-`, else a new UUID.',
    schema: { type: 'string' },
  },
});

export const requestId = (): object => ({
  in: 'header',
  name: 'X-Request-Id',
  required: false,
  description:
    'An id for this request in the service’s logs, echoed on the answer; anything but 1–64 letters, digits, `_`, `.` or `-` is replaced by a new UUID.',
  // no pattern: the server takes any value (and replaces what it does not keep), so a client should too
  schema: { type: 'string' },
});

export const wwwAuthenticate = (): Record<string, HeaderObject> => ({
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: a bearer API key.',
    schema: { type: 'string', const: 'Bearer' },
  },
});

export const ifNoneMatch = (): object => ({
  in: 'header',
  name: 'If-None-Match',
  required: false,
  description:
    'An ETag received before (a list of tags and `*` are accepted, compared weakly): when it names the current tag, the answer is 304 with no body.',
  schema: { type: 'string' },
});

/** A waiting request (`change-waits.ts`): the preference, and what was applied of it. */
export const preferWait = (): object => ({
  in: 'header',
  name: 'Prefer',
  required: false,
  description:
    '`wait=N` (RFC 7240), with `If-None-Match`: while the named tag is current, the answer waits until the tag changes (then 200 with the new answer) or N seconds pass (then 304), at most `WAIT_MAX_SECONDS` (60 s by default). `Preference-Applied` says the seconds applied; without it, the request was not held (no `If-None-Match`, waiting off, or the bounds of held requests per key or in total reached).',
  schema: { type: 'string' },
});

export const preferenceApplied = (): Record<string, HeaderObject> => ({
  'Preference-Applied': {
    description: '`wait=N`: the request was held for a change up to N seconds (`Prefer: wait`).',
    schema: { type: 'string' },
  },
});
