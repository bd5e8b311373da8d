-- migrations: 002
-- The upsert of top-level records (upsertRecords in store/records.ts, and herald_write_item_batch
-- for the records of its events): one row per record in `writes` ([{environment, id,
-- item_type_id, mode, event_id, event_type, attributes, …}]). On insert the mode is spelled into
-- status and published_attributes; on conflict EXCLUDED.status ('published' ⇔ publish) and
-- EXCLUDED.last_event_type ('unpublish') tell the mode apart. An event older than the stored
-- record (by updated_at, then current_version) or than its deletion changes nothing and is not
-- returned; `inserted` says a record is new. A PL/pgSQL function for its plan, prepared once per
-- connection, with the settings of the ingest path's (migration 006).
CREATE OR REPLACE FUNCTION herald_upsert_records(writes json)
RETURNS TABLE (environment text, id text, inserted boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  INSERT INTO records AS r (environment, id, item_type_id, is_block, parent_id, position,
    status, current_attributes, published_attributes, creator_type, creator_id, created_at,
    updated_at, published_at, first_published_at, publication_scheduled_at,
    unpublishing_scheduled_at, is_valid, is_current_version_valid, is_published_version_valid,
    current_version, stage, version_key, last_event_id, last_event_type)
  SELECT x.environment, x.id, x.item_type_id, false, x.parent_id, x.position,
    CASE WHEN x.mode = 'publish' THEN 'published' ELSE 'draft' END,
    x.attributes,
    CASE WHEN x.mode = 'publish' THEN x.attributes END,
    x.creator_type, x.creator_id, x.created_at, x.updated_at,
    CASE WHEN x.mode = 'publish' THEN x.published_at END,
    CASE WHEN x.mode = 'publish' THEN COALESCE(x.first_published_at, x.published_at)
         ELSE x.first_published_at END,
    x.publication_scheduled_at, x.unpublishing_scheduled_at, x.is_valid,
    x.is_current_version_valid, x.is_published_version_valid, x.current_version, x.stage,
    x.version_key, x.event_id,
    CASE WHEN x.mode = 'unpublish' THEN 'unpublish' ELSE x.event_type END
  FROM json_to_recordset(writes) AS x(environment text, id text, item_type_id text,
    mode text, event_id text, event_type text, attributes jsonb, parent_id text,
    position integer, creator_type text, creator_id text, created_at timestamptz,
    updated_at timestamptz, published_at timestamptz, first_published_at timestamptz,
    publication_scheduled_at timestamptz, unpublishing_scheduled_at timestamptz,
    is_valid boolean, is_current_version_valid boolean, is_published_version_valid boolean,
    current_version text, stage text, version_key text)
  WHERE NOT EXISTS (
    SELECT 1 FROM record_tombstones t
    WHERE t.environment = x.environment AND t.id = x.id
      AND (t.updated_at, t.version_key COLLATE "C") > (x.updated_at, x.version_key))
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
  RETURNING r.environment, r.id, (r.xmax = 0);
END
$$;
