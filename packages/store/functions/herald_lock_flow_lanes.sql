-- migrations: 023
-- Takes the locks of the lanes of `call_ids` (those in a lane), in key order.
CREATE OR REPLACE FUNCTION herald_lock_flow_lanes(call_ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  FOR k IN
    SELECT DISTINCT herald_flow_lane_key(c.webhook_id, c.lane) FROM webhook_calls c
    WHERE c.id = ANY(call_ids) AND c.lane IS NOT NULL ORDER BY 1
  LOOP
    PERFORM pg_advisory_xact_lock(k);
  END LOOP;
END
$$;

-- Takes the locks of lanes given by (webhook, lane), in key order (placing new events).
CREATE OR REPLACE FUNCTION herald_lock_flow_lanes(webhooks bigint[], lanes text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  k bigint;
BEGIN
  FOR k IN
    SELECT DISTINCT herald_flow_lane_key(l.w, l.lane) FROM unnest(webhooks, lanes) AS l(w, lane)
    ORDER BY 1
  LOOP
    PERFORM pg_advisory_xact_lock(k);
  END LOOP;
END
$$;
