/**
 * The projection versions this code reads: the current one, and the previous one while its
 * successor is built. A file of any other version is not read: a replica is upgraded one projection
 * version at a time (docs/operations.md, "A new projection version").
 *
 * The previous version is read by its columns (`byColumns`): what its file lacks of an answer is
 * read as NULL. Only where what it stores means something else does it need a module of its own,
 * `compat/v<N-1>.ts` (version 3's digests were change counters), listed in `modules`; a module of
 * any other version stops the load, so that it is deleted when the version after it ships.
 */
import { PROJECTION_VERSION } from '../schema.js';
import { byColumns, currentLayout, type ReadLayout } from '../sql.js';
import { v3 } from './v3.js';

export const previousVersion = PROJECTION_VERSION - 1;

/**
 * How the previous version's file is read: its module among `modules` where it has one, else by
 * its columns. A module of another version throws: it must be deleted.
 */
export function previousLayoutOf(modules: readonly ReadLayout[], version = previousVersion): ReadLayout {
  for (const module of modules) {
    if (module.version !== version) {
      throw new Error(
        `projections/orders/compat/v${module.version}.ts reads projection version ${module.version}, which this code (version ${version + 1}) no longer reads: delete it and its schema`,
      );
    }
  }
  return modules[0] ?? byColumns(version);
}

export const previousLayout = previousLayoutOf([v3]);

export const readableLayouts: readonly ReadLayout[] = [currentLayout, previousLayout];

/** How to read a file of `version`, or null when this code does not read it. */
export function readLayoutOf(version: number): ReadLayout | null {
  return readableLayouts.find((layout) => layout.version === version) ?? null;
}

/**
 * The previous version's schema as it shipped, `compat/v<N-1>.schema.sql`, for tests (the code
 * never creates such a file): bumping the version copies `schema.sql` there first.
 */
export const previousSchemaSqlFile = new URL(`./v${previousVersion}.schema.sql`, import.meta.url);
