/** Time as the lifecycle sees it: real in the service, driven by hand in tests. */
export interface Clock {
  now(): number;
  /** resolves after `ms`, or at once when `wake` fires */
  sleep(ms: number, wake?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, wake) =>
    new Promise<void>((resolve) => {
      if (wake?.aborted === true) {
        resolve();
        return;
      }
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        wake?.removeEventListener('abort', done);
        resolve();
      }
      wake?.addEventListener('abort', done, { once: true });
    }),
};
