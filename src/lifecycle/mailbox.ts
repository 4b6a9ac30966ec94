/**
 * One queue of commands, handled one at a time: a command that awaits is never overtaken by
 * another, so the lifecycle needs no flag guarding against a method running twice. A command posted
 * while none is pending starts at once, in the caller's tick (a timer's or a test's synchronous
 * call sees its effect); one posted meanwhile waits for those before it.
 */
export class Mailbox {
  /** settles once every command posted so far has ended */
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  constructor(private readonly onError: (command: string, error: unknown) => void) {}

  /** Handles `command` after those before it; the promise settles as the command does. */
  post<T>(name: string, command: () => T | Promise<T>): Promise<T> {
    if (this.pending > 0) return this.track(name, this.tail.then(command));
    this.pending = 1;
    let value: T | Promise<T>;
    try {
      value = command();
    } catch (error) {
      this.pending = 0;
      this.onError(name, error);
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (!(value instanceof Promise)) {
      this.pending = 0;
      return Promise.resolve(value);
    }
    this.pending = 0;
    return this.track(name, value);
  }

  private track<T>(name: string, result: Promise<T>): Promise<T> {
    this.pending += 1;
    this.tail = result
      .catch((error: unknown) => this.onError(name, error))
      .finally(() => (this.pending -= 1));
    return result;
  }

  /** Posts a command whose outcome nobody awaits; a failure is reported, never unhandled. */
  send(name: string, command: () => unknown): void {
    this.post(name, command).catch(() => undefined);
  }
}
