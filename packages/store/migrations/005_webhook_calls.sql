-- The delivery log (API.md §4.4): one row per (event, matching webhook), created by the match
-- worker before any job exists for it, updated by the deliver worker after each attempt. Postgres
-- is the source of truth: the sweeper re-enqueues from here what Redis lost.
CREATE TABLE webhook_calls (
  id                           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id                     text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  -- No foreign key: the log outlives a deleted webhook (its pending retries are dropped).
  webhook_id                   bigint NOT NULL,
  entity_type                  text NOT NULL,
  event_type                   text NOT NULL,
  status                       text NOT NULL DEFAULT 'pending'
                               CHECK (status IN ('pending', 'success', 'failed', 'rescheduled')),
  created_at                   timestamptz NOT NULL DEFAULT now(),
  -- The last attempt's request, as sent (secrets redacted in the headers) and its answer.
  request_url                  text,
  request_headers              json,
  request_payload              text,
  response_status              integer,
  response_headers             json,
  -- At most 64 KB of the body.
  response_payload             text,
  -- Why the last attempt failed when there was no HTTP answer (timeout, reset, refused address).
  failure_reason               text,
  attempted_auto_retries_count integer NOT NULL DEFAULT 0,
  last_sent_at                 timestamptz,
  next_retry_at                timestamptz,
  -- When a job was last put in Redis for this call (the sweeper's "past the job lock" clock).
  enqueued_at                  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (event_id, webhook_id)
);
-- GET /webhook_calls: the default order and each order_by / filter column.
CREATE INDEX webhook_calls_created_at ON webhook_calls (created_at, id);
CREATE INDEX webhook_calls_webhook ON webhook_calls (webhook_id, id);
CREATE INDEX webhook_calls_last_sent_at ON webhook_calls (last_sent_at, id);
CREATE INDEX webhook_calls_next_retry_at ON webhook_calls (next_retry_at, id);
CREATE INDEX webhook_calls_status ON webhook_calls (status, id);
-- The sweeper: calls not finished, by the time they are due (small: only unfinished calls).
CREATE INDEX webhook_calls_unfinished ON webhook_calls (enqueued_at)
  WHERE status IN ('pending', 'rescheduled');
