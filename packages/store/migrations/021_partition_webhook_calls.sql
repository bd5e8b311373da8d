-- The call log at scale (issue #14): webhook_calls and webhook_call_attempts partitioned by month,
-- so that retention drops a whole month instead of deleting its rows one by one, migrated in
-- place: the tables as they are become the first partition of each ("legacy"), and the months
-- after this migration get one partition each.
--
-- The partition key is the call id, and a call's id says the month it was created in:
--   id = (months since year 0 of created_at, in UTC) << 36 + a sequence number
-- (functions/herald_webhook_call_id.sql; ids stay below 2^53, so JavaScript reads them
-- exactly). Ids stay increasing; every statement that finds calls by id (the delivery workers' reads and outcome
-- writes, GET /webhook_calls/:id, the resends) reads one partition; an attempt's call_id names
-- its partition too, without a column to backfill. A partition holds exactly its month's calls
-- (a CHECK on created_at), so webhook_call_counts' rows of that month are the partition's.
--
-- One call per (event, webhook): a unique index per partition (Postgres cannot enforce a unique
-- key without the partition key across partitions). Across months, the match statement makes an
-- event's calls only while it holds the event's row and the event is not matched yet
-- (createWebhookCalls), and a replay only once the event is matched (takeReplayCall), so no two
-- statements can make the same call in two months.

CREATE SEQUENCE webhook_call_ids;

-- The tables as they are, renamed (their indexes too: the partitioned tables take the names).
ALTER TABLE webhook_calls RENAME TO webhook_calls_legacy;
ALTER TABLE webhook_call_attempts RENAME TO webhook_call_attempts_legacy;
DO $$
DECLARE
  ix record;
BEGIN
  FOR ix IN
    SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid IN ('webhook_calls_legacy'::regclass, 'webhook_call_attempts_legacy'::regclass)
  LOOP
    EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.relname, ix.relname || '_legacy');
  END LOOP;
END
$$;
-- The counting triggers move to the partitioned table (a partition cannot have them).
DROP TRIGGER webhook_calls_count_insert ON webhook_calls_legacy;
DROP TRIGGER webhook_calls_count_update ON webhook_calls_legacy;
DROP TRIGGER webhook_calls_count_delete ON webhook_calls_legacy;
-- An attempt names its call, with no foreign key: a foreign key to a partitioned table makes
-- dropping a month check every attempt. The attempts of a month go with their calls' month
-- (same bounds), and the row-by-row retention deletes both (deleteFinishedWebhookCalls).
ALTER TABLE webhook_call_attempts_legacy DROP CONSTRAINT webhook_call_attempts_call_id_fkey;
ALTER TABLE webhook_calls_legacy ALTER COLUMN id DROP IDENTITY;
ALTER TABLE webhook_calls_legacy
  RENAME CONSTRAINT webhook_calls_event_id_fkey TO webhook_calls_event_id_fkey_legacy;

CREATE TABLE webhook_calls (
  LIKE webhook_calls_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (id),
  CONSTRAINT webhook_calls_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id)
    ON DELETE CASCADE
) PARTITION BY RANGE (id);
-- The indexes of 005, 007, 010 and 016, under their names (the legacy partition's own are
-- attached to them, not built again).
CREATE INDEX webhook_calls_created_at ON webhook_calls (created_at, id);
CREATE INDEX webhook_calls_held ON webhook_calls (held_by) WHERE held_by IS NOT NULL;
CREATE INDEX webhook_calls_last_sent_at ON webhook_calls (last_sent_at, id);
CREATE INDEX webhook_calls_next_retry_at ON webhook_calls (next_retry_at, id);
CREATE INDEX webhook_calls_status ON webhook_calls (status, created_at, id);
CREATE INDEX webhook_calls_tests ON webhook_calls (id) WHERE event_id IS NULL;
CREATE INDEX webhook_calls_unfinished ON webhook_calls (enqueued_at)
  WHERE status IN ('pending', 'rescheduled');
CREATE INDEX webhook_calls_unfinished_by_webhook ON webhook_calls (webhook_id, created_at)
  WHERE status IN ('pending', 'rescheduled');
CREATE INDEX webhook_calls_webhook ON webhook_calls (webhook_id, id);
CREATE INDEX webhook_calls_webhook_created_at ON webhook_calls (webhook_id, created_at, id);

CREATE TABLE webhook_call_attempts (
  LIKE webhook_call_attempts_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (call_id, number)
) PARTITION BY RANGE (call_id);

-- The legacy partitions: the ids made so far, all below 2^36 (the first id of any month is
-- above), so that any month, past ones too, can have its partition. Attaching checks each row
-- once (a scan of each table, under this migration's lock).
ALTER TABLE webhook_calls ATTACH PARTITION webhook_calls_legacy
  FOR VALUES FROM (MINVALUE) TO (68719476736);
ALTER TABLE webhook_call_attempts ATTACH PARTITION webhook_call_attempts_legacy
  FOR VALUES FROM (MINVALUE) TO (68719476736);

-- Then, in this migration's transaction: the id default and the counting triggers of the new
-- webhook_calls (functions/herald_webhook_call_id.sql, herald_count_webhook_calls.sql), and the
-- partitions of this month and the next two (migrate.ts).
