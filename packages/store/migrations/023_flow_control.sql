-- Flow control (extension, issue #15; docs/api.md, Flow control; docs/architecture.md, Ordered,
-- coalesced and batched calls).
--
-- A webhook may ask for its calls of one entity in event order (delivery_order 'per_entity'),
-- for a newer event to replace the payload of a call still waiting (coalesce_events), and for
-- the events of a window to go out as one call (batch: {"window_ms", "max_events"}).
ALTER TABLE webhooks
  ADD COLUMN delivery_order text NOT NULL DEFAULT 'any'
    CHECK (delivery_order IN ('any', 'per_entity')),
  ADD COLUMN coalesce_events boolean NOT NULL DEFAULT false,
  ADD COLUMN batch jsonb;

-- The calls of such a webhook are in lanes: one per (webhook, entity) — 'item:<id>', or the
-- entity type alone for events that name no entity — or, for a batched webhook, one per webhook
-- (''). lane is NULL for every other call (and for tests, resends' own calls, replays).
-- A call's place in its lane is the producer's order of its latest event: lane_at (occurred_at),
-- lane_version (meta.current_version as records.version_key orders it; '' when none), lane_seq
-- (the order events were accepted in). event_ids lists the events a call carries, in that order;
-- entry_keys, for a batch, the entities its payload lists (one each when it coalesces). due_at is
-- when a batch's window ends. claimed_at is set while an attempt may be in flight: a call then
-- takes no more events, and a second attempt waits.
--
-- A call waiting for the calls before it in its lane is parked: enqueued_at 'infinity' (the
-- sweeper's clock never runs out) and held by no process. The outcome that finishes a lane's
-- first call un-parks the next, in the same transaction (herald_release_flow_lanes).
ALTER TABLE webhook_calls
  ADD COLUMN lane text,
  ADD COLUMN lane_at timestamptz,
  ADD COLUMN lane_version text COLLATE "C",
  ADD COLUMN lane_seq bigint,
  ADD COLUMN event_ids text[],
  ADD COLUMN entry_keys text[],
  ADD COLUMN due_at timestamptz,
  ADD COLUMN claimed_at timestamptz;

-- A lane's calls still to deliver, in order: its first (may it go?), its last (may it take
-- another event?).
CREATE INDEX webhook_calls_lane_waiting
  ON webhook_calls (webhook_id, lane, lane_at, lane_version, lane_seq, id)
  WHERE lane IS NOT NULL AND status IN ('pending', 'rescheduled');
-- A lane's calls in order whatever their status: the latest one sent (is an event too late?).
CREATE INDEX webhook_calls_lane
  ON webhook_calls (webhook_id, lane, lane_at, lane_version, lane_seq)
  WHERE lane IS NOT NULL;

-- The order batches are opened in (lane_seq of a batch; its lane_at is the epoch): taken under
-- the lane's lock, so a batch opened later always comes after, whichever clock its process has.
CREATE SEQUENCE herald_flow_batch_order;

-- The calls that carry an event (GET /events/:id lists them; a coalesced or batched event's call
-- was made by another event).
CREATE INDEX webhook_calls_carried ON webhook_calls USING gin (event_ids)
  WHERE event_ids IS NOT NULL;

-- The advisory lock of a lane: every change to a lane's calls (placing events, an attempt's
-- claim, an outcome's release) holds it until its transaction ends, so they happen one at a
-- time per lane. Locks are taken in the order of their keys.
CREATE FUNCTION herald_flow_lane_key(webhook bigint, lane text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT hashtextextended('herald.flow/' || webhook || '/' || lane, 0)
$$;

-- Takes the locks of the lanes of `call_ids` (those in a lane), in key order.
CREATE FUNCTION herald_lock_flow_lanes(call_ids bigint[]) RETURNS void
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
CREATE FUNCTION herald_lock_flow_lanes(webhooks bigint[], lanes text[]) RETURNS void
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
CREATE FUNCTION herald_claim_flow_call(call_id bigint, sequential boolean, busy_ms integer,
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

-- After outcomes of `call_ids` were recorded (in the same transaction): in each of their lanes,
-- the first unfinished call, if parked, is released (due now and held by `holder`, or
-- at the end of its batch window) and returned, for a job to be enqueued once this commits.
CREATE FUNCTION herald_release_flow_lanes(call_ids bigint[], holder text DEFAULT NULL)
RETURNS TABLE (id bigint, webhook_id bigint, due_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  l record;
  h record;
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
    SELECT c.id, c.enqueued_at, c.due_at INTO h FROM webhook_calls c
    WHERE c.webhook_id = l.w AND c.lane = l.lane AND c.lane IS NOT NULL
      AND c.status IN ('pending', 'rescheduled')
    ORDER BY c.lane_at, c.lane_version, c.lane_seq, c.id LIMIT 1;
    IF FOUND AND h.enqueued_at = 'infinity' THEN
      -- Due now, it is held by `holder` (the process that recorded the outcome attempts it in
      -- memory; if that process dies, its lease runs out and the sweeper takes the call over).
      UPDATE webhook_calls c SET enqueued_at = greatest(now(), coalesce(h.due_at, now())),
        held_by = CASE WHEN h.due_at IS NULL OR h.due_at <= now() THEN holder END
      WHERE c.id = h.id;
      id := h.id;
      webhook_id := l.w;
      due_at := h.due_at;
      RETURN NEXT;
    END IF;
  END LOOP;
END
$$;
