-- The read model of the External Orders API at the current projection version (PROJECTION_VERSION in
-- schema.ts). A new file is created from this file alone; a file of another version is never
-- migrated in place: the service rebuilds it from the topics (docs/architecture.md, "The read model").
-- The API keys are not here: they live in the keys store, with a schema and a version of its own
-- (projections/keys/schema.sql). Files of version 4 created before the split still hold an empty
-- api_keys table, which nothing reads or writes.
--
-- Every fact table keeps, per field group, the stamp of the fact that set it: occurred_at as epoch
-- milliseconds (`*_v_at`) and the nanoseconds within that millisecond (`*_v_sub`, 0–999 999), then
-- the event id. That is what makes replays and any reordering converge (docs/events.md).

CREATE TABLE orders (
  order_id           INTEGER PRIMARY KEY,
  -- from order.created; NULL while only later facts (status, update) have been seen
  org_id             INTEGER,
  member_id          INTEGER,
  created_at_ms      INTEGER,
  -- nanoseconds of created_at within its millisecond: the listing orders by both
  created_at_sub     INTEGER,
  created_v_at       INTEGER,
  created_v_sub      INTEGER,
  created_v_id       TEXT,
  title              TEXT,
  title_v_at         INTEGER,
  title_v_sub        INTEGER,
  title_v_id         TEXT,
  distribution_ms    INTEGER,
  distribution_v_at  INTEGER,
  distribution_v_sub INTEGER,
  distribution_v_id  TEXT,
  status             TEXT,
  status_v_at        INTEGER,
  status_v_sub       INTEGER,
  status_v_id        TEXT,
  deleted_v_at       INTEGER,
  deleted_v_sub      INTEGER,
  deleted_v_id       TEXT,
  -- derived: 'finished' | 'processing' while the API lists the order, else NULL
  listed_status      TEXT CHECK (listed_status IN ('finished', 'processing'))
) STRICT;

-- One covering index serves the listing with and without a status filter: a page is read from the
-- index alone (status, title and dates are in it), walked backwards for newest first (to the
-- nanosecond, ties by id), with no sort step and no row lookups; a status filter skips the entries of
-- the other status. A second, per-status index would make every order write and every status change
-- cost another index update.
CREATE INDEX orders_listed_by_org
  ON orders (org_id, created_at_ms, created_at_sub, order_id, listed_status, distribution_ms, title)
  WHERE listed_status IS NOT NULL;

-- Listed orders per organization and external status, kept by the projection so that `total` never
-- needs COUNT(*) at request time.
CREATE TABLE org_order_counts (
  org_id        INTEGER NOT NULL,
  listed_status TEXT NOT NULL,
  orders        INTEGER NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (org_id, listed_status)
) STRICT, WITHOUT ROWID;

-- The same per UTC day of created_at. A deep offset is found by summing whole days from the newest
-- (a few hundred rows per year; see paging.ts) and stepping only within one day, instead of stepping
-- over every newer order in the index.
CREATE TABLE org_order_days (
  org_id        INTEGER NOT NULL,
  day           INTEGER NOT NULL, -- floor(created_at_ms / 86 400 000)
  listed_status TEXT NOT NULL,
  orders        INTEGER NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (org_id, day, listed_status)
) STRICT, WITHOUT ROWID;

CREATE TABLE articles (
  article_id      INTEGER PRIMARY KEY,
  order_id        INTEGER NOT NULL,
  article_url     TEXT,
  website_domain  TEXT,
  published_at_ms INTEGER,
  -- 1 when the latest fact is article.removed (a tombstone)
  removed         INTEGER NOT NULL CHECK (removed IN (0, 1)),
  v_at            INTEGER NOT NULL,
  v_sub           INTEGER NOT NULL DEFAULT 0,
  v_rank          INTEGER NOT NULL,
  v_id            TEXT NOT NULL
) STRICT;

-- Covering article index: an order's article list is read from the index alone.
CREATE INDEX articles_of_order
  ON articles (order_id, published_at_ms, article_id, article_url, website_domain)
  WHERE removed = 0;

-- Digests for conditional requests (digests.ts): the XOR of a hash of each shown row, kept in the
-- same transaction as every change, so an entity tag derived from one changes whenever the answer
-- would, without reading the answer, and is the same in every file holding the same rows. A zero
-- digest (nothing shown) has no row. Per organization: its listed orders (GET /orders).
CREATE TABLE org_digests (
  org_id INTEGER PRIMARY KEY,
  digest INTEGER NOT NULL
) STRICT;

-- Per order: the order's title and its published articles (GET /orders/{id}/articles).
CREATE TABLE order_digests (
  order_id INTEGER PRIMARY KEY,
  digest   INTEGER NOT NULL
) STRICT;

-- Next offset to read per partition, written in the same transaction as the effects.
CREATE TABLE consumer_offsets (
  topic       TEXT NOT NULL,
  partition   INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)
) STRICT, WITHOUT ROWID;

CREATE TABLE dead_letters (
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

CREATE INDEX dead_letters_by_reason ON dead_letters (reason);

CREATE TABLE projection_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
