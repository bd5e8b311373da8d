-- migrations: 022
-- A record's stored versions, looked up by its key, planned at each call. In the batch
-- statement's plan (generic, made once per connection, maybe while records was nearly empty) the
-- lookup read a whole environment through another index (records_by_model, records_by_created):
-- 1–1.8 ms of Postgres per event with a few thousand records (bench:ingest); planned here with the
-- table as it is, it is one probe of the primary key.
CREATE OR REPLACE FUNCTION herald_stored_record(env text, record_id text, OUT current_attributes jsonb,
  OUT published_attributes jsonb)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
BEGIN
  SELECT r.current_attributes, r.published_attributes INTO current_attributes, published_attributes
  FROM records r WHERE r.environment = env AND r.id = record_id AND NOT r.is_block;
END
$$;
