-- The keys store (DATA_DIR/keys-v<KEYS_STORE_VERSION>.sqlite) at the current keys store version
-- (KEYS_STORE_VERSION in schema.ts), apart from the orders model's schema and version. A new store is
-- created from this file alone; a store of another version is never migrated in place: a successor is
-- built beside it from the keys topic (docs/architecture.md, "The keys store").
--
-- consumer_offsets, dead_letters and projection_meta have the same layout as in the orders model's
-- schema: the writer, the CLI and the snapshot keep their positions, dead letters and version with
-- the same statements. Every statement here says IF NOT EXISTS, so that tests and tools can add the
-- keys to a file of the orders model and keep both in one file (`openOneFileModel`).

-- Only the SHA-256 of a key is ever stored. The stamp of the fact that set the row: occurred_at as
-- epoch milliseconds, the nanoseconds within it, a rank letting a revocation win ties, the event id.
CREATE TABLE IF NOT EXISTS api_keys (
  key_id     TEXT PRIMARY KEY,
  org_id     INTEGER,
  key_sha256 TEXT,
  revoked    INTEGER NOT NULL CHECK (revoked IN (0, 1)),
  v_at       INTEGER NOT NULL,
  v_sub      INTEGER NOT NULL DEFAULT 0,
  v_rank     INTEGER NOT NULL,
  v_id       TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS api_keys_active_by_hash ON api_keys (key_sha256) WHERE revoked = 0;

-- Next offset to read per partition of the keys topic, written in the same transaction as the effects.
CREATE TABLE IF NOT EXISTS consumer_offsets (
  topic       TEXT NOT NULL,
  partition   INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)
) STRICT, WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dead_letters (
  id           INTEGER PRIMARY KEY,
  topic        TEXT NOT NULL,
  partition    INTEGER NOT NULL,
  "offset"     INTEGER NOT NULL,
  message_key  BLOB,
  raw_value    BLOB,
  reason       TEXT NOT NULL,
  detail       TEXT NOT NULL,
  recorded_at  TEXT NOT NULL,
  UNIQUE (topic, partition, "offset")
) STRICT;

CREATE INDEX IF NOT EXISTS dead_letters_by_reason ON dead_letters (reason);

-- The keys store version (as `projection_version`, the key every store file records its version
-- under, so that a store of the projection version 4 before the split reads as keys store version 4)
-- and the ids of the topics it was built from.
CREATE TABLE IF NOT EXISTS projection_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
