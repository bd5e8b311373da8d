-- Looking events up (extension, issue #14): GET /events by entity or time range, GET
-- /webhook_calls filtered by entity id (through the calls' events), and replay jobs, which read
-- a webhook's missed events in the order they occurred. `seq` breaks ties in occurred_at.
CREATE INDEX events_by_entity ON events (entity_id, occurred_at, seq);
CREATE INDEX events_by_occurrence ON events (occurred_at, seq);
