-- The call log at scale (issue #14): webhook_calls and webhook_call_attempts partitioned by month,
-- so that retention drops a whole month instead of deleting its rows one by one, migrated in
-- place: the tables as they are become the first partition of each ("legacy"), and the months
-- after this migration get one partition each.
--
-- The partition key is the call id, and a call's id says the month it was created in:
--   id = (months since year 0 of created_at, in UTC) << 36 + a sequence number
-- (herald_webhook_call_id below; ids stay below 2^53, so JavaScript reads them exactly). Ids stay
-- increasing; every statement that finds calls by id (the delivery workers' reads and outcome
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

CREATE FUNCTION herald_month_number(at timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (extract(year FROM at AT TIME ZONE 'UTC')::bigint * 12
    + extract(month FROM at AT TIME ZONE 'UTC')::bigint - 1)
$$;

-- The id of a call created at `at` (now() by default; tests and benchmarks that write calls in
-- the past pass their created_at).
CREATE FUNCTION herald_webhook_call_id(at timestamptz) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT (herald_month_number(at) << 36) + nextval('webhook_call_ids') % 68719476736
$$;

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
ALTER TABLE webhook_calls ALTER COLUMN id SET DEFAULT herald_webhook_call_id(now());
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

CREATE TRIGGER webhook_calls_count_insert AFTER INSERT ON webhook_calls
  REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE TRIGGER webhook_calls_count_update AFTER UPDATE ON webhook_calls
  REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();
CREATE TRIGGER webhook_calls_count_delete AFTER DELETE ON webhook_calls
  REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT
  EXECUTE FUNCTION herald_count_webhook_calls();

CREATE TABLE webhook_call_attempts (
  LIKE webhook_call_attempts_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
  PRIMARY KEY (call_id, number)
) PARTITION BY RANGE (call_id);

-- Creates the partitions of `months` months from the one `first` falls in, those missing (the
-- delivery processes call it at start and at every pruning pass for this month and the next two;
-- tests and benchmarks for the months they write in). Returns how many it made. Under a lock,
-- so that processes running it together make each once; creating a partition takes a lock on
-- webhook_calls that waits for the statements using it, at most lock_timeout (the next pass
-- tries again, months ahead of need).
CREATE FUNCTION herald_create_webhook_call_partitions(first timestamptz, months integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  made integer := 0;
  start_ timestamptz;
  end_ timestamptz;
  suffix text;
  lo bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('herald:webhook_call_partitions'));
  FOR i IN 0 .. months - 1 LOOP
    start_ := (date_trunc('month', first AT TIME ZONE 'UTC') + make_interval(months => i))
      AT TIME ZONE 'UTC';
    end_ := ((start_ AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
    suffix := to_char(start_ AT TIME ZONE 'UTC', 'YYYY_MM');
    CONTINUE WHEN to_regclass('webhook_calls_' || suffix) IS NOT NULL;
    PERFORM set_config('lock_timeout', '2s', true);
    lo := herald_month_number(start_) << 36;
    EXECUTE format('CREATE TABLE %I PARTITION OF webhook_calls FOR VALUES FROM (%s) TO (%s)',
      'webhook_calls_' || suffix, lo, lo + 68719476736);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (created_at >= %L AND created_at < %L)',
      'webhook_calls_' || suffix, 'webhook_calls_' || suffix || '_month', start_, end_);
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (event_id, webhook_id)',
      'webhook_calls_' || suffix || '_event_webhook', 'webhook_calls_' || suffix);
    EXECUTE format(
      'CREATE TABLE %I PARTITION OF webhook_call_attempts FOR VALUES FROM (%s) TO (%s)',
      'webhook_call_attempts_' || suffix, lo, lo + 68719476736);
    made := made + 1;
  END LOOP;
  RETURN made;
END
$$;

-- Drops the month `month_start` falls in, calls and attempts, and its counts, unless a call in it
-- is still pending or rescheduled (it stays until that call ends; the row-by-row retention keeps
-- deleting its finished calls meanwhile) or the legacy partition still holds calls of that month
-- or before (their counts share the month's rows). Returns how many calls it dropped, or NULL
-- when it dropped nothing.
CREATE FUNCTION herald_drop_webhook_call_partition(month_start timestamptz)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  suffix text := to_char(month_start AT TIME ZONE 'UTC', 'YYYY_MM');
  month_ date := date_trunc('month', month_start AT TIME ZONE 'UTC')::date;
  unfinished boolean;
  dropped bigint;
BEGIN
  IF to_regclass('webhook_calls_' || suffix) IS NULL THEN
    RETURN NULL;
  END IF;
  -- Before looking, so that no statement makes a call pending in it (a resend) meanwhile.
  PERFORM set_config('lock_timeout', '2s', true);
  LOCK TABLE webhook_calls, webhook_call_attempts IN ACCESS EXCLUSIVE MODE;
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I WHERE status IN (''pending'', ''rescheduled''))',
    'webhook_calls_' || suffix) INTO unfinished;
  IF unfinished THEN
    RETURN NULL;
  END IF;
  IF to_regclass('webhook_calls_legacy') IS NOT NULL THEN
    IF EXISTS (SELECT 1 FROM webhook_calls_legacy
               WHERE created_at < (month_ + interval '1 month') AT TIME ZONE 'UTC') THEN
      RETURN NULL;
    END IF;
  END IF;
  SELECT coalesce(sum(calls), 0) INTO dropped FROM webhook_call_counts WHERE month = month_;
  EXECUTE format('DROP TABLE %I', 'webhook_call_attempts_' || suffix);
  EXECUTE format('DROP TABLE %I', 'webhook_calls_' || suffix);
  DELETE FROM webhook_call_counts WHERE month = month_;
  RETURN dropped;
END
$$;

-- Drops the legacy partition once the row-by-row retention has emptied it.
CREATE FUNCTION herald_drop_empty_legacy_webhook_calls() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass('webhook_calls_legacy') IS NULL THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM webhook_calls_legacy) THEN
    RETURN false;
  END IF;
  PERFORM set_config('lock_timeout', '2s', true);
  LOCK TABLE webhook_calls, webhook_call_attempts IN ACCESS EXCLUSIVE MODE;
  IF EXISTS (SELECT 1 FROM webhook_calls_legacy) THEN
    RETURN false;
  END IF;
  DROP TABLE webhook_call_attempts_legacy;
  DROP TABLE webhook_calls_legacy;
  RETURN true;
END
$$;

-- The legacy partitions: the ids made so far, all below 2^36 (the first id of any month is
-- above), so that any month, past ones too, can have its partition. Attaching checks each row
-- once (a scan of each table, under this migration's lock).
ALTER TABLE webhook_calls ATTACH PARTITION webhook_calls_legacy
  FOR VALUES FROM (MINVALUE) TO (68719476736);
ALTER TABLE webhook_call_attempts ATTACH PARTITION webhook_call_attempts_legacy
  FOR VALUES FROM (MINVALUE) TO (68719476736);
SELECT herald_create_webhook_call_partitions(now(), 3);
