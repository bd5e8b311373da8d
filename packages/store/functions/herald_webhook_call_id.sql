-- migrations: 021
-- The id of a call created at `at` (now() by default; tests and benchmarks that write calls in
-- the past pass their created_at).
CREATE OR REPLACE FUNCTION herald_webhook_call_id(at timestamptz) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT (herald_month_number(at) << 36) + nextval('webhook_call_ids') % 68719476736
$$;

-- ONLY: the partitions take it when they are made; the legacy one (migration 021) has none.
ALTER TABLE ONLY webhook_calls ALTER COLUMN id SET DEFAULT herald_webhook_call_id(now());
