/** What the main thread and a request thread (`request-thread.ts`) tell each other. */
import type { MessagePort } from 'node:worker_threads';
import type { ServiceConfig } from '../../config.js';
import type { ReadView } from '../../read-model/read-view.js';
import type { MetricsJson } from '../../request-metrics.js';

export interface RequestThreadData {
  /** 1, 2, …: the main thread is 0 */
  index: number;
  config: ServiceConfig;
  /** the port the main thread listens on (HTTP_PORT, or the one the system gave for 0) */
  port: number;
  view: ReadView;
  /** the published view's number (`ViewFollower`) */
  published: Int32Array;
  /** where views arrive and are acknowledged; transferred to the thread */
  viewPort: MessagePort;
  /** shared memory: the API's request count (`projector/pacing.ts`) */
  requests: Int32Array;
  /** shared memory: the rate limit's windows (`http/rate-windows.ts`) */
  rateTable: SharedArrayBuffer;
  /** shared memory: the counters of held waiting requests (`http/change-waits.ts`) */
  waitTable: SharedArrayBuffer;
}

export type ToRequestThread = { type: 'stop' } | { type: 'metrics'; id: number };

export type FromRequestThread =
  | { type: 'listening' }
  | { type: 'failed'; message: string; stack?: string }
  | { type: 'metrics'; id: number; metrics: MetricsJson }
  | { type: 'warning'; name: string; message: string };
