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
  ItemTypeEntity,
  isEventTypeOf,
  type EntityType,
  type ErrorEntry,
  type ValidationCode,
} from '@herald/contract';

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

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function validationCode(issue: z.core.$ZodIssue, input: unknown): ValidationCode {
  if (
    issue.code !== 'custom' &&
    issue.code !== 'unrecognized_keys' &&
    valueAt(input, issue.path) === undefined
  ) {
    return 'VALIDATION_REQUIRED';
  }
  switch (issue.code) {
    case 'invalid_type':
      return 'VALIDATION_TYPE';
    case 'invalid_value':
    case 'invalid_union':
    case 'unrecognized_keys':
      return 'VALIDATION_INCLUSION';
    case 'too_big':
    case 'too_small':
      return 'VALIDATION_LENGTH';
    case 'custom': {
      const code = (issue.params as { code?: ValidationCode } | undefined)?.code;
      return code ?? 'VALIDATION_FORMAT';
    }
    case 'invalid_element':
    case 'invalid_format':
    case 'invalid_key':
    case 'not_multiple_of':
      return 'VALIDATION_FORMAT';
  }
}

/** zod issues as INVALID_FIELD entries under `prefix` (e.g. `data.3`). */
export function issuesToEntries(prefix: string, error: z.ZodError, input: unknown): ErrorEntry[] {
  return error.issues.map((issue) =>
    ApiError.field(
      [prefix, ...issue.path.map(String)].filter(Boolean).join('.'),
      validationCode(issue, input),
      issue.message,
    ),
  );
}

/**
 * Validates the body of POST /events as a whole batch (API.md §5): `data` is one event or 1–1000
 * of them; each event's shape, its event type for its entity type, its entity's size and shape.
 * Throws one ApiError listing every problem found (capped), naming `data.<index>.<field>`.
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
  const parsed = EventInput.safeParse(raw);
  if (!parsed.success) return issuesToEntries(prefix, parsed.error, raw);
  const event = parsed.data;
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
