/**
 * "Never older for a caller": one caller asks every replica in turn, as a balancer moving it
 * between them would, and always presents the newest position it was given (`X-Read-Position`).
 * Whatever replica answers 200, the answer must be no older than anything the caller saw before,
 * from any replica: the same checks as one replica's memory (`Invariants.orders`), held across
 * replicas. A replica that has not reached the position may only wait, then answer 503 with
 * Retry-After. Each answer's position must be at least the one presented (checked), so the last
 * one received is the newest the caller has seen. The same caller also waits for changes
 * (`caller-wait.ts`), through `headers` and `take`.
 */
import type { Replica } from './cluster.js';
import type { Invariants } from './invariants.js';
import { Memory } from './invariants.js';
import { givenPosition } from './positions.js';
import type { Answer } from './probe.js';
import type { Random } from './random.js';
import { getWith } from './probe.js';
import { organizations, type World } from './world.js';

export interface CallerCounts {
  /** answers checked against what the caller had seen */
  answered: number;
  /** 503s of a replica that had not reached the caller's position */
  notReached: number;
}

export type HeadersAnswer = Answer & { headers: Record<string, string | string[] | undefined> };

/** What `Caller.take` made of an answer. */
export type Taken = 'ok' | 'notReached' | 'other';

export class Caller {
  private readonly memory = new Memory();
  private position: string | null = null;
  readonly counts: CallerCounts = { answered: 0, notReached: 0 };

  constructor(
    private readonly world: World,
    private readonly invariants: Invariants,
    private readonly random: Random,
  ) {}

  /** The newest position the caller has received (what it presents), or null before any. */
  get newest(): string | null {
    return this.position;
  }

  /** A request's headers for `org`: its permanent key, and the newest position the caller has. */
  headers(org: number): Record<string, string> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.world.permanentKey(org)}` };
    if (this.position !== null) headers['x-read-position'] = this.position;
    return headers;
  }

  /** One organization's full first page from every running replica, in a random order. */
  async look(replicas: readonly Replica[]): Promise<void> {
    const org = this.random.pick(organizations);
    const order = [...replicas].sort(() => (this.random.chance(0.5) ? 1 : -1));
    for (const replica of order) {
      if (!replica.running) continue;
      const presented = this.position;
      // READ_POSITION_WAIT_MS (1 s) and the answer
      const answer = await getWith(replica.apiUrl('/orders?limit=200'), this.headers(org), 5000);
      if (answer === null) continue;
      this.take(`caller via ${replica.name}`, org, answer, presented);
    }
  }

  /**
   * An answer to a request for `org`'s full first page (`/orders?limit=200`) that presented
   * `presented`: a 503 with Retry-After is counted; a 200 or a 304 must carry a position at least
   * the one presented, which becomes the caller's; a 200's page is held to what the caller saw.
   */
  take(name: string, org: number, answer: HeadersAnswer, presented: string | null): Taken {
    if (answer.status === 503 && answer.headers['retry-after'] !== undefined) {
      this.counts.notReached += 1;
      return 'notReached';
    }
    this.invariants.permanentKeyStatus(
      name,
      `organization ${org}'s page with the caller's position ${presented ?? '(none)'}`,
      answer,
      'never older for a caller',
    );
    if (answer.status !== 200 && answer.status !== 304) return 'other';
    const given = givenPosition(answer.headers['x-read-position'], presented);
    if ('problem' in given) {
      this.invariants.violate(name, 'never older for a caller', `a ${answer.status}: ${given.problem}`);
      return 'other';
    }
    this.position = given.token;
    if (answer.status === 304) return 'ok';
    this.counts.answered += 1;
    this.invariants.orders(
      name,
      this.memory,
      org,
      answer.body as { data: { id: number; press_release_title: string }[]; total: number },
    );
    return 'ok';
  }
}
