-- migrations: 028
-- writeItemBatch (store/records.ts): events and the records they write, in one statement (the
-- ingest hot path: migration 006 says why a function, and its settings).
-- `batch` holds one row per event: the event's columns, and for events that write a record the
-- record's (mode not null; the record is entity_id, its attributes `attributes`, or the entity's
-- when absent). The records are written by herald_upsert_records, those of the events inserted
-- now; `texts` ([{environment, record_id, item_type_id, locale, config, text,
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
  -- The records of the events inserted now, written by the one upsert of records.
  rec AS (
    SELECT u.environment, u.id FROM herald_upsert_records((
      SELECT json_agg(w) FROM (
        SELECT x.environment, x.entity_id AS id, x.item_type_id, x.mode, x.id AS event_id,
          x.event_type, coalesce(x.attributes, x.entity->'attributes', '{}') AS attributes,
          x.parent_id, x.position, x.creator_type, x.creator_id, x.created_at, x.updated_at,
          x.published_at, x.first_published_at, x.publication_scheduled_at,
          x.unpublishing_scheduled_at, x.is_valid, x.is_current_version_valid,
          x.is_published_version_valid, x.current_version, x.stage, x.version_key
        FROM x WHERE x.mode IS NOT NULL AND x.id IN (SELECT id FROM ev)) w)) u),
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
