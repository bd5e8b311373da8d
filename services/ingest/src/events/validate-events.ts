import { ZodError, type z } from 'zod';
import {
  ApiError,
  ENTITY_BYTES_MAX,
  EVENTS_PER_REQUEST_MAX,
  EVENT_TYPES_BY_ENTITY,
  EnvironmentEntity,
  EventInput,
  FieldEntity,
  ItemEntity,
  ItemMeta,
  ItemTypeEntity,
  isEventTypeOf,
  type EntityType,
  type ErrorEntry,
  isObject,
} from '@herald/contract';
import { issueToEntry } from '../validation/zod-errors.js';

/** One event of the batch after shape validation, with its entity narrowed by entity type. */
export type ValidEvent = EventInput & {
  index: number;
  /** JSON.stringify(attributes.entity), measured against ENTITY_BYTES_MAX and stored as is. */
  entityJson: string;
} & (
    | { kind: 'item'; item: ItemEntity }
    | { kind: 'item_type'; itemType: ItemTypeEntity; fields: FieldEntity[] }
    | { kind: 'environment'; environmentEntity: EnvironmentEntity }
    | { kind: 'other' }
  );

/** At most this many problems are reported for one batch. */
const MAX_ERRORS = 100;

/** zod issues as INVALID_FIELD entries under `prefix` (e.g. `data.3`). */
function issuesToEntries(prefix: string, error: z.ZodError, input: unknown): ErrorEntry[] {
  return error.issues.map((issue) => issueToEntry(prefix, issue, input));
}

/**
 * Validates the body of POST /events as a whole batch (docs/api.md, POST /events): `data` is one
 * event or 1–1000 of them; each event's shape, its event type for its entity type, its entity's
 * size and shape. Throws one ApiError listing every problem found (capped), naming
 * `data.<index>.<field>`.
 */
export function validateEventsBody(body: unknown): ValidEvent[] {
  if (!body || typeof body !== 'object' || Array.isArray(body) || !('data' in body)) {
    throw new ApiError('INVALID_FORMAT', {
      message: 'The body must be a JSON:API document: {"data": [event, ...]}',
    });
  }
  const data = body.data;
  const list = Array.isArray(data) ? data : [data];
  if (list.length === 0 || list.length > EVENTS_PER_REQUEST_MAX) {
    throw ApiError.many([
      ApiError.field(
        'data',
        'VALIDATION_LENGTH',
        `must hold between 1 and ${EVENTS_PER_REQUEST_MAX} events (got ${list.length})`,
      ),
    ]);
  }
  const errors: ErrorEntry[] = [];
  const events: ValidEvent[] = [];
  for (const [index, raw] of list.entries()) {
    if (errors.length >= MAX_ERRORS) break;
    const result = validateEvent(index, raw);
    if (Array.isArray(result)) errors.push(...result);
    else events.push(result);
  }
  if (errors.length > 0) throw ApiError.many(errors.slice(0, MAX_ERRORS));
  return events;
}

function validateEvent(index: number, raw: unknown): ValidEvent | ErrorEntry[] {
  const prefix = `data.${index}`;
  const fast = parseItemEventFast(raw);
  let event: EventInput;
  if (fast) {
    event = fast;
  } else {
    const parsed = EventInput.safeParse(raw);
    if (!parsed.success) return issuesToEntries(prefix, parsed.error, raw);
    event = parsed.data;
  }
  const { entity_type: entityType, event_type: eventType, entity } = event.attributes;
  if (!isEventTypeOf(entityType, eventType)) {
    return [
      ApiError.field(
        `${prefix}.attributes.event_type`,
        'VALIDATION_INCLUSION',
        `must be one of ${EVENT_TYPES_BY_ENTITY[entityType].join(', ')} for entity_type ${entityType}`,
      ),
    ];
  }
  const entityJson = JSON.stringify(entity);
  for (const key of ['entity', 'previous_entity'] as const) {
    const value = event.attributes[key];
    const json = key === 'entity' ? entityJson : value ? JSON.stringify(value) : '';
    if (Buffer.byteLength(json) > ENTITY_BYTES_MAX) {
      return [
        ApiError.field(
          `${prefix}.attributes.${key}`,
          'VALIDATION_LENGTH',
          `must not exceed ${ENTITY_BYTES_MAX / 1024} KB`,
        ),
      ];
    }
  }
  if (fast) {
    // Checked whole by parseItemEventFast: the entity is the item as ItemEntity would give it.
    const item = { ...(entity as ItemEntity), attributes: entity.attributes ?? {} };
    return { ...event, index, entityJson, kind: 'item', item };
  }
  const entityPrefix = `${prefix}.attributes.entity`;
  const narrowed = narrowEntity(entityType, eventType, entity, event.attributes.related_entities);
  if ('errors' in narrowed) {
    return narrowed.errors.flatMap(({ path, error, input }) =>
      issuesToEntries(
        path === 'entity' ? entityPrefix : `${prefix}.attributes.${path}`,
        error,
        input,
      ),
    );
  }
  if (narrowed.kind === 'environment') {
    const declared = event.attributes.environment;
    if (declared !== undefined && declared !== narrowed.environmentEntity.id) {
      return [
        ApiError.field(
          `${prefix}.attributes.environment`,
          'VALIDATION_INCLUSION',
          'must equal entity.id for environment events',
        ),
      ];
    }
  }
  return { ...event, index, entityJson, ...narrowed };
}

type Narrowed =
  | { kind: 'item'; item: ItemEntity }
  | { kind: 'item_type'; itemType: ItemTypeEntity; fields: FieldEntity[] }
  | { kind: 'environment'; environmentEntity: EnvironmentEntity }
  | { kind: 'other' };

function narrowEntity(
  entityType: EntityType,
  eventType: string,
  entity: unknown,
  related: unknown[],
): Narrowed | { errors: { path: string; error: z.ZodError; input: unknown }[] } {
  switch (entityType) {
    case 'item': {
      const item = ItemEntity.safeParse(entity);
      if (!item.success) return { errors: [{ path: 'entity', error: item.error, input: entity }] };
      if (eventType !== 'delete' && !item.data.relationships) {
        const missing = ItemEntity.required({ relationships: true }).safeParse(entity);
        if (!missing.success)
          return { errors: [{ path: 'entity', error: missing.error, input: entity }] };
      }
      return { kind: 'item', item: item.data };
    }
    case 'item_type': {
      const schema =
        eventType === 'delete' ? ItemTypeEntity : ItemTypeEntity.required({ attributes: true });
      const itemType = schema.safeParse(entity);
      const errors: { path: string; error: z.ZodError; input: unknown }[] = [];
      if (!itemType.success) errors.push({ path: 'entity', error: itemType.error, input: entity });
      const fields: FieldEntity[] = [];
      for (const [i, candidate] of related.entries()) {
        if ((candidate as { type?: unknown }).type !== 'field') continue;
        const field = FieldEntity.safeParse(candidate);
        if (field.success) fields.push(field.data);
        else errors.push({ path: `related_entities.${i}`, error: field.error, input: candidate });
      }
      if (errors.length > 0 || !itemType.success) return { errors };
      const seen = new Set<string>();
      for (const field of fields) {
        if (seen.has(field.attributes.api_key)) {
          return {
            errors: [
              {
                path: 'related_entities',
                input: related,
                error: new ZodError([
                  {
                    code: 'custom',
                    path: [],
                    input: field.attributes.api_key,
                    message: `two fields share the api_key ${field.attributes.api_key}`,
                    params: { code: 'VALIDATION_UNIQUENESS' },
                  },
                ]),
              },
            ],
          };
        }
        seen.add(field.attributes.api_key);
      }
      return { kind: 'item_type', itemType: itemType.data, fields };
    }
    case 'environment': {
      const environmentEntity = EnvironmentEntity.safeParse(entity);
      if (!environmentEntity.success) {
        return { errors: [{ path: 'entity', error: environmentEntity.error, input: entity }] };
      }
      return { kind: 'environment', environmentEntity: environmentEntity.data };
    }
    case 'upload':
    case 'build_trigger':
    case 'maintenance_mode':
    case 'sso_user':
    case 'cda_cache_tags':
      return { kind: 'other' };
  }
}

// The common event, checked by hand: zod's EventInput + ItemEntity walk and copy every object
// of every event, which cost as much as storing it. parseItemEventFast accepts only what those
// schemas accept, and only shapes whose zod output equals the input (no key that zod would strip
// or default); anything else (including every invalid event) goes through zod, which then
// produces the same value or the same error entries as before.

const EVENT_KEYS = new Set(['type', 'id', 'attributes']);
const ATTRIBUTE_KEYS = new Set([
  'entity_type',
  'event_type',
  'environment',
  'occurred_at',
  'entity',
  'previous_entity',
  'related_entities',
]);
const ITEM_EVENT_TYPES: ReadonlySet<unknown> = new Set(EVENT_TYPES_BY_ENTITY.item);
const EVENT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const ENTITY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const attributesShape = EventInput.shape.attributes.shape;
const metaShape = ItemMeta.shape;

/** What z.record accepts: a plain object. */
const isRecord = (value: unknown): value is Record<string, unknown> =>
  isObject(value) && Object.getPrototypeOf(value) === Object.prototype;
const onlyKeys = (value: Record<string, unknown>, keys: ReadonlySet<string>): boolean => {
  for (const key in value) if (!keys.has(key)) return false;
  return true;
};
const DATA_KEYS = new Set(['data']);
const REF_KEYS = new Set(['type', 'id']);

/** relationships: item_type (z.object: nothing to strip) and an optional creator. */
function relationshipsOk(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const itemType = value['item_type'];
  if (!isObject(itemType) || !onlyKeys(itemType, DATA_KEYS)) return false;
  const data = itemType['data'];
  if (!isObject(data) || !onlyKeys(data, REF_KEYS)) return false;
  if (data['type'] !== 'item_type') return false;
  if (typeof data['id'] !== 'string' || !ENTITY_ID.test(data['id'])) return false;
  const creator = value['creator'];
  if (creator === undefined) return true;
  if (!isObject(creator) || !onlyKeys(creator, DATA_KEYS) || !('data' in creator)) return false;
  const who = creator['data'];
  if (who === null) return true;
  return (
    isObject(who) &&
    onlyKeys(who, REF_KEYS) &&
    typeof who['type'] === 'string' &&
    typeof who['id'] === 'string' &&
    who['id'].length >= 1 &&
    who['id'].length <= 128
  );
}

/** meta: every key ItemMeta knows is checked by its own schema; the others ride along. */
function metaOk(value: unknown): boolean {
  if (value === undefined) return true;
  if (!isRecord(value)) return false;
  for (const key in value) {
    const schema = (metaShape as Record<string, z.ZodType | undefined>)[key];
    if (schema && !schema.safeParse(value[key]).success) return false;
  }
  return true;
}

/** An item event in its common shape, as EventInput would parse it; undefined: ask zod. */
export function parseItemEventFast(raw: unknown): EventInput | undefined {
  if (!isObject(raw) || !onlyKeys(raw, EVENT_KEYS) || raw['type'] !== 'event') return undefined;
  const id = raw['id'];
  if (id !== undefined && (typeof id !== 'string' || !EVENT_ID.test(id))) return undefined;
  const attributes = raw['attributes'];
  if (!isObject(attributes) || !onlyKeys(attributes, ATTRIBUTE_KEYS)) return undefined;
  const eventType = attributes['event_type'];
  if (attributes['entity_type'] !== 'item' || !ITEM_EVENT_TYPES.has(eventType)) return undefined;
  const environment = attributes['environment'];
  if (
    environment !== undefined &&
    (typeof environment !== 'string' || !ENTITY_ID.test(environment))
  )
    return undefined;
  const occurredAt = attributes['occurred_at'];
  if (occurredAt !== undefined && !attributesShape.occurred_at.safeParse(occurredAt).success)
    return undefined;
  const previous = attributes['previous_entity'];
  if (previous !== undefined && previous !== null) return undefined;
  const related = attributes['related_entities'];
  if (related !== undefined && !(Array.isArray(related) && related.length === 0)) return undefined;
  const entity = attributes['entity'];
  if (!isObject(entity) || entity['type'] !== 'item') return undefined;
  if (typeof entity['id'] !== 'string' || !ENTITY_ID.test(entity['id'])) return undefined;
  if (entity['attributes'] !== undefined && !isRecord(entity['attributes'])) return undefined;
  if (!relationshipsOk(entity['relationships']) || !metaOk(entity['meta'])) return undefined;
  return {
    type: 'event',
    ...(id !== undefined && { id }),
    attributes: {
      entity_type: 'item',
      event_type: eventType as EventInput['attributes']['event_type'],
      ...(environment !== undefined && { environment }),
      ...(occurredAt !== undefined && { occurred_at: occurredAt as string }),
      entity: entity as EventInput['attributes']['entity'],
      ...(previous !== undefined && { previous_entity: null }),
      related_entities: [],
    },
  };
}
