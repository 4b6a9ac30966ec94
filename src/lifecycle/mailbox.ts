/**
 * One queue of commands, handled one at a time: a command that awaits is never overtaken by
 * another, so the lifecycle needs no flag guarding against a method running twice. A command posted
 * while none is pending starts at once, in the caller's tick (a timer's or a test's synchronous
 * call sees its effect); one posted meanwhile, a command's own posts included, waits for those
 * before it.
 */
export class Mailbox {
  /** settles once every command posted so far has ended; never rejects */
  private tail: Promise<unknown> = Promise.resolve();
  /** commands posted and not ended yet */
  private pending = 0;

  constructor(private readonly onError: (command: string, error: unknown) => void) {}

  /** Handles `command` after those before it; the promise settles as the command does. */
  post<T>(name: string, command: () => T | Promise<T>): Promise<T> {
    this.pending += 1;
    if (this.pending > 1) {
      const result = this.tail.then(command);
      this.tail = result.then(
        () => this.ended(),
        (error: unknown) => this.ended(name, error),
      );
      return result;
    }
    // Whatever the command posts while it runs waits for it to end.
    let end: () => void = () => undefined;
    this.tail = new Promise<void>((resolve) => (end = resolve));
    let value: T | Promise<T>;
    try {
      value = command();
    } catch (error) {
      this.ended(name, error);
      end();
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    if (!(value instanceof Promise)) {
      this.ended();
      end();
      return Promise.resolve(value);
    }
    value.then(
      () => {
        this.ended();
        end();
      },
      (error: unknown) => {
        this.ended(name, error);
        end();
      },
    );
    return value;
  }

  /** Posts a command whose outcome nobody awaits; a failure is reported, never unhandled. */
  send(name: string, command: () => unknown): void {
    this.post(name, command).catch(() => undefined);
  }

  private ended(name?: string, error?: unknown): void {
    this.pending -= 1;
    if (name !== undefined) this.onError(name, error);
  }
}
