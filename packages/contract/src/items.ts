/**
 * The item resource (docs/api.md, GET /items), built from stored records. It lives in the contract
 * because three services produce it: read (GET /items), delivery (the webhook payload's `entity`,
 * docs/api.md, What a webhook call sends) and ingest (which stores the blocks it extracts here). It
 * is pure: callers load the rows.
 */
import type { BlockResource, ItemResource } from './resources.js';

/** A model as far as serialization and validation need it. */
export interface ModelField {
  apiKey: string;
  fieldType: string;
  localized: boolean;
}

export interface ModelInfo {
  id: string;
  apiKey: string;
  modularBlock: boolean;
  sortable: boolean;
  tree: boolean;
  draftModeActive: boolean;
  fields: ModelField[];
}

/** A stored record or block: one row of `records`, in camelCase. */
export interface StoredItem {
  id: string;
  itemTypeId: string;
  isBlock: boolean;
  rootId: string | null;
  parentId: string | null;
  position: number | null;
  status: 'draft' | 'updated' | 'published';
  currentAttributes: Record<string, unknown> | null;
  publishedAttributes: Record<string, unknown> | null;
  creator: { type: string; id: string } | null;
  createdAt: Date;
  updatedAt: Date;
  publishedAt: Date | null;
  firstPublishedAt: Date | null;
  publicationScheduledAt: Date | null;
  unpublishingScheduledAt: Date | null;
  isValid: boolean;
  isCurrentVersionValid: boolean;
  isPublishedVersionValid: boolean;
  currentVersion: string | null;
  stage: string | null;
}

export type ItemVersion = 'current' | 'published';

/** Field types whose values reference blocks. */
export const BLOCK_FIELD_TYPES: ReadonlySet<string> = new Set([
  'rich_text',
  'single_block',
  'structured_text',
]);

export interface SerializeItemOptions {
  version: ItemVersion;
  /** Expand blocks into full block objects, recursively (`nested=true`). */
  nested?: boolean;
  /** The record's blocks by id (needed with `nested`); see loadBlocks in the store. */
  blocks?: ReadonlyMap<string, StoredItem>;
  /** Models by id (needed with `nested`, to know which fields hold blocks). */
  models?: ReadonlyMap<string, ModelInfo>;
  /** `meta.has_children` for tree models; null elsewhere. */
  hasChildren?: boolean | null;
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/** The attributes of the given version, or null when the record has no such version. */
export function versionAttributes(
  item: StoredItem,
  version: ItemVersion,
): Record<string, unknown> | null {
  return version === 'published' ? item.publishedAttributes : item.currentAttributes;
}

/**
 * The item resource (docs/api.md, GET /items) for one version of a stored record; null when the
 * record has no version of that kind (never published, for `published`).
 */
export function serializeItem(
  item: StoredItem,
  options: SerializeItemOptions,
): ItemResource | null {
  const attributes = versionAttributes(item, options.version);
  if (!attributes) return null;
  const relationships: ItemResource['relationships'] = {
    item_type: { data: { type: 'item_type', id: item.itemTypeId } },
  };
  if (item.creator) relationships.creator = { data: item.creator };
  return {
    type: 'item',
    id: item.id,
    attributes: options.nested ? expandBlocks(item.itemTypeId, attributes, options, 0) : attributes,
    relationships,
    meta: {
      created_at: item.createdAt.toISOString(),
      updated_at: item.updatedAt.toISOString(),
      published_at: iso(item.publishedAt),
      first_published_at: iso(item.firstPublishedAt),
      publication_scheduled_at: iso(item.publicationScheduledAt),
      unpublishing_scheduled_at: iso(item.unpublishingScheduledAt),
      status: item.status,
      is_valid: item.isValid,
      is_current_version_valid: item.isCurrentVersionValid,
      is_published_version_valid: item.isPublishedVersionValid,
      current_version: item.currentVersion,
      stage: item.stage,
      has_children: options.hasChildren ?? null,
    },
  };
}

// Blocks nest in practice a few levels deep; the cap only guards against a cycle in stored data.
const MAX_BLOCK_DEPTH = 32;

function expandBlocks(
  itemTypeId: string,
  attributes: Record<string, unknown>,
  options: SerializeItemOptions,
  depth: number,
): Record<string, unknown> {
  const model = options.models?.get(itemTypeId);
  if (!model || depth > MAX_BLOCK_DEPTH) return attributes;
  const expandId = (id: string): BlockResource | string => {
    const block = options.blocks?.get(id);
    if (!block) return id;
    const blockAttributes =
      versionAttributes(block, options.version) ?? block.currentAttributes ?? {};
    return {
      type: 'item',
      id: block.id,
      attributes: expandBlocks(block.itemTypeId, blockAttributes, options, depth + 1),
      relationships: { item_type: { data: { type: 'item_type', id: block.itemTypeId } } },
    };
  };
  const result: Record<string, unknown> = { ...attributes };
  for (const field of model.fields) {
    if (!BLOCK_FIELD_TYPES.has(field.fieldType) || !(field.apiKey in attributes)) continue;
    const value = attributes[field.apiKey];
    result[field.apiKey] = mapFieldValue(field, value, (v) =>
      mapBlockRefs(field.fieldType, v, (ref) => (typeof ref === 'string' ? expandId(ref) : ref)),
    );
  }
  return result;
}

/** Applies fn to a field's value, or to each locale's value of a localized field. */
export function mapFieldValue(
  field: Pick<ModelField, 'localized'>,
  value: unknown,
  fn: (value: unknown, locale: string | null) => unknown,
): unknown {
  if (!field.localized) return fn(value, null);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const result: Record<string, unknown> = {};
  for (const [locale, v] of Object.entries(value)) result[locale] = fn(v, locale);
  return result;
}

/**
 * Rewrites each block reference of one (non-localized) value of a block field: the items of a
 * rich_text array, a single_block value, the `item` of structured_text block/inlineBlock nodes.
 * A reference is a block id (string) or an expanded block object.
 */
export function mapBlockRefs(
  fieldType: string,
  value: unknown,
  fn: (ref: unknown) => unknown,
): unknown {
  switch (fieldType) {
    case 'rich_text':
      return Array.isArray(value) ? value.map(fn) : value;
    case 'single_block':
      return value === null || value === undefined ? value : fn(value);
    case 'structured_text': {
      if (!value || typeof value !== 'object') return value;
      const { document } = value as { document?: unknown };
      if (!document || typeof document !== 'object') return value;
      return { ...value, document: mapDastNode(document, fn, 0) };
    }
    default:
      return value;
  }
}

function mapDastNode(node: unknown, fn: (ref: unknown) => unknown, depth: number): unknown {
  if (!node || typeof node !== 'object' || Array.isArray(node) || depth > 64) return node;
  const record = node as Record<string, unknown>;
  let result = record;
  if ((record['type'] === 'block' || record['type'] === 'inlineBlock') && 'item' in record) {
    result = { ...record, item: fn(record['item']) };
  }
  if (Array.isArray(record['children'])) {
    result = {
      ...result,
      children: record['children'].map((child) => mapDastNode(child, fn, depth + 1)),
    };
  }
  return result;
}
