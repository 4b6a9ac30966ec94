-- Projection version 3: timestamps compared and ordered at the precision the publisher gives, up to
-- nanoseconds. Each version and created_at keep their epoch milliseconds and gain the nanoseconds
-- within that millisecond (`*_sub`, 0–999 999): two facts of one field group within the same
-- millisecond are ordered by time, not by event id.
ALTER TABLE orders ADD COLUMN created_at_sub INTEGER;
ALTER TABLE orders ADD COLUMN created_v_sub INTEGER;
ALTER TABLE orders ADD COLUMN title_v_sub INTEGER;
ALTER TABLE orders ADD COLUMN distribution_v_sub INTEGER;
ALTER TABLE orders ADD COLUMN status_v_sub INTEGER;
ALTER TABLE orders ADD COLUMN deleted_v_sub INTEGER;
ALTER TABLE articles ADD COLUMN v_sub INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN v_sub INTEGER NOT NULL DEFAULT 0;

-- The listing orders by created_at to the nanosecond, ties by id.
DROP INDEX orders_listed_by_org;
CREATE INDEX orders_listed_by_org
  ON orders (org_id, created_at_ms, created_at_sub, order_id, listed_status, distribution_ms, title)
  WHERE listed_status IS NOT NULL;
