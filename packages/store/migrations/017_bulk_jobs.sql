-- Recovery in one action (extension, issue #14): bulk resends and replays, run in the background
-- by the delivery processes, paced, resumed after a restart or a kill -9 (the state is here).

CREATE TABLE bulk_jobs (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- bulk_resend: the calls the filter selects, sent again; replay: the stored events of a time
  -- range, matched against one webhook's current entries and sent to it in occurrence order.
  kind            text NOT NULL CHECK (kind IN ('bulk_resend', 'replay')),
  state           text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'running', 'completed', 'cancelled', 'failed')),
  -- replay: the webhook sent to; bulk_resend: the filter's webhook, if it names one.
  webhook_id      bigint,
  -- The selection as the API accepted it (docs/api.md, Bulk jobs).
  filter          json NOT NULL,
  -- Items started per second at most; NULL: as fast as the delivery pool allows.
  rate_per_second double precision,
  -- How many items the selection holds: NULL until it is complete.
  matched         bigint,
  -- The selection so far (a replay selects page by page, from after this event).
  selected        bigint NOT NULL DEFAULT 0,
  select_after_at  timestamptz,
  select_after_seq bigint,
  succeeded       bigint NOT NULL DEFAULT 0,
  failed          bigint NOT NULL DEFAULT 0,
  -- Items not sent: the call was already on its way (pending or rescheduled), or its webhook,
  -- event or call no longer exists.
  skipped         bigint NOT NULL DEFAULT 0,
  -- Items finished per second over the last minute the job ran (for the progress display).
  observed_rate   double precision,
  failure_reason  text,
  -- The delivery process running it (its delivery_leases id); a job whose holder's lease ran out
  -- is taken over by another process.
  held_by         text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  started_at      timestamptz,
  finished_at     timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bulk_jobs_unfinished ON bulk_jobs (id) WHERE state IN ('queued', 'running');

-- One row per call (bulk_resend) or event (replay) selected, in the order they are sent.
CREATE TABLE bulk_job_items (
  job_id          bigint NOT NULL REFERENCES bulk_jobs (id) ON DELETE CASCADE,
  position        bigint NOT NULL,
  -- bulk_resend: the call; replay: the call, once found or made for the event.
  call_id         bigint,
  event_id        text,
  -- replay: the call was made by this job (its first attempt is the job's).
  new_call        boolean NOT NULL DEFAULT false,
  -- queued → sending → succeeded | failed | skipped. An item found `sending` when the job is
  -- taken over is finished if its call has an attempt by the job (a later attempt number than
  -- attempts_before, with the job's trigger), else queued again.
  state           text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'sending', 'succeeded', 'failed', 'skipped')),
  attempts_before integer,
  PRIMARY KEY (job_id, position)
);
CREATE INDEX bulk_job_items_queued ON bulk_job_items (job_id, position) WHERE state = 'queued';
CREATE INDEX bulk_job_items_sending ON bulk_job_items (job_id) WHERE state = 'sending';
