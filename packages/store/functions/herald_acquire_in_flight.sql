-- migrations: 027
-- For each (webhook, token), in order, whether a slot was taken: at most slot_limit unexpired
-- slots per webhook. The webhooks' locks are taken in one order, so two callers never wait for
-- each other in a circle; they are held to the end of the statement's transaction.
CREATE OR REPLACE FUNCTION herald_acquire_in_flight(
  webhook_ids text[], tokens text[], slot_limit integer, ttl_ms integer
) RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
  now_at timestamptz := clock_timestamp();
  taken boolean[] := '{}';
  held integer;
  webhook text;
BEGIN
  FOR webhook IN SELECT DISTINCT w FROM unnest(webhook_ids) AS w ORDER BY 1 LOOP
    PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':in-flight:' || webhook, 0));
    DELETE FROM in_flight_slots WHERE webhook_id = webhook AND expires_at <= now_at;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(webhook_ids, 1), 0) LOOP
    SELECT count(*) INTO held FROM in_flight_slots WHERE webhook_id = webhook_ids[i];
    IF held < slot_limit THEN
      INSERT INTO in_flight_slots VALUES (webhook_ids[i], tokens[i], now_at + ttl_ms * interval '1 millisecond')
        ON CONFLICT (webhook_id, token) DO UPDATE SET expires_at = EXCLUDED.expires_at;
      taken := taken || true;
    ELSE
      taken := taken || false;
    END IF;
  END LOOP;
  RETURN taken;
END $$;
