-- migrations: 023, 024
-- After outcomes of `call_ids` were recorded (in the same transaction): in each of their lanes,
-- the first unfinished call, if parked, is released (due now and held by `holder`, or at the end
-- of its batch window) and returned, for a job to be enqueued once this commits. Held by
-- `holder` in a lane no event can join (its webhook now neither coalesces nor batches), it is
-- claimed too (`claimed`).
-- Its return type changed (migration 024), which CREATE OR REPLACE cannot do.
DROP FUNCTION IF EXISTS herald_release_flow_lanes(bigint[], text);
CREATE OR REPLACE FUNCTION herald_release_flow_lanes(call_ids bigint[], holder text DEFAULT NULL)
RETURNS TABLE (id bigint, webhook_id bigint, due_at timestamptz, event_id text,
  event_ids text[], claimed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  l record;
  h record;
  held boolean;
BEGIN
  FOR l IN
    -- Every lane, whatever the webhook's settings now: a lane parked while it was ordered is
    -- released all the same (the claim decides again with the settings of the moment).
    SELECT DISTINCT herald_flow_lane_key(c.webhook_id, c.lane) AS k, c.webhook_id AS w, c.lane
    FROM webhook_calls c
    WHERE c.id = ANY(call_ids) AND c.lane IS NOT NULL
    ORDER BY 1
  LOOP
    PERFORM pg_advisory_xact_lock(l.k);
    SELECT c.id, c.enqueued_at, c.due_at, c.event_id, c.event_ids INTO h FROM webhook_calls c
    WHERE c.webhook_id = l.w AND c.lane = l.lane AND c.lane IS NOT NULL
      AND c.status IN ('pending', 'rescheduled')
    ORDER BY c.lane_at, c.lane_version, c.lane_seq, c.id LIMIT 1;
    IF FOUND AND h.enqueued_at = 'infinity' THEN
      -- Due now, it is held by `holder` (the process that recorded the outcome attempts it in
      -- memory; if that process dies, its lease runs out and the sweeper takes the call over).
      held := holder IS NOT NULL AND (h.due_at IS NULL OR h.due_at <= now());
      claimed := held AND l.lane <> '' AND EXISTS (
        SELECT 1 FROM webhooks w WHERE w.id = l.w AND NOT w.coalesce_events AND w.batch IS NULL);
      UPDATE webhook_calls c SET enqueued_at = greatest(now(), coalesce(h.due_at, now())),
        held_by = CASE WHEN held THEN holder END,
        claimed_at = CASE WHEN claimed THEN now() ELSE c.claimed_at END
      WHERE c.id = h.id;
      id := h.id;
      webhook_id := l.w;
      due_at := h.due_at;
      event_id := h.event_id;
      event_ids := h.event_ids;
      RETURN NEXT;
    END IF;
  END LOOP;
END
$$;
