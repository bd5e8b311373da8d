-- migrations: 021
-- Drops the month `month_start` falls in, calls and attempts, and its counts, unless a call in it
-- is still pending or rescheduled (it stays until that call ends; the row-by-row retention keeps
-- deleting its finished calls meanwhile) or the legacy partition still holds calls of that month
-- or before (their counts share the month's rows). Returns how many calls it dropped, or NULL
-- when it dropped nothing.
CREATE OR REPLACE FUNCTION herald_drop_webhook_call_partition(month_start timestamptz)
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
