-- migrations: 023
-- Whether the attempt of a lane's call may go now. Under the lane's lock:
--   'done'    it is finished, or gone (nothing to send);
--   'free'    it is in no lane: it goes as any call;
--   'busy'    another attempt claimed it less than busy_ms ago (wait_until: when that claim
--             lapses; a claim whose holder died lapses so);
--   'parked'  `sequential` and an earlier call of its lane is unfinished: it waits, parked, for
--             that call's outcome to release it;
--   'window'  its batch window is still open (wait_until: when it ends);
--   'go'      claimed: it takes no more events; event_ids are the events it carries, lane
--             its lane ('' for a batch).
CREATE OR REPLACE FUNCTION herald_claim_flow_call(call_id bigint, sequential boolean, busy_ms integer,
  OUT state text, OUT event_ids text[], OUT wait_until timestamptz, OUT lane text)
LANGUAGE plpgsql AS $$
DECLARE
  c record;
BEGIN
  SELECT w.webhook_id, w.lane, w.status, w.event_ids INTO c FROM webhook_calls w
  WHERE w.id = call_id;
  IF NOT FOUND OR c.status NOT IN ('pending', 'rescheduled') THEN
    state := 'done';
    RETURN;
  END IF;
  IF c.lane IS NULL THEN
    -- Made while the webhook had no flow control, or in no lane (tests): sent as any call.
    state := 'free';
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(herald_flow_lane_key(c.webhook_id, c.lane));
  -- Read again under the lock (each statement of this function sees what committed before it).
  SELECT w.webhook_id, w.lane, w.lane_at, w.lane_version, w.lane_seq, w.status, w.claimed_at,
    w.due_at, w.event_ids
  INTO c FROM webhook_calls w WHERE w.id = call_id;
  IF c.status NOT IN ('pending', 'rescheduled') THEN
    state := 'done';
    RETURN;
  END IF;
  IF c.claimed_at > now() - busy_ms * interval '1 millisecond' THEN
    state := 'busy';
    wait_until := c.claimed_at + busy_ms * interval '1 millisecond';
    RETURN;
  END IF;
  IF sequential AND EXISTS (
    SELECT 1 FROM webhook_calls p
    WHERE p.webhook_id = c.webhook_id AND p.lane = c.lane AND p.lane IS NOT NULL
      AND p.status IN ('pending', 'rescheduled')
      AND (p.lane_at, p.lane_version, p.lane_seq, p.id)
        < (c.lane_at, c.lane_version, c.lane_seq, call_id)
  ) THEN
    UPDATE webhook_calls w SET enqueued_at = 'infinity', held_by = NULL WHERE w.id = call_id;
    state := 'parked';
    RETURN;
  END IF;
  IF c.due_at > now() THEN
    UPDATE webhook_calls w SET enqueued_at = c.due_at, held_by = NULL WHERE w.id = call_id;
    state := 'window';
    wait_until := c.due_at;
    RETURN;
  END IF;
  UPDATE webhook_calls w SET claimed_at = now() WHERE w.id = call_id;
  state := 'go';
  event_ids := c.event_ids;
  lane := c.lane;
END
$$;
