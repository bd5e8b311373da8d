-- migrations: 006
-- loadBatchContext (store/batch-context.ts): which event ids are stored, the environments, and
-- the models named by id or api_key in `model_keys` ([{environment, key}]), each with its
-- version: the xmin of its item_types row, which every change of the model or of its fields
-- (upsertModel rewrites the row) and every re-creation after a delete moves.
CREATE OR REPLACE FUNCTION herald_batch_context(event_ids text[], model_keys json,
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
