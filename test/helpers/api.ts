import { pino, type Logger } from 'pino';
import { afterAll } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { API_PREFIX } from '../../schemas/api.js';
import { buildApp } from '../../src/http/app.js';
import { sha256Hex } from '../../src/http/auth.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { apiKeyIssued } from './events.js';
import { memoryReadModel } from './read-model.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface TestApi {
  baseUrl: string;
  get(path: string, key?: string | null, headers?: Record<string, string>): Promise<ApiResponse>;
  apply(...events: DomainEvent[]): void;
  close(): Promise<void>;
}

/** The raw key of organization `orgId` in tests, and the event that issues it. */
export const keyOf = (orgId: number): string => `test-key-of-org-${orgId}`;
export const issueKeyOf = (orgId: number, at?: string): DomainEvent =>
  apiKeyIssued(
    `test-api-key-of-org-${orgId}`,
    orgId,
    sha256Hex(keyOf(orgId)),
    at === undefined ? {} : { occurred_at: at },
  );

/**
 * The API listening on a loopback port over a read model filled by projecting
 * `events` (through the same writer the consumer uses). Closed after the file.
 */
export async function startTestApi(
  events: readonly DomainEvent[],
  options: { logger?: Logger; register?: boolean } = {},
): Promise<TestApi> {
  const model = memoryReadModel();
  model.apply(...events);
  const reader = new ReadModelReader(model.db);
  const app = await buildApp({
    readerOf: () => reader,
    logger: options.logger ?? pino({ level: 'silent' }),
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  const baseUrl = `http://127.0.0.1:${address.port}${API_PREFIX}`;
  const close = async (): Promise<void> => {
    await app.close();
    model.db.close();
  };
  if (options.register !== false) afterAll(close);
  return {
    baseUrl,
    apply: model.apply,
    close,
    async get(path, key = null, headers = {}) {
      const response = await fetch(`${baseUrl}${path}`, {
        headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers },
      });
      const text = await response.text();
      return {
        status: response.status,
        headers: response.headers,
        body: text === '' ? null : JSON.parse(text),
      };
    },
  };
}
