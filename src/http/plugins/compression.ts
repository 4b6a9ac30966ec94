/**
 * Compression of successful JSON answers when the caller asks for it (`Accept-Encoding`: brotli
 * preferred, then gzip), above a size below which it saves too little to pay for itself. Settings
 * chosen from `npm run bench:compression` (bench/README.md): brotli at quality 11, its default,
 * costs tens of milliseconds per page; quality 4 is within a few per cent of its size at a small
 * fraction of the time.
 *
 * Only answers sent through `reply.compress` (`serializer.ts`) are compressed: errors and 304s
 * never are.
 */
import compress from '@fastify/compress';
import type { FastifyInstance } from 'fastify';
import { constants } from 'node:zlib';

export interface CompressionSettings {
  /** bytes of JSON below which an answer is sent as it is */
  threshold: number;
  brotliQuality: number;
  gzipLevel: number;
  /** bytes up to which an answer is compressed in one synchronous call rather than through a stream */
  syncThreshold: number;
}

export const compressionSettings: CompressionSettings = {
  threshold: 1024,
  brotliQuality: 4,
  gzipLevel: 6,
  syncThreshold: 65_536,
};

export async function compression(
  app: FastifyInstance,
  settings: CompressionSettings = compressionSettings,
): Promise<void> {
  await app.register(compress, {
    global: false,
    encodings: ['br', 'gzip'],
    threshold: settings.threshold,
    syncThreshold: settings.syncThreshold,
    brotliOptions: {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    },
    zlibOptions: { level: settings.gzipLevel },
  });
}
