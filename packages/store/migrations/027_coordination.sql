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
-- Taken by functions/herald_acquire_in_flight.sql, applied with this migration.

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
