import { randomBytes } from 'node:crypto';

const eventId = (prefix: string): string => `${prefix}_${randomBytes(6).toString('hex')}`;

// Bodies of POST /events, as a producer sends them: a model's fields, a model's event, an item's.

/** A field of a model (a related entity of its item_type event). */
export function fieldEntity(
  apiKey: string,
  fieldType: string,
  { localized = false, position = 0, id = `${apiKey}-${fieldType}` } = {},
) {
  return {
    type: 'field',
    id,
    attributes: { api_key: apiKey, field_type: fieldType, localized, label: apiKey, position },
  };
}

/** An item_type event of model `id` (its api_key `apiKey`, by default the id), with its fields. */
export function modelEvent(
  id: string,
  flags: Record<string, unknown>,
  fields: unknown[],
  { apiKey = id, eventType = 'create' } = {},
) {
  return {
    type: 'event',
    id: eventId('model'),
    attributes: {
      entity_type: 'item_type',
      event_type: eventType,
      entity: { type: 'item_type', id, attributes: { name: apiKey, api_key: apiKey, ...flags } },
      related_entities: fields,
    },
  };
}

/**
 * A model whose id and api_key differ (both random), with a string field `title`, and the events
 * that define it and create one record of it per id given (titled by its id).
 */
export function modelWithRecordEvents(ids: readonly string[]) {
  const model = { id: eventId('m'), apiKey: eventId('k') };
  const events = [
    modelEvent(model.id, {}, [fieldEntity('title', 'string')], { apiKey: model.apiKey }),
    ...ids.map((id) => itemEvent('create', id, { title: id }, { model: model.id })),
  ];
  return { model, events };
}

export interface ItemEventOptions {
  /** Its model; null: no relationships (a delete may name only its record). Default 'post'. */
  model?: string | null;
  /** The entity's meta; default {}. */
  meta?: Record<string, unknown>;
  eventId?: string;
  environment?: string;
  /** More attributes of the event (previous_entity…). */
  event?: Record<string, unknown>;
}

/** An item event: `eventType` of record `id` with these attributes. */
export function itemEvent(
  eventType: string,
  id: string,
  attributes: Record<string, unknown>,
  options: ItemEventOptions = {},
) {
  const model = options.model === undefined ? 'post' : options.model;
  return {
    type: 'event',
    id: options.eventId ?? eventId('evt'),
    attributes: {
      entity_type: 'item',
      event_type: eventType,
      ...(options.environment ? { environment: options.environment } : {}),
      entity: {
        type: 'item',
        id,
        attributes,
        ...(model !== null && {
          relationships: { item_type: { data: { type: 'item_type', id: model } } },
        }),
        meta: options.meta ?? {},
      },
      ...options.event,
    },
  };
}
