import { readdirSync, readlinkSync, realpathSync } from 'node:fs';

/**
 * How many descriptors this process holds open on `file` (Linux: `/proc/self/fd`): a connection a
 * function opened and left open shows here, though nothing else in one process observes it.
 */
export function descriptorsOn(file: string): number {
  const target = realpathSync(file);
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === target) count += 1;
    } catch {
      // closed while the directory was read (readdirSync's own descriptor)
    }
  }
  return count;
}
