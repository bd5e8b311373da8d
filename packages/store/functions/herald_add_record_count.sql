-- migrations: 004, 006
-- Adds a delta to one of the model's count rows that no other transaction holds.
CREATE OR REPLACE FUNCTION herald_add_record_count(env text, model text, cur bigint, pub bigint)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
BEGIN
  UPDATE record_counts c SET current_count = c.current_count + cur,
    published_count = c.published_count + pub
  WHERE (c.environment, c.item_type_id, c.shard) = (
    SELECT s.environment, s.item_type_id, s.shard FROM record_counts s
    WHERE s.environment = env AND s.item_type_id = model
    LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF NOT FOUND THEN
    -- Every row is held by another writer: a row of our own (a random shard never collides in
    -- practice; if it does, ON CONFLICT waits for the holder instead of failing).
    INSERT INTO record_counts AS c (environment, item_type_id, shard, current_count,
      published_count)
    VALUES (env, model, 1 + floor(random() * 2147483646)::integer, cur, pub)
    ON CONFLICT (environment, item_type_id, shard) DO UPDATE SET
      current_count = c.current_count + EXCLUDED.current_count,
      published_count = c.published_count + EXCLUDED.published_count;
  END IF;
END
$$;
