-- Operational notices (extension, issue #14): Herald's own events about itself (entity type
-- `notice`), stored in `events` like a producer's and delivered to the webhooks that subscribe to
-- them. A delivery process looks every second for what changed since it was last told: these
-- columns remember what was last told, so each change is told once, by one process.

-- The webhook was last told failing (a run of DELIVERY_NOTICE_FAILURES failures), until a success.
ALTER TABLE webhook_health ADD COLUMN noticed_failing boolean NOT NULL DEFAULT false;
-- Its circuit was last told open, until it closes.
ALTER TABLE webhook_health ADD COLUMN noticed_circuit boolean NOT NULL DEFAULT false;
-- The webhook's disabled_reason last told (a disable by a 410 or by sustained failure). Kept here,
-- not on the webhook: an update of the webhook's row is an edit (its version moves).
ALTER TABLE webhook_health ADD COLUMN noticed_disabled_reason text;
-- The job's end was told.
ALTER TABLE bulk_jobs ADD COLUMN noticed boolean NOT NULL DEFAULT false;

-- What is already so when this migration runs is not news: no burst of notices on upgrade.
UPDATE webhook_health SET noticed_failing = failure_streak >= 5,
  noticed_circuit = circuit_open_until IS NOT NULL;
UPDATE webhook_health h SET noticed_disabled_reason = w.disabled_reason
FROM webhooks w WHERE w.id = h.webhook_id AND w.disabled_reason IS NOT NULL;
UPDATE bulk_jobs SET noticed = true WHERE state IN ('completed', 'cancelled', 'failed');
