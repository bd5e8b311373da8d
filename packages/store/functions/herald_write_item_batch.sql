-- migrations: 028
-- writeItemBatch (store/records.ts): events and the records they write, in one statement (the
-- ingest hot path: migration 006 says why a function, and its settings).
-- `batch` holds one row per event: the event's columns, and for events that write a record the
-- record's (mode not null; the record is entity_id, its attributes `attributes`, or the entity's
-- when absent). The records upsert is upsertRecordsSql's (records.ts), restricted to the events
-- inserted now; `texts` ([{environment, record_id, item_type_id, locale, config, text,
-- versions}]) are the documents of the records written, each computed once for all its versions.
-- `expected` (optional: {environments: [{id, locales, is_primary}], models: [{environment, id,
-- version}]}) is the context the batch was validated against when it came from a cache: if any
-- of it changed, nothing is written and `inserted` is NULL (the caller validates again).
-- Each event also gets the previous_attributes and record_status of migration 022, captured from
-- the records before they are written, and its traceparent (028).
CREATE OR REPLACE FUNCTION herald_write_item_batch(batch json, texts json, expected json,
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
      is_published_version_valid boolean, current_version text, stage text, version_key text,
      traceparent text)),
  ev AS (
    INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
      entity_id, item_type_id, item_type_api_key, occurred_at, entity, previous_entity,
      related_entities, previous_attributes, record_status, traceparent)
    SELECT x.id, x.environment, x.is_environment_primary, x.entity_type, x.event_type,
      x.entity_id, x.item_type_id, x.item_type_api_key, x.occurred_at, x.entity,
      x.previous_entity, coalesce(x.related_entities, '[]'),
      CASE WHEN x.entity_type = 'item' AND x.previous_entity IS NULL THEN coalesce(
        CASE WHEN x.event_type IN ('publish', 'unpublish') THEN p.published_attributes
             ELSE p.current_attributes END, '{}') END,
      CASE x.mode WHEN 'publish' THEN 'published' WHEN 'unpublish' THEN 'draft'
        WHEN 'save' THEN CASE WHEN p.published_attributes IS NOT NULL THEN 'updated'
                              ELSE 'draft' END END,
      x.traceparent
    -- The record as stored before this statement: every part of a statement reads the same
    -- snapshot, so `rec` below writing it does not show here.
    -- One lookup by key per event (herald_stored_record).
    FROM x LEFT JOIN LATERAL herald_stored_record(x.environment, x.entity_id) p
      ON x.entity_type = 'item'
    ORDER BY x.n
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
