import {
  BLOCK_FIELD_TYPES,
  mapBlockRefs,
  mapFieldValue,
  serializeItem,
  type ModelInfo,
  type StoredItem,
} from '@herald/contract';
import { loadBlocks, loadModels, type Queryable, type StoredEvent } from '@herald/store';
import type { JsonPatchOperation } from './changes.js';

/** docs/api.md, What a webhook call sends: the default body, keys in this order. */
export interface DefaultPayload {
  webhook_call_id: string;
  event_triggered_at: string;
  attempted_auto_retries_count: number;
  webhook_id: string;
  site_id: string;
  environment: string;
  is_environment_primary: boolean;
  entity_type: string;
  event_type: string;
  entity: unknown;
  previous_entity?: unknown;
  /** Extension, with `payload_changes`: JSON Patch from the previous to the new attributes. */
  changes?: JsonPatchOperation[] | null;
  related_entities: unknown[];
}

export function buildDefaultPayload(input: {
  callId: string;
  webhookId: string;
  siteId: string;
  attemptedAutoRetriesCount: number;
  event: StoredEvent;
  entity: unknown;
  previousEntity: unknown;
  /** Present (null when unknown) only for webhooks with `payload_changes`. */
  changes?: JsonPatchOperation[] | null;
}): DefaultPayload {
  const { event } = input;
  const payload: Omit<DefaultPayload, 'related_entities'> & { related_entities?: unknown[] } = {
    webhook_call_id: input.callId,
    event_triggered_at: event.occurredAt.toISOString(),
    attempted_auto_retries_count: input.attemptedAutoRetriesCount,
    webhook_id: input.webhookId,
    site_id: input.siteId,
    environment: event.environment,
    is_environment_primary: event.isEnvironmentPrimary,
    entity_type: event.entityType,
    event_type: event.eventType,
    entity: input.entity,
  };
  // The key is present only when the event carries a previous entity.
  if (event.previousEntity !== null && event.previousEntity !== undefined) {
    payload.previous_entity = input.previousEntity;
  }
  if (input.changes !== undefined) payload.changes = input.changes;
  payload.related_entities = event.relatedEntities.map(canonicalItem);
  return payload as DefaultPayload;
}

interface ItemLike {
  id?: unknown;
  attributes?: Record<string, unknown>;
  relationships?: { item_type?: { data?: { id?: unknown } } };
}

const isBlockObject = (ref: unknown): ref is { id: string } =>
  !!ref && typeof ref === 'object' && typeof (ref as { id?: unknown }).id === 'string';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  !!value && typeof value === 'object' && !Array.isArray(value);

const META_ORDER = [
  'created_at',
  'updated_at',
  'published_at',
  'first_published_at',
  'publication_scheduled_at',
  'unpublishing_scheduled_at',
  'status',
  'is_valid',
  'is_current_version_valid',
  'is_published_version_valid',
  'current_version',
  'stage',
  'has_children',
];

/** The listed keys first, in that order, then the others as they come. */
function ordered(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const key of keys) if (key in value) result[key] = value[key];
  for (const [key, v] of Object.entries(value)) if (!(key in result)) result[key] = v;
  return result;
}

const resourceIdentifier = (value: unknown): unknown =>
  isPlainObject(value) ? ordered(value, ['type', 'id']) : value;

/**
 * An item object in the key order GET /items writes (type, id, attributes, relationships, meta):
 * the event's entity comes back from jsonb, which reorders keys.
 */
function canonicalItem(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  const item = ordered(value, ['type', 'id', 'attributes', 'relationships', 'meta']);
  if (isPlainObject(item['relationships'])) {
    const relationships = ordered(item['relationships'], ['item_type', 'creator']);
    for (const [name, rel] of Object.entries(relationships)) {
      if (isPlainObject(rel) && 'data' in rel) {
        relationships[name] = {
          ...rel,
          data: Array.isArray(rel['data'])
            ? rel['data'].map(resourceIdentifier)
            : resourceIdentifier(rel['data']),
        };
      }
    }
    item['relationships'] = relationships;
  }
  if (isPlainObject(item['meta'])) item['meta'] = ordered(item['meta'], META_ORDER);
  return item;
}

/** Where serialization reads models from (the deliver worker batches these reads). */
export type ModelSource = (
  environment: string,
  ids: readonly string[],
) => Promise<Map<string, ModelInfo>>;

/**
 * An item entity as GET /items serializes it: block fields hold ids, or (nested) full block
 * objects. The event holds the entity as the producer sent it (blocks as ids or expanded); ids are
 * expanded from the record store, expanded blocks collapsed to ids. Other entities pass unchanged.
 */
export async function serializeEntity(
  db: Queryable,
  environment: string,
  entity: unknown,
  nested: boolean,
  models: ModelSource = (env, ids) => loadModels(db, env, ids),
): Promise<unknown> {
  const item = entity as ItemLike | null;
  const itemTypeId = item?.relationships?.item_type?.data?.id;
  if (!item?.attributes || typeof itemTypeId !== 'string' || typeof item.id !== 'string') {
    return entity;
  }
  const { id, attributes } = item;
  const canonical = serializeBlocks(
    db,
    environment,
    { ...item, id, attributes },
    itemTypeId,
    nested,
    models,
  );
  return canonicalItem(await canonical);
}

async function serializeBlocks(
  db: Queryable,
  environment: string,
  entity: ItemLike & { id: string; attributes: Record<string, unknown> },
  itemTypeId: string,
  nested: boolean,
  loadModelsOf: ModelSource,
): Promise<unknown> {
  const item = entity;
  const models = await loadModelsOf(environment, [itemTypeId]);
  const model = models.get(itemTypeId);
  const blockFields = model?.fields.filter((f) => BLOCK_FIELD_TYPES.has(f.fieldType)) ?? [];
  if (!model || blockFields.length === 0) return entity;

  if (!nested) {
    const attributes = { ...item.attributes };
    for (const field of blockFields) {
      if (!(field.apiKey in attributes)) continue;
      attributes[field.apiKey] = mapFieldValue(field, attributes[field.apiKey], (v) =>
        mapBlockRefs(field.fieldType, v, (ref) => (isBlockObject(ref) ? ref.id : ref)),
      );
    }
    return { ...item, attributes };
  }

  const blocks = await loadBlocks(db, environment, [item.id]);
  const blockModelIds = [...new Set([...blocks.values()].map((b) => b.itemTypeId))];
  const allModels = new Map<string, ModelInfo>([
    ...models,
    ...(await loadModelsOf(environment, blockModelIds)),
  ]);
  // serializeItem does the expansion; only its attributes are used (meta comes from the event).
  const shell: StoredItem = {
    id: item.id,
    itemTypeId,
    isBlock: false,
    rootId: null,
    parentId: null,
    position: null,
    status: 'draft',
    currentAttributes: item.attributes,
    publishedAttributes: null,
    creator: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
    publishedAt: null,
    firstPublishedAt: null,
    publicationScheduledAt: null,
    unpublishingScheduledAt: null,
    isValid: true,
    isCurrentVersionValid: true,
    isPublishedVersionValid: true,
    currentVersion: null,
    stage: null,
  };
  const expanded = serializeItem(shell, {
    version: 'current',
    nested: true,
    blocks,
    models: allModels,
  });
  const attributes = expanded?.attributes ?? item.attributes;
  for (const field of blockFields) {
    if (!(field.apiKey in attributes)) continue;
    attributes[field.apiKey] = mapFieldValue(field, attributes[field.apiKey], (v) =>
      mapBlockRefs(field.fieldType, v, canonicalItem),
    );
  }
  return { ...item, attributes };
}
