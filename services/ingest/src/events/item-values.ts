import {
  ApiError,
  BLOCK_FIELD_TYPES,
  isPosition,
  mapBlockRefs,
  type ErrorEntry,
  type ModelField,
  type ModelInfo,
  isObject,
} from '@herald/contract';

/** A block found expanded in a record's attributes, with block ids in its own block fields. */
interface ExtractedBlock {
  id: string;
  itemTypeId: string;
  parentId: string;
  attributes: Record<string, unknown>;
}

export interface ExtractedItem {
  /** The record's attributes with every block replaced by its id. */
  attributes: Record<string, unknown>;
  blocks: ExtractedBlock[];
  /** Every block id referenced at any depth (expanded or given as an id). */
  referencedIds: string[];
  /** Block ids given as ids only: the stored blocks stand (their text is loaded for search). */
  idOnlyRefs: string[];
}

export interface ValidationContext {
  models: ReadonlyMap<string, ModelInfo>;
  locales: readonly string[];
  errors: ErrorEntry[];
}

/** A walk through a record's attributes and, recursively, its blocks'. */
interface Walk {
  ctx: ValidationContext;
  result: ExtractedItem;
  /** The record or block whose attributes these are: their blocks' parent. */
  ownerId: string;
  /** How many blocks deep the walk is. */
  depth: number;
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DEPTH = 16;
/** Attributes that sortable and tree models carry beside their fields. */
const SORTABLE_ATTRIBUTES = new Set(['position']);
const TREE_ATTRIBUTES = new Set(['position', 'parent_id']);

const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/**
 * Validates a record's attributes against its model (docs/api.md, POST /events: unknown field or
 * wrong value shape → 422) and extracts expanded blocks, recursively. Problems are pushed to
 * ctx.errors with `path` as the prefix of their field names.
 */
export function extractItem(
  model: ModelInfo,
  attributes: Record<string, unknown>,
  ownerId: string,
  path: string,
  ctx: ValidationContext,
): ExtractedItem {
  const result: ExtractedItem = { attributes: {}, blocks: [], referencedIds: [], idOnlyRefs: [] };
  visitAttributes(model, attributes, path, { ctx, result, ownerId, depth: 0 }, result.attributes);
  return result;
}

function visitAttributes(
  model: ModelInfo,
  attributes: Record<string, unknown>,
  path: string,
  walk: Walk,
  out: Record<string, unknown>,
): void {
  const { ctx } = walk;
  const fields = new Map(model.fields.map((field) => [field.apiKey, field]));
  const extra = model.tree ? TREE_ATTRIBUTES : model.sortable ? SORTABLE_ATTRIBUTES : undefined;
  for (const [key, value] of Object.entries(attributes)) {
    const field = fields.get(key);
    const fieldPath = `${path}.${key}`;
    if (!field) {
      if (extra?.has(key) && !model.modularBlock) {
        const ok =
          value === null || (key === 'position' ? isPosition(value) : typeof value === 'string');
        if (!ok && Number.isInteger(value)) {
          fail(ctx, fieldPath, 'VALIDATION_LENGTH', `${key} must be a 32-bit integer`);
        } else if (!ok) {
          fail(ctx, fieldPath, 'VALIDATION_TYPE', `${key} has the wrong type`);
        }
        out[key] = value;
        continue;
      }
      fail(ctx, fieldPath, 'VALIDATION_INCLUSION', `unknown field of model ${model.apiKey}`);
      continue;
    }
    if (field.localized) {
      if (value === null) {
        out[key] = null;
        continue;
      }
      if (!isObject(value)) {
        fail(ctx, fieldPath, 'VALIDATION_TYPE', 'a localized field takes an object by locale');
        continue;
      }
      const localized: Record<string, unknown> = {};
      for (const [locale, v] of Object.entries(value)) {
        if (!ctx.locales.includes(locale)) {
          fail(
            ctx,
            `${fieldPath}.${locale}`,
            'VALIDATION_INCLUSION',
            `unknown locale (the environment's locales are ${ctx.locales.join(', ')})`,
          );
          continue;
        }
        localized[locale] = visitValue(field, v, `${fieldPath}.${locale}`, walk);
      }
      out[key] = localized;
    } else {
      out[key] = visitValue(field, value, fieldPath, walk);
    }
  }
}

function fail(
  ctx: ValidationContext,
  field: string,
  code: Parameters<typeof ApiError.field>[1],
  message: string,
): void {
  if (ctx.errors.length < 100) ctx.errors.push(ApiError.field(field, code, message));
}

function visitValue(field: ModelField, value: unknown, path: string, walk: Walk): unknown {
  const { ctx } = walk;
  if (BLOCK_FIELD_TYPES.has(field.fieldType)) {
    if (!blockFieldShapeOk(field.fieldType, value)) {
      fail(ctx, path, 'VALIDATION_TYPE', shapeMessage(field.fieldType));
      return value;
    }
    let n = 0;
    return mapBlockRefs(field.fieldType, value, (ref) => {
      const refPath = field.fieldType === 'rich_text' ? `${path}.${n++}` : path;
      return visitBlockRef(ref, refPath, walk);
    });
  }
  if (!valueShapeOk(field.fieldType, value)) {
    fail(ctx, path, 'VALIDATION_TYPE', shapeMessage(field.fieldType));
  }
  return value;
}

function visitBlockRef(ref: unknown, path: string, walk: Walk): unknown {
  const { ctx, result, ownerId, depth } = walk;
  if (typeof ref === 'string') {
    if (!ID.test(ref)) fail(ctx, path, 'VALIDATION_FORMAT', 'must be a block id or a block');
    result.referencedIds.push(ref);
    result.idOnlyRefs.push(ref);
    return ref;
  }
  if (!isObject(ref)) {
    fail(ctx, path, 'VALIDATION_TYPE', 'must be a block id or a block object');
    return ref;
  }
  const id = ref['id'];
  const modelId = (ref['relationships'] as { item_type?: { data?: { id?: unknown } } } | undefined)
    ?.item_type?.data?.id;
  if (typeof id !== 'string' || !ID.test(id)) {
    fail(ctx, `${path}.id`, 'VALIDATION_REQUIRED', 'a block needs an id (1–64 of A-Z a-z 0-9 _ -)');
    return ref;
  }
  if (typeof modelId !== 'string') {
    fail(
      ctx,
      `${path}.relationships.item_type.data.id`,
      'VALIDATION_REQUIRED',
      'a block needs its model',
    );
    return id;
  }
  const model = ctx.models.get(modelId);
  if (!model || !model.modularBlock) {
    fail(
      ctx,
      `${path}.relationships.item_type.data.id`,
      'VALIDATION_INCLUSION',
      model ? 'is not a block model' : 'unknown block model',
    );
    return id;
  }
  if (depth >= MAX_DEPTH) {
    fail(ctx, path, 'VALIDATION_LENGTH', `blocks nest at most ${MAX_DEPTH} levels deep`);
    return id;
  }
  const attributes = ref['attributes'] ?? {};
  if (!isObject(attributes)) {
    fail(ctx, `${path}.attributes`, 'VALIDATION_TYPE', 'must be an object');
    return id;
  }
  const out: Record<string, unknown> = {};
  const inner: Walk = { ctx, result, ownerId: id, depth: depth + 1 };
  visitAttributes(model, attributes, `${path}.attributes`, inner, out);
  result.blocks.push({ id, itemTypeId: modelId, parentId: ownerId, attributes: out });
  result.referencedIds.push(id);
  return id;
}

function blockFieldShapeOk(fieldType: string, value: unknown): boolean {
  if (value === null) return true;
  switch (fieldType) {
    case 'rich_text':
      return Array.isArray(value);
    case 'single_block':
      return typeof value === 'string' || isObject(value);
    case 'structured_text':
      return isObject(value) && value['schema'] === 'dast' && isObject(value['document']);
    default:
      return false;
  }
}

const isFile = (v: unknown): boolean =>
  isObject(v) && typeof v['upload_id'] === 'string' && v['upload_id'].length > 0;
const isColorPart = (v: unknown): boolean =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 255;

/**
 * Value shapes by field type (docs/api.md, POST /events); unknown types are accepted as they come.
 */
function valueShapeOk(fieldType: string, value: unknown): boolean {
  if (value === null) return true;
  switch (fieldType) {
    case 'string':
    case 'text':
    case 'slug':
    case 'json':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isSafeInteger(value);
    case 'float':
      return isNumber(value);
    case 'date':
      return typeof value === 'string' && DATE.test(value) && !Number.isNaN(Date.parse(value));
    case 'date_time':
      return (
        typeof value === 'string' &&
        /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/.test(value) &&
        !Number.isNaN(Date.parse(value))
      );
    case 'color':
      return (
        isObject(value) && ['red', 'green', 'blue', 'alpha'].every((k) => isColorPart(value[k]))
      );
    case 'lat_lon':
      return (
        isObject(value) &&
        isNumber(value['latitude']) &&
        Math.abs(value['latitude']) <= 90 &&
        isNumber(value['longitude']) &&
        Math.abs(value['longitude']) <= 180
      );
    case 'seo':
    case 'video':
      return isObject(value);
    case 'file':
      return isFile(value);
    case 'gallery':
      return Array.isArray(value) && value.every(isFile);
    case 'link':
      return typeof value === 'string' && ID.test(value);
    case 'links':
      return Array.isArray(value) && value.every((v) => typeof v === 'string' && ID.test(v));
    default:
      return true;
  }
}

function shapeMessage(fieldType: string): string {
  const shapes: Record<string, string> = {
    string: 'a string',
    text: 'a string',
    slug: 'a string',
    json: 'a JSON-encoded string',
    boolean: 'a boolean',
    integer: 'an integer',
    float: 'a number',
    date: 'a date YYYY-MM-DD',
    date_time: 'an ISO-8601 date-time',
    color: 'an object {red, green, blue, alpha} of integers 0–255',
    lat_lon: 'an object {latitude, longitude}',
    seo: 'an object',
    video: 'an object',
    file: 'an object with an upload_id',
    gallery: 'an array of file objects',
    link: 'a record id',
    links: 'an array of record ids',
    rich_text: 'an array of blocks or block ids',
    single_block: 'a block or a block id',
    structured_text: 'an object {"schema": "dast", "document": {...}}',
  };
  return `must be ${shapes[fieldType] ?? 'a valid value'} or null (field type ${fieldType})`;
}
