import type { ModelField, ModelInfo } from '@herald/contract';
import type { Queryable } from './db.js';

export interface ModelWrite {
  id: string;
  apiKey: string;
  name: string;
  modularBlock: boolean;
  sortable: boolean;
  tree: boolean;
  draftModeActive: boolean;
  attributes: Record<string, unknown>;
}

export interface FieldWrite extends ModelField {
  id: string | null;
  label: string | null;
  position: number;
  attributes: Record<string, unknown>;
}

/** An item_types row with its fields, as MODEL_SELECT and herald_batch_context read it. */
export interface ModelRow extends Record<string, unknown> {
  id: string;
  api_key: string;
  modular_block: boolean;
  sortable: boolean;
  tree: boolean;
  draft_mode_active: boolean;
  fields: { api_key: string; field_type: string; localized: boolean }[] | null;
  version: string;
}

/** A model with the version it was read at: the xmin of its item_types row (migration 006). */
export type VersionedModel = ModelInfo & { version: string };

const MODEL_SELECT = `SELECT m.id, m.api_key, m.modular_block, m.sortable, m.tree,
    m.draft_mode_active, m.xmin::text AS version,
    (SELECT json_agg(json_build_object('api_key', f.api_key, 'field_type', f.field_type,
        'localized', f.localized) ORDER BY f.position, f.api_key)
     FROM fields f WHERE f.environment = m.environment AND f.item_type_id = m.id) AS fields
  FROM item_types m`;

export const toModel = (row: ModelRow): ModelInfo => ({
  id: row.id,
  apiKey: row.api_key,
  modularBlock: row.modular_block,
  sortable: row.sortable,
  tree: row.tree,
  draftModeActive: row.draft_mode_active,
  fields: (row.fields ?? []).map((f) => ({
    apiKey: f.api_key,
    fieldType: f.field_type,
    localized: f.localized,
  })),
});

/** The environment's models with these ids, by id (unknown ids are absent), with their versions. */
export async function loadModels(
  db: Queryable,
  environment: string,
  ids: readonly string[],
): Promise<Map<string, VersionedModel>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<ModelRow>(
    {
      name: 'herald.models.load',
      text: `${MODEL_SELECT} WHERE m.environment = $1 AND m.id = ANY($2::text[])`,
    },
    [environment, [...new Set(ids)]],
  );
  return new Map(rows.map((row) => [row.id, { ...toModel(row), version: row.version }]));
}

/** Models named by id or api_key (filter[type] mixes both); by the key they were asked with. */
export async function findModelsByIdOrApiKey(
  db: Queryable,
  environment: string,
  keys: readonly string[],
): Promise<Map<string, ModelInfo>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<ModelRow>(
    `${MODEL_SELECT} WHERE m.environment = $1 AND (m.id = ANY($2::text[]) OR m.api_key = ANY($2::text[]))`,
    [environment, [...new Set(keys)]],
  );
  const result = new Map<string, ModelInfo>();
  for (const model of rows.map(toModel)) {
    if (keys.includes(model.id)) result.set(model.id, model);
    if (keys.includes(model.apiKey)) result.set(model.apiKey, model);
  }
  return result;
}

export async function listModels(db: Queryable, environment: string): Promise<ModelInfo[]> {
  const { rows } = await db.query<ModelRow>(
    `${MODEL_SELECT} WHERE m.environment = $1 ORDER BY m.api_key`,
    [environment],
  );
  return rows.map(toModel);
}

/** The id of the model that holds this api_key, if any (api_keys are unique per environment). */
export async function findModelIdByApiKey(
  db: Queryable,
  environment: string,
  apiKey: string,
): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM item_types WHERE environment = $1 AND api_key = $2',
    [environment, apiKey],
  );
  return rows[0]?.id ?? null;
}

/** Creates or replaces a model and its whole list of fields. */
export async function upsertModel(
  db: Queryable,
  environment: string,
  model: ModelWrite,
  fields: readonly FieldWrite[],
): Promise<void> {
  await db.query(
    `INSERT INTO item_types (environment, id, api_key, name, modular_block, sortable, tree,
       draft_mode_active, attributes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (environment, id) DO UPDATE SET api_key = EXCLUDED.api_key,
       name = EXCLUDED.name, modular_block = EXCLUDED.modular_block,
       sortable = EXCLUDED.sortable, tree = EXCLUDED.tree,
       draft_mode_active = EXCLUDED.draft_mode_active, attributes = EXCLUDED.attributes,
       updated_at = now()`,
    [
      environment,
      model.id,
      model.apiKey,
      model.name,
      model.modularBlock,
      model.sortable,
      model.tree,
      model.draftModeActive,
      JSON.stringify(model.attributes),
    ],
  );
  await db.query('DELETE FROM fields WHERE environment = $1 AND item_type_id = $2', [
    environment,
    model.id,
  ]);
  if (fields.length === 0) return;
  await db.query(
    `INSERT INTO fields (environment, item_type_id, api_key, id, field_type, localized, label,
       position, attributes)
     SELECT $1, $2, x.api_key, x.id, x.field_type, x.localized, x.label, x.position, x.attributes
     FROM json_to_recordset($3::json) AS x(api_key text, id text, field_type text,
       localized boolean, label text, position integer, attributes jsonb)`,
    [
      environment,
      model.id,
      JSON.stringify(
        fields.map((f) => ({
          api_key: f.apiKey,
          id: f.id,
          field_type: f.fieldType,
          localized: f.localized,
          label: f.label,
          position: f.position,
          attributes: f.attributes,
        })),
      ),
    ],
  );
}

/** Deletes a model; its fields and records (and their blocks and texts) go with it. */
export async function deleteModel(db: Queryable, environment: string, id: string): Promise<void> {
  await db.query(
    `DELETE FROM record_texts t USING records r
     WHERE r.environment = $1 AND r.item_type_id = $2
       AND t.environment = r.environment AND t.record_id = r.id`,
    [environment, id],
  );
  await db.query('DELETE FROM records WHERE environment = $1 AND item_type_id = $2', [
    environment,
    id,
  ]);
  await db.query('DELETE FROM item_types WHERE environment = $1 AND id = $2', [environment, id]);
}
