/** How the peer is built: as a first version would be, or as a team that measured it would build it. */
export type PeerDesign = 'naive' | 'competent';

export const peerDesigns: readonly PeerDesign[] = ['naive', 'competent'];

/**
 * The peer's tables in PostgreSQL: the same projection as the service's (EVENTS.md), laid out the way
 * a team on PostgreSQL would lay it out. Never part of the product (bench/README, "PostgreSQL peer").
 *
 * Instants are epoch milliseconds (bigint) with the nanoseconds within the millisecond beside them
 * where order matters: the contract compares facts and orders pages to the nanosecond and spans the
 * years 0000–9999, and `timestamptz` holds microseconds and has no year 0.
 *
 * Every field group of an order keeps the version of the fact that set it (`*_v_ms`, `*_v_sub`,
 * `*_v_id`); `listed_status` is derived by PostgreSQL itself. Event ids compare byte-wise (`COLLATE "C"`),
 * as the service compares them.
 *
 * The two designs share the tables; they differ in their indexes and in the counts the competent one
 * keeps (`org_order_counts`, written in each batch's transaction), so that a page's total is one row
 * read instead of a count of the organization's orders.
 */
const tablesSql = `
CREATE TABLE IF NOT EXISTS orders (
  order_id           bigint PRIMARY KEY,
  org_id             bigint,
  member_id          bigint,
  created_ms         bigint,
  created_sub        integer,
  created_v_ms       bigint,
  created_v_sub      integer,
  created_v_id       text COLLATE "C",
  title              text,
  title_v_ms         bigint,
  title_v_sub        integer,
  title_v_id         text COLLATE "C",
  distribution_ms    bigint,
  distribution_v_ms  bigint,
  distribution_v_sub integer,
  distribution_v_id  text COLLATE "C",
  status             text,
  status_v_ms        bigint,
  status_v_sub       integer,
  status_v_id        text COLLATE "C",
  deleted_v_ms       bigint,
  deleted_v_sub      integer,
  deleted_v_id       text COLLATE "C",
  -- listed while created, not deleted at or after its creation, and in a listed status
  listed_status      text GENERATED ALWAYS AS (
    CASE WHEN created_v_ms IS NOT NULL
          AND (deleted_v_ms IS NULL OR (deleted_v_ms, deleted_v_sub) < (created_v_ms, created_v_sub))
    THEN CASE status
      WHEN 'finished' THEN 'finished'
      WHEN 'publishing' THEN 'processing'
      WHEN 'publishing_ended' THEN 'processing'
    END END) STORED
);

CREATE TABLE IF NOT EXISTS articles (
  article_id     bigint PRIMARY KEY,
  order_id       bigint NOT NULL,
  article_url    text,
  website_domain text,
  published_ms   bigint,
  removed        boolean NOT NULL,
  v_ms           bigint NOT NULL,
  v_sub          integer NOT NULL,
  v_rank         smallint NOT NULL,
  v_id           text COLLATE "C" NOT NULL
);

CREATE TABLE IF NOT EXISTS api_keys (
  key_id     text PRIMARY KEY,
  org_id     bigint,
  key_sha256 text,
  revoked    boolean NOT NULL,
  v_ms       bigint NOT NULL,
  v_sub      integer NOT NULL,
  v_rank     smallint NOT NULL,
  v_id       text COLLATE "C" NOT NULL
);

CREATE INDEX IF NOT EXISTS api_keys_active ON api_keys (key_sha256) WHERE NOT revoked;

-- The next offset per partition, written in the transaction of the batch that reached it.
CREATE TABLE IF NOT EXISTS consumer_offsets (
  topic       text NOT NULL,
  partition   integer NOT NULL,
  next_offset bigint NOT NULL,
  PRIMARY KEY (topic, partition)
);

CREATE TABLE IF NOT EXISTS dead_letters (
  topic       text NOT NULL,
  partition   integer NOT NULL,
  "offset"    bigint NOT NULL,
  message_key bytea,
  raw_value   bytea,
  reason      text NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (topic, partition, "offset")
);
`;

const naiveIndexesSql = `
-- Newest-first pages of an organization's listed orders, and their total.
CREATE INDEX IF NOT EXISTS orders_listed_newest
  ON orders (org_id, created_ms DESC, created_sub DESC, order_id DESC)
  WHERE listed_status IS NOT NULL;

-- The same per status: pages filtered by status, and the totals by status.
CREATE INDEX IF NOT EXISTS orders_listed_by_status_newest
  ON orders (org_id, listed_status, created_ms DESC, created_sub DESC, order_id DESC)
  WHERE listed_status IS NOT NULL;

-- The articles of an order, newest first.
CREATE INDEX IF NOT EXISTS articles_of_order
  ON articles (order_id, published_ms DESC, article_id DESC)
  WHERE NOT removed;
`;

/**
 * Covering indexes: each holds every column its statement returns (INCLUDE), so that a page or an
 * order's articles is read by an index-only scan, without a heap fetch per row once VACUUM has set
 * the visibility map.
 */
const competentIndexesSql = `
CREATE INDEX IF NOT EXISTS orders_listed_newest_covering
  ON orders (org_id, created_ms DESC, created_sub DESC, order_id DESC)
  INCLUDE (title, listed_status, distribution_ms)
  WHERE listed_status IS NOT NULL;

CREATE INDEX IF NOT EXISTS orders_listed_by_status_newest_covering
  ON orders (org_id, listed_status, created_ms DESC, created_sub DESC, order_id DESC)
  INCLUDE (title, distribution_ms)
  WHERE listed_status IS NOT NULL;

-- The order of an articles request: its organization and title without the row.
CREATE INDEX IF NOT EXISTS orders_listed_by_id_covering
  ON orders (order_id) INCLUDE (org_id, title)
  WHERE listed_status IS NOT NULL;

CREATE INDEX IF NOT EXISTS articles_of_order_covering
  ON articles (order_id, published_ms DESC, article_id DESC)
  INCLUDE (article_url, website_domain)
  WHERE NOT removed;

-- Listed orders per organization and listed status, kept by the batch that changes them.
CREATE TABLE IF NOT EXISTS org_order_counts (
  org_id        bigint NOT NULL,
  listed_status text NOT NULL,
  n             bigint NOT NULL,
  PRIMARY KEY (org_id, listed_status)
);
`;

export function peerSchemaSql(design: PeerDesign): string {
  return tablesSql + (design === 'naive' ? naiveIndexesSql : competentIndexesSql);
}
