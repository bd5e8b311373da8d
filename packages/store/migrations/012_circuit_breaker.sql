-- The circuit breaker of each webhook (extension, issue #14), beside its health: after a run of
-- failures that say the endpoint is away (no answer, a timeout, a 5xx, a 429), its calls wait
-- until circuit_open_until; then one probe (circuit_probe_at: taken by one process) decides
-- whether it closes (a success) or opens again for another cool-down. Written by the statement
-- that records attempts, read by every delivery process.
-- The last attempt that reached the endpoint: a success, or an answer that does not trip.
ALTER TABLE webhook_health ADD COLUMN last_reached_at timestamptz;
-- The tripping failures since then.
ALTER TABLE webhook_health ADD COLUMN circuit_failures integer NOT NULL DEFAULT 0;
ALTER TABLE webhook_health ADD COLUMN circuit_open_until timestamptz;
ALTER TABLE webhook_health ADD COLUMN circuit_probe_at timestamptz;
-- The delivery processes poll the circuits not closed: few rows.
CREATE INDEX webhook_health_circuits ON webhook_health (webhook_id)
  WHERE circuit_open_until IS NOT NULL;
