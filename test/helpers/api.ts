import { pino, type Logger } from 'pino';
import { afterAll } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { API_PREFIX } from '../../schemas/api.js';
import { buildApp } from '../../src/http/app.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { apiKeyIssued } from './events.js';
import { memoryReadModel } from './read-model.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface TestApi {
  /** the listening address (with `listen: true` only; the rule tests need no socket) */
  baseUrl: string;
  /** GET `path` under the API prefix, through `app.inject` */
  get(path: string, key?: string | null, headers?: Record<string, string>): Promise<ApiResponse>;
  /** GET an absolute path (outside the API prefix), through `app.inject` */
  getRaw(path: string, key?: string | null): Promise<ApiResponse>;
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
 * The API over a read model filled by projecting `events` (through the same writer the consumer
 * uses), answering through `app.inject`: no socket, no broker. `listen: true` also opens a loopback
 * port (`baseUrl`) for tests that need real HTTP. Closed after the file.
 */
export async function startTestApi(
  events: readonly DomainEvent[],
  options: {
    logger?: Logger;
    register?: boolean;
    listen?: boolean;
    /** remember digests and report each `apply` as a commit, as the service does: what waiting requests wake on */
    followCommits?: boolean;
  } = {},
): Promise<TestApi> {
  const model = memoryReadModel();
  model.apply(...events);
  const reader = new ReadModelReader(model.db, { cacheChanges: options.followCommits === true });
  const reads = apiReadsOfOneFile(reader);
  const app = await buildApp({
    readerOf: () => reads,
    logger: options.logger ?? pino({ level: 'silent' }),
  });
  let baseUrl = '';
  if (options.listen === true) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    baseUrl = `http://127.0.0.1:${address.port}${API_PREFIX}`;
  }
  const getRaw = async (path: string, key: string | null = null, headers: Record<string, string> = {}) => {
    const response = await app.inject({
      method: 'GET',
      url: path,
      headers: { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...headers },
    });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined)
        answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : String(value));
    }
    return {
      status: response.statusCode,
      headers: answerHeaders,
      body: response.body === '' ? null : (JSON.parse(response.body) as unknown),
    };
  };
  const close = async (): Promise<void> => {
    await app.close();
    model.db.close();
  };
  if (options.register !== false) afterAll(close);
  return {
    baseUrl,
    apply: (...events) => {
      model.apply(...events);
      reader.forgetChanges();
    },
    close,
    get: (path, key = null, headers = {}) => getRaw(`${API_PREFIX}${path}`, key, headers),
    getRaw: (path, key = null) => getRaw(path, key),
  };
}
