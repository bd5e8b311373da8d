-- migrations: 027
-- A request of a webhook asks its rate limit to go (docs/api.md, Rate limit), as the Redis script
-- decides it (services/delivery/src/systems/limits/rate-limit.ts), times in microseconds of this
-- server's clock. `front` is when the next request may go (now, or later). The caller reserves it
-- when it has its turn, or nobody waits before it, and it comes within `within`: the next one may
-- go an interval after it. Otherwise it waits: with its turn until the front (it asks again), or
-- without one at the end of the queue of calls waiting for theirs, which moves an interval on.
-- Returns the wait, and the reserved slot (null when nothing was reserved).
CREATE OR REPLACE FUNCTION herald_admit_rate_turn(
  webhook text, interval_us bigint, has_turn boolean, within_us bigint,
  OUT wait_us bigint, OUT slot_us bigint
) LANGUAGE plpgsql AS $$
DECLARE
  now_us bigint;
  turn webhook_rate_turns%ROWTYPE;
  front bigint;
BEGIN
  INSERT INTO webhook_rate_turns VALUES (webhook, 0, 0, 0) ON CONFLICT (webhook_id) DO NOTHING;
  SELECT * INTO turn FROM webhook_rate_turns WHERE webhook_id = webhook FOR UPDATE;
  -- Read once the row is held: a caller that waited for the lock does not go by an older clock.
  now_us := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
  front := greatest(turn.next_at, now_us);
  IF (has_turn OR turn.queue_end <= front) AND front - now_us <= within_us THEN
    UPDATE webhook_rate_turns SET next_at = front + interval_us WHERE webhook_id = webhook;
    wait_us := front - now_us;
    slot_us := front;
  ELSIF has_turn THEN
    wait_us := front - now_us;
  ELSE
    wait_us := greatest(turn.queue_end, front) - now_us;
    UPDATE webhook_rate_turns SET queue_end = greatest(turn.queue_end, front) + interval_us
      WHERE webhook_id = webhook;
  END IF;
END $$;
