/**
 * The projection versions this code reads: the current one, and the previous one while its
 * successor is built. A file of any other version is not read: a replica is upgraded one projection
 * version at a time (docs/operations.md, "A new projection version").
 *
 * The previous version is read by its columns (`byColumns`): what its file lacks of an answer is
 * read as NULL. Only where what it stores means something else does it need a module of its own,
 * `compat/v<N-1>.ts` (version 3's digests were change counters), listed in `compatModules`; a
 * module of any other version is not used, and a test fails until it is deleted.
 */
import { PROJECTION_VERSION } from '../schema.js';
import { byColumns, currentLayout, type ReadLayout } from '../read-sql.js';
import { v3 } from './v3.js';

export const previousVersion = PROJECTION_VERSION - 1;

/** The modules of versions whose stored meaning differs from what their columns say. */
export const compatModules: readonly ReadLayout[] = [v3];

/**
 * How the previous version's file is read: its module among `modules` where it has one, else by
 * its columns. A module of any other version is not used (`staleModules`).
 */
export function previousLayoutOf(modules: readonly ReadLayout[], version = previousVersion): ReadLayout {
  return modules.find((module) => module.version === version) ?? byColumns(version);
}

/**
 * The modules of versions this code no longer reads: each must be deleted with its schema.
 * `test/read-model/compat-previous-version.unit.test.ts` fails while one is left.
 */
export function staleModules(modules: readonly ReadLayout[], version = previousVersion): string[] {
  return modules
    .filter((module) => module.version !== version)
    .map((module) => `projections/orders/compat/v${module.version}.ts`);
}

export const previousLayout = previousLayoutOf(compatModules);

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
