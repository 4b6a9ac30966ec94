/**
 * What a projector subscribes to, derived from the stream registry (`schemas/streams.ts`): an
 * orders model's projector reads every stream of the orders store, the keys store's consumer every
 * stream of the keys store (`keysStoreRoles`). `test/schemas/streams.unit.test.ts` holds what the
 * service's consumers subscribe to, together, to every declared stream.
 */
import { inFetchOrder, orderModelRoles, streams, type TopicRole } from '../../schemas/streams.js';

/** What a projector reads: a rebuild part's streams, else the streams it is given, else an orders model's. */
export function projectorRoles(spec: {
  part?: { roles: readonly TopicRole[] } | undefined;
  roles?: readonly TopicRole[] | undefined;
}): readonly TopicRole[] {
  return spec.part?.roles ?? spec.roles ?? orderModelRoles;
}

/** Whether a projector of `roles` feeds the keys store: never paced, at the process's priority, synchronous = FULL. */
export function feedsKeys(roles: readonly TopicRole[]): boolean {
  return roles.some((role) => streams[role].store === 'keys');
}

/** The topics a consumption of `roles` subscribes to, in fetch order (`fetchRank`). */
export function subscribedTopics(topics: Record<TopicRole, string>, roles: readonly TopicRole[]): string[] {
  return inFetchOrder(roles).map((role) => topics[role]);
}
