-- What the processes share when no Redis is configured (#29 item 2): the state Herald otherwise
-- keeps in Redis, with the same meaning. UNLOGGED: like Redis's keys, it is short-lived and may be
-- lost in a crash (emptied at recovery, which frees the slots and forgets the spacing, as a Redis
-- restart does), and its writes cost no WAL.

-- In-flight slots: one row per attempt in flight, counted per webhook under the webhook's
-- advisory lock; a slot whose holder died expires.
CREATE UNLOGGED TABLE in_flight_slots (
  webhook_id text NOT NULL,
  token      text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (webhook_id, token)
);

-- For each (webhook, token), in order, whether a slot was taken: at most slot_limit unexpired
-- slots per webhook. The webhooks' locks are taken in one order, so two callers never wait for
-- each other in a circle; they are held to the end of the statement's transaction.
CREATE FUNCTION herald_acquire_in_flight(
  webhook_ids text[], tokens text[], slot_limit integer, ttl_ms integer
) RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
  now_at timestamptz := clock_timestamp();
  taken boolean[] := '{}';
  held integer;
  webhook text;
BEGIN
  FOR webhook IN SELECT DISTINCT w FROM unnest(webhook_ids) AS w ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':in-flight:' || webhook, 0));
    DELETE FROM in_flight_slots WHERE webhook_id = webhook AND expires_at <= now_at;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(webhook_ids, 1), 0) LOOP
    SELECT count(*) INTO held FROM in_flight_slots WHERE webhook_id = webhook_ids[i];
    IF held < slot_limit THEN
      INSERT INTO in_flight_slots VALUES (webhook_ids[i], tokens[i], now_at + ttl_ms * interval '1 millisecond')
        ON CONFLICT (webhook_id, token) DO UPDATE SET expires_at = EXCLUDED.expires_at;
      taken := taken || true;
    ELSE
      taken := taken || false;
    END IF;
  END LOOP;
  RETURN taken;
END $$;

-- Each webhook's rate limit (delivery_policy.rate_limit_per_second), as the Redis script keeps it
-- (services/delivery/src/delivery/rate-limit.ts), times in microseconds of the server's clock:
-- when the next request may go, the end of the queue of calls waiting for their turn, and the
-- wait the last caller was given (0: it was admitted). One row per webhook, updated by a single
-- statement (services/delivery/src/delivery/rate-limit-postgres.ts).
CREATE UNLOGGED TABLE webhook_rate_turns (
  webhook_id text PRIMARY KEY,
  next_at    bigint NOT NULL,
  queue_end  bigint NOT NULL,
  wait_us    bigint NOT NULL
);

-- The per-token HTTP rate limit's windows (packages/runtime/src/http/rate-limit.ts): a fixed window
-- per key, the requests granted to the processes in it, and the last grant.
CREATE UNLOGGED TABLE rate_limit_windows (
  key     text PRIMARY KEY,
  counted bigint NOT NULL,
  ends_at timestamptz NOT NULL,
  granted integer NOT NULL
);
