/**
 * Reading a file of projection version 3, the version before this one, while its successor is
 * built (a rolling upgrade): the same tables as version 4 but for the digests, where version 3 kept
 * change counters (`org_changes`, `order_changes`). Counters of two files may be equal while their
 * answers differ, so a tag from such a file names the file. Its schema as it shipped is
 * `v3.schema.sql`, which the tests create such a file from.
 *
 * The rule (projections/README.md): the code reads the current version and the previous one only.
 * This module and `v3.schema.sql` are deleted when version 5 ships (a test fails until they are:
 * `staleModules` in `readable.ts`); version 4 is then read by its columns.
 */
import { readSqlFor, type ReadLayout } from '../read-sql.js';

export const v3: ReadLayout = {
  version: 3,
  sqlFor: (file) => ({
    ...readSqlFor(file),
    orgDigest: `SELECT coalesce((SELECT changes FROM org_changes WHERE org_id = ?), 0) AS digest`,
    orderDigest: `SELECT coalesce((SELECT changes FROM order_changes WHERE order_id = ?), 0) AS digest`,
  }),
  tagNamesFile: true,
};
