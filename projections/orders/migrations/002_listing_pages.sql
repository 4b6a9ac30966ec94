-- Projection version 2: listing pages touch no table rows, and deep offsets cost about what
-- shallow ones do.

-- One covering index serves the listing with and without a status filter: a page is read from
-- the index alone (status, title and dates are in it), walked backwards for newest first with ties
-- by id, with no sort step and no row lookups; a status filter skips the entries of the other
-- status. A second, per-status index would make every order write and every status change cost
-- another index update, and the writer's page cache hold another index.
DROP INDEX orders_listed_by_org;
DROP INDEX orders_listed_by_org_status;
CREATE INDEX orders_listed_by_org
  ON orders (org_id, created_at_ms, order_id, listed_status, distribution_ms, title)
  WHERE listed_status IS NOT NULL;

-- Listed orders per organization, UTC day of created_at and external status, kept by the
-- projection with org_order_counts. A deep offset is found by summing whole days from the newest
-- (a few hundred rows per year) and stepping only within one day, instead of stepping over every
-- newer order in the index.
CREATE TABLE org_order_days (
  org_id        INTEGER NOT NULL,
  day           INTEGER NOT NULL, -- floor(created_at_ms / 86 400 000)
  listed_status TEXT NOT NULL,
  orders        INTEGER NOT NULL CHECK (orders >= 0),
  PRIMARY KEY (org_id, day, listed_status)
) STRICT, WITHOUT ROWID;

-- Covering article index: an order's article list is read from the index alone.
DROP INDEX articles_of_order;
CREATE INDEX articles_of_order
  ON articles (order_id, published_at_ms, article_id, article_url, website_domain)
  WHERE removed = 0;
