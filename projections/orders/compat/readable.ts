/**
 * The projection versions this code reads: the current one, and the previous one while its
 * successor is built (`compat/v<N-1>.ts`). A file of any other version is not read: a replica is
 * upgraded one projection version at a time (docs/operations.md, "A new projection version").
 */
import { currentLayout, type ReadLayout } from '../sql.js';
import { v3 } from './v3.js';

export const readableLayouts: readonly ReadLayout[] = [currentLayout, v3];

/** How to read a file of `version`, or null when this code does not read it. */
export function readLayoutOf(version: number): ReadLayout | null {
  return readableLayouts.find((layout) => layout.version === version) ?? null;
}
