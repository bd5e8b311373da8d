-- Sustained-failure disable (extension, issue #14): when the current run of failed attempts
-- began (the first failure after the last success), kept by the statement that records
-- attempts. The sweeper disables a webhook whose attempts have all failed for longer than
-- DELIVERY_DISABLE_AFTER_FAILING_MS since then and since its last edit.
ALTER TABLE webhook_health ADD COLUMN failing_since timestamptz;
UPDATE webhook_health SET failing_since = last_failure_at
WHERE last_failure_at IS NOT NULL AND (last_success_at IS NULL OR last_failure_at > last_success_at);
-- The sweeper's look for such webhooks reads only the ones failing.
CREATE INDEX webhook_health_failing ON webhook_health (failing_since)
  WHERE failing_since IS NOT NULL;
