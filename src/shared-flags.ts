/**
 * Flags in shared memory between the threads of one process: the request thread counts requests,
 * the lifecycle tells a generation's projector whether to give way to them, and the projector
 * threads read both (`projector/pacing.ts`). Here, apart from all three, so none imports another
 * for them.
 */

/** A counter in shared memory: the request thread adds one per request, projector threads read it. */
export function newRequestCounter(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

export function countRequest(counter: Int32Array): void {
  Atomics.add(counter, 0, 1);
}

/** A flag in shared memory, set by the lifecycle and read by the projector of one generation. */
export function newGiveWayFlag(on: boolean): Int32Array {
  const flag = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
  setGiveWay(flag, on);
  return flag;
}

export function givesWay(flag: Int32Array): boolean {
  return Atomics.load(flag, 0) === 1;
}

/** Sets or clears the flag; clearing it also ends a pause under way (`pause`). */
export function setGiveWay(flag: Int32Array, on: boolean): void {
  Atomics.store(flag, 0, on ? 1 : 0);
  Atomics.notify(flag, 0);
}
