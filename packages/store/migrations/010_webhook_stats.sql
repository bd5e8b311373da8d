-- Per-webhook health (extension, issue #14): kept as rollups while attempts are recorded, by the
-- statement that records them, so GET /webhooks/:id/stats and GET /webhook_stats read a few
-- rows, never the call log.

-- Attempts per webhook and time bucket: minutes (kept 2 days, for the 1-hour window) and hours
-- (kept as long as the call log, at least 31 days, for the 24-hour, 7-day and 30-day windows).
CREATE TABLE webhook_stats (
  webhook_id        bigint NOT NULL,
  granularity       text NOT NULL CHECK (granularity IN ('minute', 'hour')),
  bucket_start      timestamptz NOT NULL,
  -- Attempts that succeeded, and those that did not (whether a retry followed or not).
  attempts_success  integer NOT NULL DEFAULT 0,
  attempts_failure  integer NOT NULL DEFAULT 0,
  -- Calls that ended in the bucket, by their final status.
  calls_succeeded   integer NOT NULL DEFAULT 0,
  calls_failed      integer NOT NULL DEFAULT 0,
  -- Attempt durations: how many fell in each range of LATENCY_BOUNDS_MS (store/webhook-stats.ts),
  -- the last slot counting those above the highest bound.
  latency_buckets   integer[] NOT NULL,
  latency_ms_sum    double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (webhook_id, granularity, bucket_start)
);
-- The pruning of old buckets, oldest first.
CREATE INDEX webhook_stats_bucket ON webhook_stats (granularity, bucket_start);

-- The webhook's latest outcomes: one row per webhook attempted.
CREATE TABLE webhook_health (
  webhook_id       bigint PRIMARY KEY,
  last_success_at  timestamptz,
  last_failure_at  timestamptz,
  -- Attempts that failed since the last success.
  failure_streak   integer NOT NULL DEFAULT 0,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The backlog of one webhook (pending and rescheduled calls, the oldest) without reading its
-- finished calls.
CREATE INDEX webhook_calls_unfinished_by_webhook ON webhook_calls (webhook_id, created_at)
  WHERE status IN ('pending', 'rescheduled');

-- The attempts recorded before this release (migration 009 kept one per call, without its
-- duration): counted, in no latency range.
INSERT INTO webhook_stats (webhook_id, granularity, bucket_start, attempts_success,
  attempts_failure, calls_succeeded, calls_failed, latency_buckets)
SELECT c.webhook_id, g.granularity, date_trunc(g.granularity, a.started_at),
  count(*) FILTER (WHERE a.outcome = 'success'), count(*) FILTER (WHERE a.outcome <> 'success'),
  count(*) FILTER (WHERE a.outcome = 'success'), count(*) FILTER (WHERE a.outcome = 'failed'),
  array_fill(0, ARRAY[12])
FROM webhook_call_attempts a JOIN webhook_calls c ON c.id = a.call_id
CROSS JOIN (VALUES ('minute'), ('hour')) AS g (granularity)
WHERE a.started_at > now() - interval '31 days'
GROUP BY 1, 2, 3;
INSERT INTO webhook_health (webhook_id, last_success_at, last_failure_at)
SELECT c.webhook_id, max(a.started_at) FILTER (WHERE a.outcome = 'success'),
  max(a.started_at) FILTER (WHERE a.outcome <> 'success')
FROM webhook_call_attempts a JOIN webhook_calls c ON c.id = a.call_id
GROUP BY c.webhook_id;
