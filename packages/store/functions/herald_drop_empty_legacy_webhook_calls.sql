-- migrations: 021
-- Drops the legacy partition once the row-by-row retention has emptied it.
CREATE OR REPLACE FUNCTION herald_drop_empty_legacy_webhook_calls() RETURNS boolean
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
