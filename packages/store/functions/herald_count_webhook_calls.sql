-- migrations: 016, 021
-- One call per key and statement, whatever the batch size. An UPDATE that changes no status
-- (most of them: enqueued_at, held_by, the attempt's fields) adds nothing.
CREATE OR REPLACE FUNCTION herald_count_webhook_calls() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  d record;
  -- What an INSERT wrote counts up, what a DELETE removed counts down: both triggers name their
  -- transition table changed_calls.
  sign int := CASE TG_OP WHEN 'DELETE' THEN -1 ELSE 1 END;
BEGIN
  IF TG_OP IN ('INSERT', 'DELETE') THEN
    FOR d IN
      SELECT webhook_id, entity_type, event_type, status,
        date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, count(*) AS calls
      FROM changed_calls GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    LOOP
      PERFORM herald_add_webhook_call_count(d.webhook_id, d.entity_type, d.event_type, d.status,
        d.month, sign * d.calls);
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

-- On webhook_calls (partitioned by 021: a partition cannot have them).
CREATE OR REPLACE TRIGGER webhook_calls_count_insert AFTER INSERT ON webhook_calls
  REFERENCING NEW TABLE AS changed_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE OR REPLACE TRIGGER webhook_calls_count_update AFTER UPDATE ON webhook_calls
  REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE OR REPLACE TRIGGER webhook_calls_count_delete AFTER DELETE ON webhook_calls
  REFERENCING OLD TABLE AS changed_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
