-- Read model of the External Orders API, projection version 1.
-- Every fact table keeps, per field group, the version (occurred_at in ms, then event_id)
-- of the fact that set it: that is what makes replays and reordering converge.

CREATE TABLE orders (
  order_id          INTEGER PRIMARY KEY,
  -- from order.created; NULL while only later facts (status, update) have been seen
  org_id            INTEGER,
  member_id         INTEGER,
  created_at_ms     INTEGER,
  created_v_at      INTEGER,
  created_v_id      TEXT,
  title             TEXT,
  title_v_at        INTEGER,
  title_v_id        TEXT,
  distribution_ms   INTEGER,
  distribution_v_at INTEGER,
  distribution_v_id TEXT,
  status            TEXT,
  status_v_at       INTEGER,
  status_v_id       TEXT,
  deleted_v_at      INTEGER,
  deleted_v_id      TEXT,
  -- derived: 'finished' | 'processing' while the API lists the order, else NULL
  listed_status     TEXT CHECK (listed_status IN ('finished', 'processing'))
) STRICT;

-- Serve `WHERE org_id = ? [AND listed_status = ?] ORDER BY created_at_ms DESC, order_id DESC`
-- by walking an index backwards: no sort step, no unlisted rows visited.
CREATE INDEX orders_listed_by_org ON orders (org_id, created_at_ms, order_id)
  WHERE listed_status IS NOT NULL;
CREATE INDEX orders_listed_by_org_status ON orders (org_id, listed_status, created_at_ms, order_id)
  WHERE listed_status IS NOT NULL;

-- Listed orders per organization and external status, kept by the projection so that
-- `total` never needs COUNT(*) at request time.
CREATE TABLE org_order_counts (
  org_id        INTEGER NOT NULL,
  listed_status TEXT NOT NULL,
  orders        INTEGER NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (org_id, listed_status)
) STRICT, WITHOUT ROWID;

CREATE TABLE articles (
  article_id      INTEGER PRIMARY KEY,
  order_id        INTEGER NOT NULL,
  article_url     TEXT,
  website_domain  TEXT,
  published_at_ms INTEGER,
  -- 1 when the latest fact is article.removed
  removed         INTEGER NOT NULL CHECK (removed IN (0, 1)),
  v_at            INTEGER NOT NULL,
  v_rank          INTEGER NOT NULL,
  v_id            TEXT NOT NULL
) STRICT;

CREATE INDEX articles_of_order ON articles (order_id, published_at_ms, article_id) WHERE removed = 0;

CREATE TABLE api_keys (
  key_id     TEXT PRIMARY KEY,
  org_id     INTEGER,
  key_sha256 TEXT,
  revoked    INTEGER NOT NULL CHECK (revoked IN (0, 1)),
  v_at       INTEGER NOT NULL,
  v_rank     INTEGER NOT NULL,
  v_id       TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX api_keys_active_by_hash ON api_keys (key_sha256) WHERE revoked = 0;

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
