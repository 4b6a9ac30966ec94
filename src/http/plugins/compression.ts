/**
 * Compression of successful JSON answers when the caller asks for it (`Accept-Encoding`: brotli
 * preferred, then gzip), above a size below which it saves too little to pay for itself. The
 * answer is compressed in one synchronous call: answers are pages of a bounded size, written whole
 * before they are sent.
 *
 * Settings chosen from `npm run bench:compression` and `npm run bench:floor` (bench/README.md):
 * brotli at quality 11, its default, costs milliseconds per page; quality 1 saves within a few
 * points of quality 4's bytes (about 80 % of a 50-order page) at a third to a half of its CPU.
 *
 * A compressed answer is kept by its encoding and entity tag, in a bounded store of each request
 * thread: a tag names one body (`conditional.ts`: the digest of what the answer shows, with every
 * parameter of the query), the rule that already lets a 304 stand for the body. A caller asking
 * again for an unchanged answer costs no compression.
 *
 * Only answers sent through `reply.compress` (`serializer.ts`) are compressed: errors and 304s
 * never are. `Vary: accept-encoding` is set here on every answer sent through it, and with the
 * validators (`conditional.ts`) on every 304.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export interface CompressionSettings {
  /** bytes of JSON below which an answer is sent as it is */
  threshold: number;
  brotliQuality: number;
  gzipLevel: number;
  /** bytes of compressed answers a request thread keeps by tag (0: none kept) */
  keptBytes: number;
}

export const compressionSettings: CompressionSettings = {
  threshold: 1024,
  brotliQuality: 1,
  gzipLevel: 1,
  keptBytes: 4 * 1024 * 1024,
};

export type Encoding = 'br' | 'gzip';

declare module 'fastify' {
  interface FastifyReply {
    /** Sends `json`, compressed as the request's `Accept-Encoding` asks when it is large enough. */
    compress(json: string): FastifyReply;
  }
}

/** The q-value of one list member's parameters (`;q=0.5`), 1 when absent, 0 when malformed. */
function qualityOf(parameters: string): number {
  const match = /(?:^|;)\s*q\s*=\s*([0-9.]+)\s*(?:;|$)/i.exec(parameters);
  if (match === null) return /(?:^|;)\s*q\s*=/i.test(parameters) ? 0 : 1;
  const q = Number(match[1]);
  return Number.isFinite(q) && q >= 0 && q <= 1 ? q : 0;
}

/**
 * The encoding an `Accept-Encoding` value asks for (RFC 9110 §12.5.3): the accepted one of the
 * highest weight, brotli on a tie, named or through `*`; none when neither is acceptable.
 */
export function acceptedEncoding(header: string | undefined): Encoding | undefined {
  if (header === undefined || header === '') return undefined;
  const named: Partial<Record<Encoding | '*', number>> = {};
  for (const member of header.split(',')) {
    const semicolon = member.indexOf(';');
    const coding = (semicolon < 0 ? member : member.slice(0, semicolon)).trim().toLowerCase();
    const name = coding === 'x-gzip' ? 'gzip' : coding;
    if (name !== 'br' && name !== 'gzip' && name !== '*') continue;
    const q = semicolon < 0 ? 1 : qualityOf(member.slice(semicolon + 1));
    named[name] = Math.max(named[name] ?? 0, q);
  }
  const br = named.br ?? named['*'] ?? 0;
  const gzip = named.gzip ?? named['*'] ?? 0;
  if (br > 0 && br >= gzip) return 'br';
  return gzip > 0 ? 'gzip' : undefined;
}

/** Header values already read: callers send the same few. Values longer than a browser's are not kept. */
const known = new Map<string, Encoding | undefined>();
const knownMax = { entries: 64, length: 256 };

function encodingOf(header: string | undefined): Encoding | undefined {
  if (header === undefined) return undefined;
  if (known.has(header)) return known.get(header);
  const encoding = acceptedEncoding(header);
  if (header.length <= knownMax.length) {
    if (known.size >= knownMax.entries) known.clear();
    known.set(header, encoding);
  }
  return encoding;
}

/** The compressors of the settings: one call each, the size hint letting brotli size its window. */
export function compressors(settings: CompressionSettings): Record<Encoding, (body: Buffer) => Buffer> {
  return {
    br: (body) =>
      brotliCompressSync(body, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality,
          [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        },
      }),
    gzip: (body) => gzipSync(body, { level: settings.gzipLevel }),
  };
}

/**
 * Compressed bodies by key, at most `maxBytes` of them: the least recently used go first. A body
 * larger than the bound is not kept.
 */
export class KeptBodies {
  private readonly bodies = new Map<string, Buffer>();
  private bytes = 0;
  constructor(private readonly maxBytes: number) {}

  get(key: string): Buffer | undefined {
    const body = this.bodies.get(key);
    if (body !== undefined) {
      this.bodies.delete(key);
      this.bodies.set(key, body);
    }
    return body;
  }

  /**
   * Keeps a copy of `body` in memory of its own: a compressed buffer of node:zlib is a view of a far
   * larger one (64 KiB behind a few hundred bytes), which would be held, uncounted, with it.
   */
  set(key: string, body: Buffer): void {
    const cost = body.length + key.length;
    if (cost > this.maxBytes || this.bodies.has(key)) return;
    const own = Buffer.allocUnsafeSlow(body.length);
    body.copy(own);
    for (const [oldest, old] of this.bodies) {
      if (this.bytes + cost <= this.maxBytes) break;
      this.bodies.delete(oldest);
      this.bytes -= old.length + oldest.length;
    }
    this.bodies.set(key, own);
    this.bytes += cost;
  }

  get size(): { entries: number; bytes: number } {
    return { entries: this.bodies.size, bytes: this.bytes };
  }
}

export function compression(app: FastifyInstance, settings: CompressionSettings = compressionSettings): void {
  const compress = compressors(settings);
  const kept = new KeptBodies(settings.keptBytes);
  app.decorateReply('compress', function (this: FastifyReply, json: string): FastifyReply {
    // the answer depends on Accept-Encoding whether or not it is compressed (an answer with no tag too)
    void this.header('vary', 'accept-encoding');
    const encoding = encodingOf(this.request.headers['accept-encoding']);
    if (encoding === undefined || Buffer.byteLength(json) < settings.threshold) return this.send(json);
    void this.header('content-encoding', encoding);
    const tag = this.getHeader('etag');
    if (typeof tag !== 'string') return this.send(compress[encoding](Buffer.from(json)));
    const key = `${encoding} ${tag}`;
    let body = kept.get(key);
    if (body === undefined) {
      body = compress[encoding](Buffer.from(json));
      kept.set(key, body);
    }
    return this.send(body);
  });
}
