/**
 * What a topic must keep for the read model to be rebuilt from it: every event, for ever. The
 * projection needs every fact of an order (its creation, every update and status), not the last
 * message per key, so compaction is no replacement for it (docs/events.md).
 */

/** The topic settings that keep every event. */
export const keepEveryEvent: Readonly<Record<string, string>> = {
  'retention.ms': '-1',
  'retention.bytes': '-1',
  'cleanup.policy': 'delete',
};

/** A topic's settings that decide what it keeps, as the broker reports them (null: not reported). */
export interface TopicRetention {
  topic: string;
  settings: Readonly<Record<string, string | null>>;
}

/** The settings of `retention` that make its topic forget events, as `name=value`; empty when it keeps every one. */
export function forgetfulSettings(retention: TopicRetention): string[] {
  return Object.entries(keepEveryEvent)
    .filter(([name, keep]) => retention.settings[name] !== keep)
    .map(([name]) => `${name}=${retention.settings[name] ?? 'unknown'}`);
}

/** How `topics create` makes a topic on a real cluster. */
export interface TopicCreation {
  partitions: number;
  /** replicas of each partition (default: the broker's default) */
  replicationFactor?: number;
  /** replicas that must acknowledge a write (default: the broker's default) */
  minInsyncReplicas?: number;
}

/** The configuration entries of a topic created by `topics create`. */
export function creationEntries(creation: TopicCreation): { name: string; value: string }[] {
  const entries = { ...keepEveryEvent };
  if (creation.minInsyncReplicas !== undefined)
    entries['min.insync.replicas'] = String(creation.minInsyncReplicas);
  return Object.entries(entries).map(([name, value]) => ({ name, value }));
}
