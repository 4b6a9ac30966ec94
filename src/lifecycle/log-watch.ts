/**
 * Whether the topics can still rebuild the read model: each topic's retention settings and each
 * partition's log start, checked at start and with every lag measure. A topic that forgets events,
 * or a log that no longer starts where a build must read it, is a warning in `/readyz` and a metric,
 * with the command that fixes it. It does not make the replica unready by itself: the served model
 * still holds every event it has applied and answers correctly, and every replica reads the same
 * topics, so unready would take the whole API away for a risk to the next build. What does stop a
 * model, a build that would miss history, is refused where every build starts (`kafka/history.ts`):
 * the served projector is then down and the replica unready, with the same remedy.
 */
import { describeGap, historyGaps, type AcceptedLoss, type HistoryGap } from '../kafka/history.js';
import type { PartitionEnds } from '../kafka/port.js';
import { forgetfulSettings, type TopicRetention } from '../kafka/retention.js';
import type { Logger } from '../logger.js';

export interface LogReport {
  /** topics that forget events, with the settings that make them */
  forgetful: { topic: string; settings: string[] }[];
  /** partitions whose log no longer starts where a build from nothing must read it (and no acceptance covers) */
  lost: HistoryGap[];
  /** every partition's log start, as measured */
  starts: PartitionEnds[];
}

export interface LogWatchOptions {
  topicRetention: (topics: readonly string[]) => Promise<TopicRetention[]>;
  acceptedLosses: () => readonly AcceptedLoss[];
  logger: Logger;
  checked?: (report: LogReport) => void;
}

export class LogWatch {
  private report: LogReport | null = null;
  /** the warnings last logged, so that each is logged once while it lasts */
  private logged = '';

  constructor(private readonly options: LogWatchOptions) {}

  /** The lifecycle's log watch; null when its options give no way to read the topics' settings. */
  static of(options: {
    topicRetention?: LogWatchOptions['topicRetention'];
    files: { acceptedLosses: () => readonly AcceptedLoss[] };
    logger: Logger;
    events?: { logChecked?: (report: LogReport) => void };
  }): LogWatch | null {
    const { topicRetention, files, logger, events } = options;
    if (topicRetention === undefined) return null;
    return new LogWatch({
      topicRetention,
      acceptedLosses: () => files.acceptedLosses(),
      logger,
      ...(events?.logChecked === undefined ? {} : { checked: events.logChecked }),
    });
  }

  private checking = false;

  /** Starts a check unless one is under way (it never fails: `check` logs what went wrong). */
  checkInBackground(topics: readonly string[], ends: readonly PartitionEnds[]): void {
    if (this.checking) return;
    this.checking = true;
    void this.check(topics, ends).finally(() => (this.checking = false));
  }

  /** Checks the topics' settings and `ends`' log starts; a broker that does not answer keeps the last report. */
  async check(topics: readonly string[], ends: readonly PartitionEnds[]): Promise<void> {
    let retention: TopicRetention[];
    let accepted: readonly AcceptedLoss[];
    try {
      retention = await this.options.topicRetention(topics);
      accepted = this.options.acceptedLosses();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'the topics’ retention settings could not be read');
      return;
    }
    const report: LogReport = {
      forgetful: retention
        .map((r) => ({ topic: r.topic, settings: forgetfulSettings(r) }))
        .filter((r) => r.settings.length > 0),
      lost: historyGaps(ends, () => undefined, accepted),
      starts: [...ends],
    };
    this.report = report;
    this.options.checked?.(report);
    const warnings = this.warnings();
    const text = warnings.join('\n');
    if (text !== this.logged && warnings.length > 0)
      this.options.logger.warn({ warnings }, 'the topics cannot rebuild the read model as they are');
    this.logged = text;
  }

  /** What `/readyz` says of the topics, one line each; empty while they keep everything a build needs. */
  warnings(): string[] {
    const report = this.report;
    if (report === null) return [];
    return [
      ...report.forgetful.map(
        (topic) =>
          `${topic.topic} forgets events (${topic.settings.join(', ')}), and a rebuild needs every one; run: topics retain (docs/operations.md, "A topic that forgets")`,
      ),
      ...report.lost.map(
        (gap) => `a rebuild, a version change or a new replica would be refused: ${describeGap(gap)}`,
      ),
    ];
  }
}
