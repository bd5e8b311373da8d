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

-- Adds a delta to one of the model's count rows that no other transaction holds.
CREATE FUNCTION herald_add_record_count(env text, model text, cur bigint, pub bigint)
RETURNS void LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
BEGIN
  UPDATE record_counts c SET current_count = c.current_count + cur,
    published_count = c.published_count + pub
  WHERE (c.environment, c.item_type_id, c.shard) = (
    SELECT s.environment, s.item_type_id, s.shard FROM record_counts s
    WHERE s.environment = env AND s.item_type_id = model
    LIMIT 1 FOR UPDATE SKIP LOCKED);
  IF NOT FOUND THEN
    -- Every row is held by another writer: a row of our own (a random shard never collides in
    -- practice; if it does, ON CONFLICT waits for the holder instead of failing).
    INSERT INTO record_counts AS c (environment, item_type_id, shard, current_count,
      published_count)
    VALUES (env, model, 1 + floor(random() * 2147483646)::integer, cur, pub)
    ON CONFLICT (environment, item_type_id, shard) DO UPDATE SET
      current_count = c.current_count + EXCLUDED.current_count,
      published_count = c.published_count + EXCLUDED.published_count;
  END IF;
END
$$;

-- Same triggers as 004 (statement level, top-level records only), same deltas, sharded rows.
CREATE OR REPLACE FUNCTION herald_count_records() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  d record;
BEGIN
  IF TG_OP = 'INSERT' THEN
    FOR d IN
      SELECT environment, item_type_id, count(current_attributes) AS cur,
        count(published_attributes) AS pub
      FROM new_rows WHERE NOT is_block
      GROUP BY environment, item_type_id ORDER BY environment, item_type_id
    LOOP
      PERFORM herald_add_record_count(d.environment, d.item_type_id, d.cur, d.pub);
    END LOOP;
  ELSIF TG_OP = 'DELETE' THEN
    FOR d IN
      SELECT environment, item_type_id, count(current_attributes) AS cur,
        count(published_attributes) AS pub
      FROM old_rows WHERE NOT is_block
      GROUP BY environment, item_type_id ORDER BY environment, item_type_id
    LOOP
      PERFORM herald_add_record_count(d.environment, d.item_type_id, -d.cur, -d.pub);
    END LOOP;
  ELSE
    FOR d IN
      SELECT environment, item_type_id, sum(cur)::bigint AS cur, sum(pub)::bigint AS pub
      FROM (SELECT environment, item_type_id, (current_attributes IS NOT NULL)::int AS cur,
              (published_attributes IS NOT NULL)::int AS pub
            FROM new_rows WHERE NOT is_block
            UNION ALL
            SELECT environment, item_type_id, -(current_attributes IS NOT NULL)::int,
              -(published_attributes IS NOT NULL)::int
            FROM old_rows WHERE NOT is_block) x
      GROUP BY environment, item_type_id
      HAVING sum(cur) <> 0 OR sum(pub) <> 0
      ORDER BY environment, item_type_id
    LOOP
      PERFORM herald_add_record_count(d.environment, d.item_type_id, d.cur, d.pub);
    END LOOP;
  END IF;
  RETURN NULL;
END
$$;

-- loadBatchContext (store/batch-context.ts): which event ids are stored, the environments, and
-- the models named by id or api_key in `model_keys` ([{environment, key}]), each with its
-- version: the xmin of its item_types row, which every change of the model or of its fields
-- (upsertModel rewrites the row) and every re-creation after a delete moves.
CREATE FUNCTION herald_batch_context(event_ids text[], model_keys json,
  OUT known json, OUT environments json, OUT models json)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
BEGIN
  SELECT
    (SELECT coalesce(json_agg(e.id), '[]') FROM events e WHERE e.id = ANY(event_ids)),
    (SELECT coalesce(json_agg(json_build_object('id', v.id, 'locales', v.locales,
       'is_primary', v.is_primary)), '[]') FROM environments v),
    (SELECT coalesce(json_agg(json_build_object('environment', m.environment, 'id', m.id,
       'api_key', m.api_key, 'modular_block', m.modular_block, 'sortable', m.sortable,
       'tree', m.tree, 'draft_mode_active', m.draft_mode_active, 'version', m.xmin::text,
       'fields', (SELECT json_agg(json_build_object('api_key', f.api_key,
           'field_type', f.field_type, 'localized', f.localized) ORDER BY f.position, f.api_key)
         FROM fields f WHERE f.environment = m.environment AND f.item_type_id = m.id))), '[]')
     FROM item_types m
     WHERE EXISTS (SELECT 1 FROM json_to_recordset(model_keys) AS k(environment text, key text)
       WHERE k.environment = m.environment AND (k.key = m.id OR k.key = m.api_key)))
  INTO known, environments, models;
END
$$;

-- writeItemBatch (store/records.ts): events and the records they write, in one statement.
-- `batch` holds one row per event: the event's columns, and for events that write a record the
-- record's (mode not null; the record is entity_id, its attributes `attributes`, or the entity's
-- when absent). The records upsert is upsertRecordsSql's (records.ts), restricted to the events
-- inserted now; `texts` ([{environment, record_id, item_type_id, locale, config, text,
-- versions}]) are the documents of the records written, each computed once for all its versions.
-- `expected` (optional: {environments: [{id, locales, is_primary}], models: [{environment, id,
-- version}]}) is the context the batch was validated against when it came from a cache: if any
-- of it changed, nothing is written and `inserted` is NULL (the caller validates again).
CREATE FUNCTION herald_write_item_batch(batch json, texts json, expected json,
  OUT inserted text[], OUT written bigint)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
BEGIN
  IF expected IS NOT NULL AND (
    EXISTS (SELECT 1 FROM json_to_recordset(expected->'models')
        AS m(environment text, id text, version text)
      WHERE NOT EXISTS (SELECT 1 FROM item_types t
        WHERE t.environment = m.environment AND t.id = m.id AND t.xmin::text = m.version))
    OR EXISTS (SELECT 1 FROM json_to_recordset(expected->'environments')
        AS e(id text, locales text[], is_primary boolean)
      WHERE NOT EXISTS (SELECT 1 FROM environments v
        WHERE v.id = e.id AND v.locales = e.locales AND v.is_primary = e.is_primary)))
  THEN
    written := 0;
    RETURN;
  END IF;
  WITH x AS MATERIALIZED (
    SELECT * FROM json_to_recordset(batch) AS x(n integer, id text, environment text,
      is_environment_primary boolean, entity_type text, event_type text, entity_id text,
      item_type_id text, item_type_api_key text, occurred_at timestamptz, entity jsonb,
      previous_entity jsonb, related_entities jsonb, mode text, attributes jsonb,
      parent_id text, position integer, creator_type text, creator_id text,
      created_at timestamptz, updated_at timestamptz, published_at timestamptz,
      first_published_at timestamptz, publication_scheduled_at timestamptz,
      unpublishing_scheduled_at timestamptz, is_valid boolean, is_current_version_valid boolean,
      is_published_version_valid boolean, current_version text, stage text, version_key text)),
  ev AS (
    INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
      entity_id, item_type_id, item_type_api_key, occurred_at, entity, previous_entity,
      related_entities)
    SELECT x.id, x.environment, x.is_environment_primary, x.entity_type, x.event_type,
      x.entity_id, x.item_type_id, x.item_type_api_key, x.occurred_at, x.entity,
      x.previous_entity, coalesce(x.related_entities, '[]')
    FROM x ORDER BY x.n
    ON CONFLICT (id) DO NOTHING
    RETURNING id),
  y AS (
    SELECT x.*, coalesce(x.attributes, x.entity->'attributes', '{}') AS attrs FROM x
    WHERE x.mode IS NOT NULL AND x.id IN (SELECT id FROM ev)),
  rec AS (
    INSERT INTO records AS r (environment, id, item_type_id, is_block, parent_id, position,
      status, current_attributes, published_attributes, creator_type, creator_id, created_at,
      updated_at, published_at, first_published_at, publication_scheduled_at,
      unpublishing_scheduled_at, is_valid, is_current_version_valid, is_published_version_valid,
      current_version, stage, version_key, last_event_id, last_event_type)
    SELECT y.environment, y.entity_id, y.item_type_id, false, y.parent_id, y.position,
      CASE WHEN y.mode = 'publish' THEN 'published' ELSE 'draft' END,
      y.attrs,
      CASE WHEN y.mode = 'publish' THEN y.attrs END,
      y.creator_type, y.creator_id, y.created_at, y.updated_at,
      CASE WHEN y.mode = 'publish' THEN y.published_at END,
      CASE WHEN y.mode = 'publish' THEN COALESCE(y.first_published_at, y.published_at)
           ELSE y.first_published_at END,
      y.publication_scheduled_at, y.unpublishing_scheduled_at, y.is_valid,
      y.is_current_version_valid, y.is_published_version_valid, y.current_version, y.stage,
      y.version_key, y.id,
      CASE WHEN y.mode = 'unpublish' THEN 'unpublish' ELSE y.event_type END
    FROM y
    WHERE NOT EXISTS (
      SELECT 1 FROM record_tombstones t
      WHERE t.environment = y.environment AND t.id = y.entity_id
        AND (t.updated_at, t.version_key COLLATE "C") > (y.updated_at, y.version_key))
    ON CONFLICT (environment, id) DO UPDATE SET
      item_type_id = EXCLUDED.item_type_id,
      is_block = false,
      root_id = NULL,
      block_parent_id = NULL,
      parent_id = EXCLUDED.parent_id,
      position = EXCLUDED.position,
      status = CASE
        WHEN EXCLUDED.status = 'published' THEN 'published'
        WHEN EXCLUDED.last_event_type = 'unpublish' THEN 'draft'
        WHEN r.published_attributes IS NOT NULL THEN 'updated'
        ELSE 'draft' END,
      current_attributes = EXCLUDED.current_attributes,
      published_attributes = CASE
        WHEN EXCLUDED.status = 'published' THEN EXCLUDED.current_attributes
        WHEN EXCLUDED.last_event_type = 'unpublish' THEN NULL
        ELSE r.published_attributes END,
      creator_type = COALESCE(EXCLUDED.creator_type, r.creator_type),
      creator_id = COALESCE(EXCLUDED.creator_id, r.creator_id),
      updated_at = EXCLUDED.updated_at,
      published_at = CASE
        WHEN EXCLUDED.status = 'published' THEN EXCLUDED.published_at
        WHEN EXCLUDED.last_event_type = 'unpublish' THEN NULL
        ELSE r.published_at END,
      first_published_at = COALESCE(r.first_published_at, EXCLUDED.first_published_at),
      publication_scheduled_at = EXCLUDED.publication_scheduled_at,
      unpublishing_scheduled_at = EXCLUDED.unpublishing_scheduled_at,
      is_valid = EXCLUDED.is_valid,
      is_current_version_valid = EXCLUDED.is_current_version_valid,
      is_published_version_valid = CASE
        WHEN EXCLUDED.status = 'published' THEN EXCLUDED.is_published_version_valid
        ELSE r.is_published_version_valid END,
      current_version = EXCLUDED.current_version,
      stage = EXCLUDED.stage,
      version_key = EXCLUDED.version_key,
      last_event_id = EXCLUDED.last_event_id,
      last_event_type = EXCLUDED.last_event_type
    WHERE (r.updated_at, r.version_key COLLATE "C") <= (EXCLUDED.updated_at, EXCLUDED.version_key)
    RETURNING r.environment, r.id),
  doc AS (
    SELECT t.environment, t.record_id, t.item_type_id, t.locale, t.versions, d.document
    FROM json_to_recordset(texts) AS t(environment text, record_id text, item_type_id text,
      locale text, config text, text text, versions text[])
    JOIN rec ON rec.environment = t.environment AND rec.id = t.record_id
    -- OFFSET 0 keeps the subquery apart: one to_tsvector per document, not per version.
    CROSS JOIN LATERAL (SELECT to_tsvector(t.config::regconfig, t.text) AS document OFFSET 0) d),
  txt AS (
    INSERT INTO record_texts (environment, record_id, version, locale, item_type_id, document)
    SELECT doc.environment, doc.record_id, v.version, doc.locale, doc.item_type_id, doc.document
    FROM doc CROSS JOIN LATERAL unnest(doc.versions) AS v(version)
    ON CONFLICT (environment, record_id, version, locale) DO UPDATE SET
      item_type_id = EXCLUDED.item_type_id, document = EXCLUDED.document)
  SELECT (SELECT coalesce(array_agg(ev.id), '{}') FROM ev), (SELECT count(*) FROM rec)
  INTO inserted, written;
END
$$;
