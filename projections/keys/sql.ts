/**
 * The SQL that writes and reads the keys store's table, `api_keys`. src/ prepares and executes
 * these; its positions, dead letters and version are kept with the orders model's statements
 * (`orders/sql.ts`: `writeSql.selectOffsets`, `upsertOffset`, `insertDeadLetter`, `metaSql`), the
 * tables being the same in both schemas.
 */
import { apiKeyColumns } from './rows.js';
import { keysColumnsAdded } from './schema.js';

/** What the keys consumer's writer reads and writes. */
export const keysWriteSql = {
  /** The rows of the ids in a JSON array: a batch reads its rows with one statement. */
  selectApiKeys: `SELECT ${apiKeyColumns.join(', ')} FROM api_keys WHERE key_id IN (SELECT value FROM json_each(?))`,
  /** Parameters: the values of `apiKeyColumns`, in that order (an in-place upsert). */
  upsertApiKey:
    `INSERT INTO api_keys (${apiKeyColumns.join(', ')}) VALUES (${apiKeyColumns.map(() => '?').join(', ')}) ` +
    `ON CONFLICT (key_id) DO UPDATE SET ${apiKeyColumns
      .slice(1)
      .map((c) => `${c} = excluded.${c}`)
      .join(', ')}`,
} as const;

/** What authentication reads of a key: every column but its hash. */
const readColumns = apiKeyColumns.filter((column) => column !== 'key_sha256');

/**
 * What authentication reads (`src/keys/`): a key by its hash, and by its id, from a store whose
 * `api_keys` has `columns` (`PRAGMA table_info`). The predecessor of a new keys store version
 * answers beside it until it is retired: a column `lackable` names (`keysColumnsAdded`) is read as
 * NULL where the store lacks it, and a store lacking any other column is refused (throws).
 */
export function keysSqlFor(columns?: ReadonlySet<string>, lackable: readonly string[] = keysColumnsAdded) {
  const lacked = readColumns.filter((column) => columns !== undefined && !columns.has(column));
  const refused = lacked.filter((column) => !lackable.includes(column));
  if (refused.length > 0) {
    throw new Error(
      `the keys store lacks api_keys.${refused.join(', api_keys.')}, which no keys store version added (keysColumnsAdded): it cannot be read`,
    );
  }
  const keyColumns = readColumns
    .map((column) => (lacked.includes(column) ? `NULL AS ${column}` : column))
    .join(', ');
  return {
    activeKeyByHash: `SELECT ${keyColumns} FROM api_keys WHERE key_sha256 = ? AND revoked = 0 LIMIT 1`,
    keyById: `SELECT ${keyColumns} FROM api_keys WHERE key_id = ?`,
    /** What the operator's `status` counts. */
    activeKeys: `SELECT count(*) AS activeKeys FROM api_keys WHERE revoked = 0`,
  } as const;
}

/** The current keys store version's statements, every column read as it is. */
export const keysSql = keysSqlFor();
