-- Every attempt of a call, its own row (extension, issue #14): GET /webhook_calls/:id keeps the
-- DatoCMS shape (the last attempt, on the call's row); GET /webhook_calls/:id/attempts lists
-- these. Written by the statement that records an attempt's outcome on the call, so the two
-- never disagree; deleted with their call (same retention).
ALTER TABLE webhook_calls ADD COLUMN attempts_count integer NOT NULL DEFAULT 0;

CREATE TABLE webhook_call_attempts (
  call_id          bigint NOT NULL REFERENCES webhook_calls (id) ON DELETE CASCADE,
  -- 1, 2, ... in the order the attempts were recorded.
  number           integer NOT NULL,
  -- What made it: the first attempt (or its re-enqueue after Redis lost it), an automatic retry,
  -- a resend through the API; the other values are for the recovery jobs and test sends.
  trigger          text NOT NULL
                   CHECK (trigger IN ('first', 'retry', 'resend', 'bulk_resend', 'replay', 'test')),
  -- The call's status this attempt left it in.
  outcome          text NOT NULL CHECK (outcome IN ('success', 'failed', 'rescheduled')),
  started_at       timestamptz NOT NULL,
  -- NULL only for the attempts recorded before this table existed (migrated below).
  duration_ms      double precision,
  request_url      text NOT NULL,
  -- As sent, credentials redacted (as on the call).
  request_headers  json NOT NULL,
  -- NULL: the same body as the call's request_payload. The body is stored once per call; an
  -- attempt keeps its own only when a later attempt sent a different one.
  request_payload  text,
  response_status  integer,
  response_headers json,
  -- At most 64 KB of the body, as on the call.
  response_payload text,
  failure_reason   text,
  PRIMARY KEY (call_id, number)
);

-- The calls attempted before this release: their last attempt (the only one kept) becomes their
-- attempt 1, its body the call's.
INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at, request_url,
  request_headers, response_status, response_headers, response_payload, failure_reason)
SELECT id, 1, CASE WHEN attempted_auto_retries_count > 0 THEN 'retry' ELSE 'first' END, status,
  last_sent_at, request_url, coalesce(request_headers, '{}'::json), response_status,
  response_headers, response_payload, failure_reason
FROM webhook_calls
WHERE last_sent_at IS NOT NULL AND request_url IS NOT NULL AND status <> 'pending';
UPDATE webhook_calls c SET attempts_count = 1
WHERE EXISTS (SELECT 1 FROM webhook_call_attempts a WHERE a.call_id = c.id);
