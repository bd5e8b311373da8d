-- The POST /events hot path (issue 3's speed target), measured with bench/ingest:
-- 1. record_counts without a hot row. 004 kept one row per (environment, model), locked by every
--    batch of that model from its count upsert until its commit, so concurrent batches of one
--    model queued behind each other's WAL flush. Now a model's count is the sum of its rows
--    (shards): a statement adds its delta to a row no other transaction holds (SKIP LOCKED), or
--    to a new row when all are held, so writers never wait for each other and the number of rows
--    stays at the number of writers that ever overlapped. Readers sum the rows (services/read
--    already does: sum(current_count) ... WHERE environment = $1 [AND item_type_id = ANY($2)]).
-- 2. The two statements of an item batch (the pre-read and the write) as PL/pgSQL functions, whose
--    plans are prepared once per connection: planning them cost more than running them for a
--    small batch (≈ 1 ms of backend CPU per request). plan_cache_mode = force_generic_plan: the
--    plan does not depend on the batch (one JSON document in, one row per event), and the
--    default would keep re-planning each call once a custom plan looked cheaper.
--    enable_seqscan = off: every table these functions read is read by key, and a plan prepared
--    while a table was empty (a new database, a test) would otherwise scan it whole for the
--    life of the connection, however large it grows (events by id: 3× the cost in a minute).
--    jit = off: with seq scans priced out, a plan's cost crosses jit_above_cost and every call
--    would compile it (≈ 200 ms); these statements are small and run often.

ALTER TABLE record_counts ADD COLUMN shard integer NOT NULL DEFAULT 0;
ALTER TABLE record_counts DROP CONSTRAINT record_counts_pkey;
ALTER TABLE record_counts ADD PRIMARY KEY (environment, item_type_id, shard);
-- Applied with this migration: functions/herald_add_record_count.sql and herald_count_records.sql
-- (1.), herald_batch_context.sql and, with 028, herald_write_item_batch.sql (2.).
