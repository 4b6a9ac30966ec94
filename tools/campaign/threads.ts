/**
 * Every request thread of a replica, looked at through a connection of its own, and the revoked
 * keys probed through all of them for the rest of the run.
 *
 * With HTTP_WORKERS = N the service's N request threads (the main thread and N − 1 others) each
 * listen on the API port with SO_REUSEPORT: the kernel hands a new connection to one of the
 * listening sockets by a hash of its addresses and ports, and every request on that keep-alive
 * connection is answered by the thread that accepted it. Which thread that is can neither be chosen
 * from outside nor read from an answer, so it is measured: a few requests are sent on the new
 * connection and the task of the process (`/proc/<pid>/task/<tid>/schedstat`, CPU time in ns) that
 * ran for them is the thread that answered. Connections are opened until every one of the N
 * threads has one (at most 6 × N tries); a connection the server closes is replaced the same way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import type { Socket } from 'node:net';
import type { Replica } from './cluster.js';

export interface TimedAnswer {
  status: number;
  /** when the request was sent and its answer read, ms (performance.now) */
  sentAt: number;
  receivedAt: number;
}

/** One keep-alive connection: every request on it reaches the same thread while the socket lasts. */
export class Pinned {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private socket: Socket | null = null;
  /** bumped whenever the agent had to open a new socket (the thread may differ then) */
  socketGeneration = 0;
  /** `main` or `thread <tid>`; null until measured */
  thread: string | null = null;

  get(url: string, key: string | undefined, timeoutMs = 3000): Promise<TimedAnswer | null> {
    return new Promise((resolve) => {
      const sentAt = performance.now();
      const req = request(
        url,
        {
          agent: this.agent,
          headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(timeoutMs),
        },
        (response) => {
          response.on('data', () => undefined);
          response.on('error', () => resolve(null));
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, sentAt, receivedAt: performance.now() }),
          );
        },
      );
      req.on('socket', (socket: Socket) => {
        if (socket === this.socket) return;
        this.socket = socket;
        this.socketGeneration += 1;
        this.thread = null;
      });
      req.on('error', () => resolve(null));
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** CPU time (ns) of every task of a process, by tid; empty when it is gone. */
function taskTimes(pid: number): Map<number, number> {
  const times = new Map<number, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const [ns] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
        times.set(Number(tid), Number(ns));
      } catch {
        // the task ended meanwhile
      }
    }
  } catch {
    // the process ended
  }
  return times;
}

/**
 * The thread that answers on `pinned`: the task that ran clearly most (twice the next one) while
 * 40 requests were answered on it, or null when none stands out (another load meanwhile).
 */
async function measureThread(pid: number, pinned: Pinned, url: string, key: string): Promise<string | null> {
  if ((await pinned.get(url, key)) === null) return null;
  const generation = pinned.socketGeneration;
  const before = taskTimes(pid);
  for (let i = 0; i < 40; i += 1) if ((await pinned.get(url, key)) === null) return null;
  const after = taskTimes(pid);
  if (pinned.socketGeneration !== generation) return null;
  const ran = [...after]
    .map(([tid, ns]) => ({ tid, ns: ns - (before.get(tid) ?? ns) }))
    .sort((a, b) => b.ns - a.ns);
  const [first, second] = ran;
  if (first === undefined || first.ns <= 2 * (second?.ns ?? 0)) return null;
  return first.tid === pid ? 'main' : `thread ${first.tid}`;
}

/** The connections of one running process of a replica, one per request thread once measured. */
export class ThreadConnections {
  readonly pinned: Pinned[] = [];
  private measuring: Promise<void> | null = null;

  constructor(
    readonly pid: number,
    private readonly threads: number,
    private readonly replica: Replica,
    /** a key that answers 200, for the measuring requests */
    private readonly key: string,
    private readonly log: (line: string) => void,
  ) {}

  /** The connections whose thread is known, one per thread. */
  ready(): Pinned[] {
    return this.pinned.filter((p) => p.thread !== null);
  }

  /** Opens connections until every request thread has one (once at a time); resolves when done. */
  cover(): Promise<void> {
    if (this.measuring !== null) return this.measuring;
    const known = new Set(this.ready().map((p) => p.thread));
    if (known.size >= this.threads && this.pinned.every((p) => p.thread !== null)) return Promise.resolve();
    this.measuring = this.measure().finally(() => (this.measuring = null));
    return this.measuring;
  }

  private async measure(): Promise<void> {
    const url = this.replica.apiUrl('/orders?limit=200');
    // a connection whose socket changed is measured again, or dropped if its thread has another
    for (const pinned of [...this.pinned]) {
      if (pinned.thread !== null) continue;
      const thread = this.threads === 1 ? 'main' : await measureThread(this.pid, pinned, url, this.key);
      const taken = this.pinned.some((p) => p !== pinned && p.thread === thread);
      if (thread === null || taken) this.drop(pinned);
      else pinned.thread = thread;
    }
    for (let tries = 0; tries < 6 * this.threads; tries += 1) {
      const known = new Set(this.ready().map((p) => p.thread));
      if (known.size >= this.threads) return;
      const pinned = new Pinned();
      const thread = this.threads === 1 ? 'main' : await measureThread(this.pid, pinned, url, this.key);
      if (thread === null || known.has(thread)) {
        pinned.close();
        continue;
      }
      pinned.thread = thread;
      this.pinned.push(pinned);
    }
    this.log(
      `[threads] ${this.replica.name} (pid ${this.pid}): ${this.ready().length} of ${this.threads} request threads reached by a connection of their own`,
    );
  }

  private drop(pinned: Pinned): void {
    pinned.close();
    this.pinned.splice(this.pinned.indexOf(pinned), 1);
  }

  close(): void {
    for (const pinned of this.pinned.splice(0)) pinned.close();
  }
}

/** What a revoked-key probe answered, through which thread. */
export interface KeyProbe extends TimedAnswer {
  keyId: string;
  via: string;
}

/**
 * Probes revoked keys every 50 ms or sooner, through every request thread of every running replica,
 * for the rest of the run: the two whose revocations the broker acknowledged last at every round,
 * and one more of the older ones in turn. Each answer goes to `seen`.
 */
export class RevokedKeyProbes {
  private readonly connections = new Map<Replica, ThreadConnections>();
  private stopped = false;
  private done: Promise<void> = Promise.resolve();
  private turn = 0;
  /** probes sent, for the report */
  count = 0;

  constructor(
    private readonly replicas: readonly Replica[],
    private readonly threads: number,
    /** revoked key ids, oldest first, with their raw keys */
    private readonly revoked: () => readonly { id: string; raw: string }[],
    private readonly measuringKey: string,
    private readonly seen: (replica: Replica, probe: KeyProbe) => void,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
    for (const connections of this.connections.values()) connections.close();
    this.connections.clear();
  }

  /** The connections to the replica's current process, opened (in the background) if need be. */
  of(replica: Replica): ThreadConnections | null {
    const pid = replica.pid;
    let connections = this.connections.get(replica) ?? null;
    if (connections !== null && connections.pid !== pid) {
      connections.close();
      this.connections.delete(replica);
      connections = null;
    }
    if (pid === null || !replica.running) return null;
    if (connections === null) {
      connections = new ThreadConnections(pid, this.threads, replica, this.measuringKey, this.log);
      this.connections.set(replica, connections);
    }
    if (replica.answered) void connections.cover();
    return connections;
  }

  /** A connection to each request thread of the replica's running process, measured now if need be. */
  async measured(replica: Replica): Promise<Pinned[]> {
    const connections = this.of(replica);
    if (connections === null) return [];
    await connections.cover();
    return connections.ready();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const began = performance.now();
      const keys = this.revoked();
      if (keys.length > 0) {
        this.turn += 1;
        const older = keys.slice(0, -2);
        const inTurn = older[this.turn % Math.max(1, older.length)];
        const round = [...keys.slice(-2), ...(inTurn === undefined ? [] : [inTurn])];
        await Promise.all(this.replicas.map((replica) => this.probe(replica, round)));
      }
      const left = 50 - (performance.now() - began);
      if (left > 0) await new Promise((wake) => setTimeout(wake, left));
    }
  }

  private async probe(replica: Replica, keys: readonly { id: string; raw: string }[]): Promise<void> {
    const connections = this.of(replica);
    if (connections === null) return;
    const url = replica.apiUrl('/orders?limit=1');
    await Promise.all(
      connections.ready().map(async (pinned) => {
        for (const key of keys) {
          const via = pinned.thread;
          const generation = pinned.socketGeneration;
          const answer = await pinned.get(url, key.raw, 2000);
          if (answer === null || via === null) return;
          this.count += 1;
          const same = pinned.socketGeneration === generation;
          this.seen(replica, { ...answer, keyId: key.id, via: same ? via : 'a reopened connection' });
        }
      }),
    );
  }
}
