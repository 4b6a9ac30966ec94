/**
 * The position of a fact in "last writer wins": when it happened upstream, to
 * the nanosecond when the publisher gives that much, then, for facts removing an entity, a rank that lets removal win ties, then
 * the event id. Comparing stamps is all convergence needs.
 */
export interface FactStamp {
  /** occurred_at in epoch milliseconds (floor) */
  at: number;
  /** nanoseconds of occurred_at within that millisecond (0–999 999): comparisons use the precision given */
  sub: number;
  /** 1 for removals (article.removed, api_key.revoked), which win over facts with the same `at` */
  rank: 0 | 1;
  id: string;
}

export function compareStamps(a: FactStamp, b: FactStamp): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1;
  if (a.sub !== b.sub) return a.sub < b.sub ? -1 : 1;
  if (a.rank !== b.rank) return a.rank - b.rank;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** True when `candidate` should replace `current` (absent values always lose). */
export function supersedes(candidate: FactStamp, current: FactStamp | null): boolean {
  return current === null || compareStamps(candidate, current) > 0;
}
