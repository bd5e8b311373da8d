-- migrations: 021
-- Creates the partitions of `months` months from the one `first` falls in, those missing (the
-- delivery processes call it at start and at every pruning pass for this month and the next two;
-- tests and benchmarks for the months they write in). Returns how many it made. Under a lock,
-- so that processes running it together make each once; creating a partition takes a lock on
-- webhook_calls that waits for the statements using it, at most lock_timeout (the next pass
-- tries again, months ahead of need).
CREATE OR REPLACE FUNCTION herald_create_webhook_call_partitions(first timestamptz, months integer)
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
