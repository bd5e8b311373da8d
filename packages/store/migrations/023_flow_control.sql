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

-- The lanes' locks, an attempt's claim and an outcome's release, applied with this migration:
-- functions/herald_flow_lane_key.sql, herald_lock_flow_lanes.sql, herald_claim_flow_call.sql and
-- herald_release_flow_lanes.sql.
