-- The call log at scale (issue #14): meta.total_count of GET /webhook_calls without count(*).
-- count(*) over 10 million calls cost 0.6 s a request; these counts make it a sum of a few rows.
--
-- webhook_call_counts: how many calls there are per (webhook, entity type, event type, status,
-- month of created_at), kept by statement-level triggers in the statements that insert, update
-- and delete calls, so every path (the match worker, outcomes, drops, a webhook's deletion,
-- retention, an event's cascade) counts, in the same transaction as the change: a snapshot sees
-- counts that agree with the calls it sees. A filter of GET /webhook_calls on those columns only
-- (or none) sums the rows of its keys: exact.
--
-- Like record_counts (006), a key's count is the sum of its rows (shards): a statement adds its
-- delta to a row no other transaction holds (SKIP LOCKED) or to a new row when all are held, so
-- the delivery workers' outcome statements never wait for each other on a counter row (the
-- contention that moved the stats rollups out of those statements), and a key has as many rows
-- as writers that ever overlapped on it.
--
-- `month` keeps the counts right when webhook_calls is partitioned by month later: dropping a
-- month's partition fires no trigger, and deleting that month's rows here (in the same
-- transaction) is the matching change. It also bounds a created_at range (total_count above the
-- cap of the exact count, store/webhook-calls.ts).
CREATE TABLE webhook_call_counts (
  webhook_id  bigint NOT NULL,
  entity_type text NOT NULL,
  event_type  text NOT NULL,
  status      text NOT NULL,
  -- The first day of created_at's month, in UTC.
  month       date NOT NULL,
  shard       integer NOT NULL,
  calls       bigint NOT NULL,
  PRIMARY KEY (webhook_id, entity_type, event_type, status, month, shard)
);

-- The counting triggers and their functions: functions/herald_count_webhook_calls.sql and
-- herald_add_webhook_call_count.sql, applied with this migration.

-- The calls already logged. The lock keeps writers out until the triggers, made in this
-- migration's transaction, count theirs, so no call is counted twice or missed.
LOCK TABLE webhook_calls IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO webhook_call_counts (webhook_id, entity_type, event_type, status, month, shard, calls)
SELECT webhook_id, entity_type, event_type, status,
  date_trunc('month', created_at AT TIME ZONE 'UTC')::date, 0, count(*)
FROM webhook_calls GROUP BY 1, 2, 3, 4, 5;

-- The status filter in the default order (created_at): a status's calls are read in that order
-- instead of all of them being sorted (pending, failed: 5,000 and 100,000 of 10 million calls in
-- bench/calls). Replaces (status, id), which no statement needed beyond that.
DROP INDEX webhook_calls_status;
CREATE INDEX webhook_calls_status ON webhook_calls (status, created_at, id);

-- Test calls (event_id NULL) by themselves: the event and entity filters also match the event a
-- test call carries. Few rows, and no entry at all for the calls events make.
CREATE INDEX webhook_calls_tests ON webhook_calls (id) WHERE event_id IS NULL;

-- One webhook's calls in a created_at range (the console's view of a webhook: the last hour, the
-- last day), counted and paged without reading the webhook's other calls. (webhook_id, id)
-- stays: it is the order webhook_id_asc/desc.
CREATE INDEX webhook_calls_webhook_created_at ON webhook_calls (webhook_id, created_at, id);
