-- What GET /items (API.md §3) needs beyond the record store of 002: value helpers that field
-- filters, sorts and their lazily created expression indexes share (functions/herald_timestamptz.sql,
-- functions/herald_numeric.sql), and an exact per-model count.

-- Exact counts of top-level records per model and version, so that an unfiltered listing's
-- meta.total_count is one primary-key read instead of a count over a million rows. Kept by
-- statement-level triggers (one upsert per statement and model, whatever the batch size), so the
-- store's write path needs no change (functions/herald_count_records.sql, applied with this
-- migration). Blocks are not counted (listings never return them unfiltered).
CREATE TABLE record_counts (
  environment     text NOT NULL,
  item_type_id    text NOT NULL,
  current_count   bigint NOT NULL DEFAULT 0,
  published_count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (environment, item_type_id)
);

-- The records already stored. The lock keeps writers out until the triggers, made in this
-- migration's transaction, count theirs (the lock their creation takes would come too late).
LOCK TABLE records IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO record_counts (environment, item_type_id, current_count, published_count)
SELECT environment, item_type_id, count(current_attributes), count(published_attributes)
FROM records WHERE NOT is_block GROUP BY environment, item_type_id;

-- Tree models: meta.has_children and filter[fields][parent_id] look records up by parent.
CREATE INDEX records_by_parent ON records (environment, parent_id) WHERE parent_id IS NOT NULL;
