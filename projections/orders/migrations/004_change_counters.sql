-- Projection version 3 (continued): change counters for conditional requests. A counter moves in
-- the same transaction as every change a response could show, so a tag derived from it changes
-- whenever the response would, without reading the response.

-- Per organization: any change to one of its listed orders (listed or unlisted, moved between
-- statuses, retitled, rescheduled): what GET /orders shows.
CREATE TABLE org_changes (
  org_id  INTEGER PRIMARY KEY,
  changes INTEGER NOT NULL
) STRICT;

-- Per order: any change to the order's row or to one of its articles: what GET /orders/{id}/articles shows.
CREATE TABLE order_changes (
  order_id INTEGER PRIMARY KEY,
  changes  INTEGER NOT NULL
) STRICT;
