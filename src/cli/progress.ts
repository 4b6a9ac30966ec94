/** Progress of long work: a bar on a TTY, periodic log lines otherwise. */
import { SingleBar, Presets } from 'cli-progress';
import type { Logger } from '../logger.js';

export interface ProgressReporter {
  update(done: number, total: number, extra?: Record<string, number>): void;
  stop(): void;
}

export function progressReporter(
  label: string,
  logger: Logger,
  unit: string,
  intervalMs = 5000,
): ProgressReporter {
  if (process.stderr.isTTY) {
    const bar = new SingleBar(
      {
        format: `${label} {bar} {percentage}% | {value}/{total} ${unit} | {speed} ${unit}/s | ETA {eta_formatted} | dead letters {deadLetters}`,
        stream: process.stderr,
        etaBuffer: 50,
      },
      Presets.shades_classic,
    );
    let started = false;
    const startedAt = Date.now();
    return {
      update(done, total, extra = {}) {
        const speed = Math.round(done / Math.max(0.001, (Date.now() - startedAt) / 1000));
        if (!started) {
          bar.start(total, done, { speed, deadLetters: 0, ...extra });
          started = true;
        } else {
          bar.setTotal(total);
          bar.update(done, { speed, ...extra });
        }
      },
      stop() {
        if (started) bar.stop();
      },
    };
  }
  let last = 0;
  const startedAt = Date.now();
  return {
    update(done, total, extra = {}) {
      const now = Date.now();
      if (now - last < intervalMs && done < total) return;
      last = now;
      const seconds = (now - startedAt) / 1000;
      const rate = done / Math.max(0.001, seconds);
      logger.info(
        {
          done,
          total,
          percent: total === 0 ? 100 : Math.round((done / total) * 1000) / 10,
          unit,
          perSecond: Math.round(rate),
          etaSeconds: rate > 0 ? Math.round((total - done) / rate) : null,
          ...extra,
        },
        `${label} progress`,
      );
    },
    stop() {
      // nothing to tidy for log lines
    },
  };
}
