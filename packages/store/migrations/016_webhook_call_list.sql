-- The call log at scale (issue #14): meta.total_count of GET /webhook_calls without count(*).
-- count(*) over 10 million calls cost 0.6 s a request; these counts make it a sum of a few rows.
--
-- webhook_call_counts: how many calls there are per (webhook, entity type, event type, status,
-- month of created_at), kept by statement-level triggers in the statements that insert, update
-- and delete calls, so every path (the match worker, outcomes, drops, a webhook's deletion,
-- retention, an event's cascade) counts, in the same transaction as the change: a snapshot sees
-- counts that agree with the calls it sees. A filter of GET /webhook_calls on those columns only
-- (or none) sums the rows of its keys: exact.
--
-- Like record_counts (006), a key's count is the sum of its rows (shards): a statement adds its
-- delta to a row no other transaction holds (SKIP LOCKED) or to a new row when all are held, so
-- the delivery workers' outcome statements never wait for each other on a counter row (the
-- contention that moved the stats rollups out of those statements), and a key has as many rows
-- as writers that ever overlapped on it.
--
-- `month` keeps the counts right when webhook_calls is partitioned by month later: dropping a
-- month's partition fires no trigger, and deleting that month's rows here (in the same
-- transaction) is the matching change. It also bounds a created_at range (total_count above the
-- cap of the exact count, store/webhook-calls.ts).
CREATE TABLE webhook_call_counts (
  webhook_id  bigint NOT NULL,
  entity_type text NOT NULL,
  event_type  text NOT NULL,
  status      text NOT NULL,
  -- The first day of created_at's month, in UTC.
  month       date NOT NULL,
  shard       integer NOT NULL,
  calls       bigint NOT NULL,
  PRIMARY KEY (webhook_id, entity_type, event_type, status, month, shard)
);

-- Adds a delta to one of the key's rows that no other transaction holds. A row of a past month
-- that comes down to 0 is deleted (retention empties old months; this month's keys go to 0 and
-- back all the time, e.g. pending).
CREATE FUNCTION herald_add_webhook_call_count(hook bigint, entity text, event text, state text,
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

-- One call per key and statement, whatever the batch size. An UPDATE that changes no status
-- (most of them: enqueued_at, held_by, the attempt's fields) adds nothing.
CREATE FUNCTION herald_count_webhook_calls() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  d record;
BEGIN
  IF TG_OP = 'INSERT' THEN
    FOR d IN
      SELECT webhook_id, entity_type, event_type, status,
        date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, count(*) AS calls
      FROM new_calls GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    LOOP
      PERFORM herald_add_webhook_call_count(d.webhook_id, d.entity_type, d.event_type, d.status,
        d.month, d.calls);
    END LOOP;
  ELSIF TG_OP = 'DELETE' THEN
    FOR d IN
      SELECT webhook_id, entity_type, event_type, status,
        date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, count(*) AS calls
      FROM old_calls GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    LOOP
      PERFORM herald_add_webhook_call_count(d.webhook_id, d.entity_type, d.event_type, d.status,
        d.month, -d.calls);
    END LOOP;
  ELSE
    -- A call that changed key (its status, in practice: the other columns are not updated)
    -- leaves the old one and joins the new one.
    FOR d IN
      SELECT x.webhook_id, x.entity_type, x.event_type, x.status, x.month,
        sum(x.calls)::bigint AS calls
      FROM old_calls o JOIN new_calls n ON n.id = o.id
        AND (n.status, n.webhook_id, n.entity_type, n.event_type, n.created_at)
          IS DISTINCT FROM (o.status, o.webhook_id, o.entity_type, o.event_type, o.created_at)
      CROSS JOIN LATERAL (VALUES
        (o.webhook_id, o.entity_type, o.event_type, o.status,
         date_trunc('month', o.created_at AT TIME ZONE 'UTC')::date, -1),
        (n.webhook_id, n.entity_type, n.event_type, n.status,
         date_trunc('month', n.created_at AT TIME ZONE 'UTC')::date, 1))
        AS x (webhook_id, entity_type, event_type, status, month, calls)
      GROUP BY 1, 2, 3, 4, 5
      HAVING sum(x.calls) <> 0
      ORDER BY 1, 2, 3, 4, 5
    LOOP
      PERFORM herald_add_webhook_call_count(d.webhook_id, d.entity_type, d.event_type, d.status,
        d.month, d.calls);
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER webhook_calls_count_insert AFTER INSERT ON webhook_calls
  REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE TRIGGER webhook_calls_count_update AFTER UPDATE ON webhook_calls
  REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE TRIGGER webhook_calls_count_delete AFTER DELETE ON webhook_calls
  REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();

-- The calls already logged. The triggers above already hold a lock that keeps writers out until
-- this migration commits, so no call is counted twice or missed.
INSERT INTO webhook_call_counts (webhook_id, entity_type, event_type, status, month, shard, calls)
SELECT webhook_id, entity_type, event_type, status,
  date_trunc('month', created_at AT TIME ZONE 'UTC')::date, 0, count(*)
FROM webhook_calls GROUP BY 1, 2, 3, 4, 5;

-- The status filter in the default order (created_at): a status's calls are read in that order
-- instead of all of them being sorted (pending, failed: 5,000 and 100,000 of 10 million calls in
-- bench/calls). Replaces (status, id), which no statement needed beyond that.
DROP INDEX webhook_calls_status;
CREATE INDEX webhook_calls_status ON webhook_calls (status, created_at, id);

-- Test calls (event_id NULL) by themselves: the event and entity filters also match the event a
-- test call carries. Few rows, and no entry at all for the calls events make.
CREATE INDEX webhook_calls_tests ON webhook_calls (id) WHERE event_id IS NULL;

-- One webhook's calls in a created_at range (the console's view of a webhook: the last hour, the
-- last day), counted and paged without reading the webhook's other calls. (webhook_id, id)
-- stays: it is the order webhook_id_asc/desc.
CREATE INDEX webhook_calls_webhook_created_at ON webhook_calls (webhook_id, created_at, id);
