/**
 * The request threads beside the main thread (HTTP_WORKERS − 1 of them): started on the main
 * thread's port, told every view the lifecycle publishes, asked for their request metrics, and
 * restarted with backoff when one dies. A view is settled once every listening thread answers
 * from it (one still starting opens the newest view before its first answer); a thread that does
 * not within `settleTimeoutMs` is ended (and restarted), so that no thread ever answers from a file
 * the lifecycle has retired. Their request metrics are gathered by `thread-metrics.ts`.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { backoffDelay, type Backoff } from '../../backoff.js';
import type { ServiceConfig } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { ReadView, ViewSink } from '../../read-model/read-view.js';
import type { MetricsJson } from '../../request-metrics.js';
import type { ViewAck, ViewMessage } from './view-follower.js';
import type { FromRequestThread, RequestThreadData, ToRequestThread } from './messages.js';
import { ThreadMetrics } from './thread-metrics.js';
import { clearWaitRegion } from '../wait-counts.js';

const threadUrl = import.meta.url.endsWith('.js')
  ? new URL('./request-thread.js', import.meta.url)
  : new URL('./request-thread.mjs', import.meta.url);

/** How long a thread may take to follow a view before it is ended. */
const settleTimeoutMs = 5000;
/** How long a stop waits for a thread to finish its requests before ending it. */
const stopTimeoutMs = 5000;
/** Delays before starting a thread that died again: doubling from 1 s, at most 10 s. */
const restart = { initialMs: 1000, maxMs: 10_000 } satisfies Backoff;

interface RequestThread {
  index: number;
  worker: Worker;
  viewPort: MessagePort;
  /** the view it has acknowledged answering from; 0 before its first */
  following: number;
  listening: boolean;
  /** its request metrics at the last scrape it answered */
  lastMetrics: MetricsJson | null;
}

export interface RequestThreadsOptions {
  /** threads beside the main thread */
  count: number;
  config: ServiceConfig;
  logger: Logger;
  requests: Int32Array;
  rateTable: SharedArrayBuffer;
  waitTable: SharedArrayBuffer;
  /** the view to start a thread with */
  view: () => ReadView;
}

export class RequestThreads implements ViewSink {
  private readonly published = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  private readonly threads = new Map<number, RequestThread>();
  private readonly waiting = new Set<() => void>();
  private readonly restartTimers = new Set<NodeJS.Timeout>();
  /** restarts in a row of each thread, for its backoff; a thread that listens starts over */
  private readonly failures = new Map<number, number>();
  private stopping = false;
  private readonly metrics = new ThreadMetrics();
  /** threads started again after dying */
  restarts = 0;

  constructor(private readonly options: RequestThreadsOptions) {}

  /** Starts every thread on `port` (the main thread's); rejects if one cannot listen. */
  async start(port: number): Promise<void> {
    this.port = port;
    const started = [];
    for (let index = 1; index <= this.options.count; index++) started.push(this.spawn(index));
    await Promise.all(started);
  }

  /** the port the main thread listens on, once it does */
  private port = 0;

  /** Threads answering now. */
  size(): number {
    return [...this.threads.values()].filter((thread) => thread.listening).length;
  }

  publish(view: ReadView): void {
    for (const thread of this.threads.values())
      thread.viewPort.postMessage({ type: 'view', view } satisfies ViewMessage);
    // After the posts: a thread that sees the number moved finds the view already on its port.
    Atomics.store(this.published, 0, view.seq);
  }

  async settled(): Promise<void> {
    const seq = Atomics.load(this.published, 0);
    // A thread still starting opens the newest view it has received before its first answer, and
    // compares the number before every read: it never answers from an older one.
    const behind = (): RequestThread[] =>
      [...this.threads.values()].filter((t) => t.listening && t.following < seq);
    if (behind().length === 0) return;
    const timer = setInterval(() => {
      for (const thread of behind()) {
        this.options.logger.error(
          { thread: thread.index, view: seq, following: thread.following },
          'a request thread did not follow the served model in time; it is ended and started again',
        );
        void thread.worker.terminate();
      }
    }, settleTimeoutMs);
    await new Promise<void>((resolve) => {
      const check = (): void => {
        if (behind().length > 0) return;
        this.waiting.delete(check);
        resolve();
      };
      this.waiting.add(check);
      check();
    });
    clearInterval(timer);
  }

  /** Every thread's request metrics (`ThreadMetrics`). */
  collectMetrics(): Promise<MetricsJson[]> {
    return this.metrics.collectAll(
      [...this.threads.values()],
      (thread) => this.threads.get(thread.index) === thread,
    );
  }

  /** Ends a thread as a crash would (fault tests). */
  async terminate(index: number): Promise<void> {
    await this.threads.get(index)?.worker.terminate();
  }

  /** Stops every thread after its in-flight requests. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.restartTimers) clearTimeout(timer);
    await Promise.all(
      [...this.threads.values()].map(async (thread) => {
        const exited = new Promise((resolve) => thread.worker.once('exit', resolve));
        thread.worker.postMessage({ type: 'stop' } satisfies ToRequestThread);
        // in-flight requests are answered within this; a thread that hangs is ended
        const hung = setTimeout(() => void thread.worker.terminate(), stopTimeoutMs);
        await exited;
        clearTimeout(hung);
      }),
    );
  }

  private spawn(index: number): Promise<void> {
    const { config, requests, rateTable, waitTable, logger } = this.options;
    const port = this.port;
    const channel = new MessageChannel();
    const view = this.options.view();
    const worker = new Worker(threadUrl, {
      workerData: {
        index,
        config,
        port,
        view,
        published: this.published,
        viewPort: channel.port2,
        requests,
        rateTable,
        waitTable,
      } satisfies RequestThreadData,
      transferList: [channel.port2],
      // Not the parent's flags: a test runner's loader flags must not reach the thread.
      execArgv: [],
      // A request's garbage is short-lived: the main thread's young generation (--max-semi-space-size=4)
      resourceLimits: { maxYoungGenerationSizeMb: 12 },
    });
    const thread: RequestThread = {
      index,
      worker,
      viewPort: channel.port1,
      following: 0,
      listening: false,
      lastMetrics: null,
    };
    this.threads.set(index, thread);
    channel.port1.on('message', (ack: ViewAck) => {
      thread.following = Math.max(thread.following, ack.seq);
      for (const check of [...this.waiting]) check();
    });
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (message: FromRequestThread) => {
        if (message.type === 'listening') {
          thread.listening = true;
          this.failures.delete(index);
          resolve();
        } else if (message.type === 'failed') {
          const error = new Error(`request thread ${index} failed: ${message.message}`);
          if (message.stack !== undefined) error.stack = message.stack;
          logger.error({ err: error, thread: index }, 'a request thread failed');
          reject(error);
        } else if (message.type === 'warning') {
          process.emitWarning(message.message, message.name);
        }
      });
      worker.on('error', (error: Error) => {
        logger.error({ err: error, thread: index }, 'a request thread failed');
        reject(error);
      });
      worker.on('exit', (code) => {
        channel.port1.close();
        this.threads.delete(index);
        // Whatever it held is answered by nobody now: its places are free again.
        clearWaitRegion(waitTable, index);
        this.metrics.ended(thread);
        for (const check of [...this.waiting]) check();
        reject(new Error(`request thread ${index} exited with code ${code} while starting`));
        if (this.stopping) return;
        this.restartLater(index, code);
      });
    });
  }

  private restartLater(index: number, code: number): void {
    const failures = this.failures.get(index) ?? 0;
    const delay = backoffDelay(restart, failures);
    this.failures.set(index, failures + 1);
    this.options.logger.error(
      { thread: index, exitCode: code, restartInMs: delay },
      'a request thread ended; it is started again',
    );
    const timer = setTimeout(() => {
      this.restartTimers.delete(timer);
      if (this.stopping) return;
      this.restarts += 1;
      this.spawn(index).catch(() => undefined);
    }, delay);
    this.restartTimers.add(timer);
  }
}
