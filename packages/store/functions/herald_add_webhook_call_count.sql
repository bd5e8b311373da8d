-- migrations: 016
-- Adds a delta to one of the key's rows that no other transaction holds. A row of a past month
-- that comes down to 0 is deleted (retention empties old months; this month's keys go to 0 and
-- back all the time, e.g. pending).
CREATE OR REPLACE FUNCTION herald_add_webhook_call_count(hook bigint, entity text, event text, state text,
  m date, delta bigint)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
DECLARE
  target integer;
  left_ bigint;
BEGIN
  UPDATE webhook_call_counts c SET calls = c.calls + delta
  WHERE (c.webhook_id, c.entity_type, c.event_type, c.status, c.month, c.shard) = (
    SELECT s.webhook_id, s.entity_type, s.event_type, s.status, s.month, s.shard
    FROM webhook_call_counts s
    WHERE s.webhook_id = hook AND s.entity_type = entity AND s.event_type = event
      AND s.status = state AND s.month = m
    LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING c.shard, c.calls INTO target, left_;
  IF NOT FOUND THEN
    -- Every row is held by another writer: a row of our own (a random shard never collides in
    -- practice; if it does, ON CONFLICT waits for the holder instead of failing).
    INSERT INTO webhook_call_counts AS c (webhook_id, entity_type, event_type, status, month,
      shard, calls)
    VALUES (hook, entity, event, state, m, floor(random() * 2147483647)::integer, delta)
    ON CONFLICT (webhook_id, entity_type, event_type, status, month, shard) DO UPDATE SET
      calls = c.calls + EXCLUDED.calls;
  ELSIF left_ = 0 AND m < date_trunc('month', now() AT TIME ZONE 'UTC') THEN
    DELETE FROM webhook_call_counts c
    WHERE c.webhook_id = hook AND c.entity_type = entity AND c.event_type = event
      AND c.status = state AND c.month = m AND c.shard = target;
  END IF;
END
$$;
