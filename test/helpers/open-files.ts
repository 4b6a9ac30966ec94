import { existsSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';

/**
 * How many descriptors this process holds open on `file`, removed or not (Linux: `/proc/self/fd`):
 * a connection a function opened and left open shows here, though nothing else in one process
 * observes it. SQLite keeps a closed connection's descriptor while another connection of the
 * process has the file open: count with no other connection open.
 */
export function descriptorsOn(file: string): number {
  const target = existsSync(file) ? realpathSync(file) : file;
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      if (link === target || link === `${target} (deleted)`) count += 1;
    } catch {
      // closed while the directory was read (readdirSync's own descriptor)
    }
  }
  return count;
}
