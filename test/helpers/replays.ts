/** Replay threads for tests of the catch-up above the thread. */
import type { CatchUpOptions } from '../../src/lifecycle/catch-up.js';
import { ReplayFailed } from '../../src/projector/replay-thread.js';

/** A replay that never moves until aborted, or fails at once. */
export function stuckReplays(started: { aborted: boolean }[], failAtOnce = false): CatchUpOptions['start'] {
  return () => {
    const record = { aborted: false };
    started.push(record);
    let fail: (error: Error) => void = () => undefined;
    const done = new Promise<never>((_, reject) => (fail = reject));
    done.catch(() => undefined);
    if (failAtOnce) fail(new ReplayFailed('the broker is unreachable'));
    return {
      done,
      progress: () => null,
      abort: async () => {
        record.aborted = true;
        fail(new ReplayFailed('rebuild aborted', 'REBUILD_ABORTED'));
        await Promise.resolve();
      },
      terminate: () => Promise.resolve(),
    };
  };
}
