import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from './webhooks.js';

// Notices are Herald's own: a producer cannot send one.
const { notice: _heraldOnly, ...producerEventTypes } = WEBHOOK_EVENT_TYPES;

/**
 * Entity types and the event types each one has (docs/api.md, Events and filters): the table
 * webhooks.ts states (where the browser can import it), under the name the event side uses,
 * without Herald's own `notice`.
 */
export const EVENT_TYPES_BY_ENTITY = producerEventTypes;

export type EntityType = keyof typeof EVENT_TYPES_BY_ENTITY;
export type EventType = (typeof EVENT_TYPES_BY_ENTITY)[EntityType][number];

export const ENTITY_TYPES = Object.keys(EVENT_TYPES_BY_ENTITY) as EntityType[];
export const EVENT_TYPES = [...new Set(Object.values(EVENT_TYPES_BY_ENTITY).flat())] as EventType[];

export function isEntityType(value: unknown): value is EntityType {
  return typeof value === 'string' && Object.hasOwn(EVENT_TYPES_BY_ENTITY, value);
}

/**
 * Whether `eventType` is one of `entityType`'s event types. Any JSON value may arrive here from a
 * rejected batch: it is compared, never converted (String() of {"toString": 1} throws).
 */
export function isEventTypeOf(entityType: EntityType, eventType: unknown): eventType is EventType {
  return (
    typeof eventType === 'string' &&
    (EVENT_TYPES_BY_ENTITY[entityType] as readonly string[]).includes(eventType)
  );
}

/** Ids of records and models (docs/api.md, POST /events). */
/** A model's or field's api_key (docs/api.md, POST /events): snake_case, 1–64 characters. */
export const API_KEY_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;
/** A locale code (`en`, `pt-BR`). */
export const LOCALE_PATTERN = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/;

export const EntityId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1–64 characters from A-Z a-z 0-9 _ -');
/** Event ids: the producer's idempotency key (docs/api.md, POST /events). */
export const EventId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1–128 characters from A-Z a-z 0-9 _ . : -');
export const EnvironmentId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1–64 characters from A-Z a-z 0-9 _ -');

/**
 * An ISO-8601 date-time with a zone, whose instant falls in years 0001–9999: what Postgres's
 * timestamptz and ISO strings hold (year 0000, or 9999-12-31T23:59:59-14:00, failed the insert).
 */
const Timestamp = z.iso.datetime({ offset: true, local: false }).refine((value) => {
  const year = new Date(value).getUTCFullYear();
  return year >= 1 && year <= 9999;
}, 'must be a date-time in years 0001–9999');

/** Positions (meta.position, a field's position) are stored in Postgres `integer` columns. */
export const Position = z
  .number()
  .int()
  .min(-(2 ** 31))
  .max(2 ** 31 - 1);
export const isPosition = (value: unknown): value is number => Position.safeParse(value).success;

/** A JSON:API relationship to one resource. */
export const RelationshipOne = z.object({
  data: z.object({ type: z.string(), id: z.string().min(1).max(128) }).nullable(),
});
export type RelationshipOne = z.infer<typeof RelationshipOne>;

/** The entity of an event: any JSON:API resource (each entity type narrows it below). */
export const Entity = z.looseObject({
  type: z.string().min(1).max(64),
  id: z.string().min(1).max(128),
  attributes: z.record(z.string(), z.unknown()).optional(),
  relationships: z.record(z.string(), z.unknown()).optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});
export type Entity = z.infer<typeof Entity>;

/**
 * The meta of an item entity (docs/api.md, POST /events); everything optional, unknown keys kept.
 */
export const ItemMeta = z.looseObject({
  created_at: Timestamp.nullish(),
  updated_at: Timestamp.nullish(),
  published_at: Timestamp.nullish(),
  first_published_at: Timestamp.nullish(),
  publication_scheduled_at: Timestamp.nullish(),
  unpublishing_scheduled_at: Timestamp.nullish(),
  status: z.enum(['draft', 'updated', 'published']).nullish(),
  is_valid: z.boolean().nullish(),
  is_current_version_valid: z.boolean().nullish(),
  is_published_version_valid: z.boolean().nullish(),
  current_version: z.union([z.string().max(128), z.number()]).nullish(),
  stage: z.string().max(128).nullish(),
  position: Position.nullish(),
});
export type ItemMeta = z.infer<typeof ItemMeta>;

/** A record (or block) as producers send it: its model in relationships.item_type. */
export const ItemEntity = z.looseObject({
  type: z.literal('item'),
  id: EntityId,
  attributes: z.record(z.string(), z.unknown()).default({}),
  relationships: z
    .looseObject({
      item_type: z.object({
        data: z.object({ type: z.literal('item_type'), id: EntityId }),
      }),
      creator: RelationshipOne.optional(),
    })
    .optional(),
  meta: ItemMeta.optional(),
});
export type ItemEntity = z.infer<typeof ItemEntity>;

export const ItemTypeEntity = z.looseObject({
  type: z.literal('item_type'),
  id: EntityId,
  attributes: z
    .looseObject({
      name: z.string().min(1).max(255),
      api_key: z.string().regex(API_KEY_PATTERN, 'must be snake_case, 1–64 characters'),
      modular_block: z.boolean().default(false),
      sortable: z.boolean().default(false),
      tree: z.boolean().default(false),
      draft_mode_active: z.boolean().default(false),
    })
    .optional(),
});
export type ItemTypeEntity = z.infer<typeof ItemTypeEntity>;

/** Field types (docs/api.md, POST /events: field values). */
export const FIELD_TYPES = [
  'string',
  'text',
  'slug',
  'boolean',
  'integer',
  'float',
  'date',
  'date_time',
  'json',
  'color',
  'lat_lon',
  'seo',
  'video',
  'file',
  'gallery',
  'link',
  'links',
  'rich_text',
  'single_block',
  'structured_text',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** A field of a model: a related entity of type `field` on item_type events. */
export const FieldEntity = z.looseObject({
  type: z.literal('field'),
  id: z.string().min(1).max(128).optional(),
  attributes: z.looseObject({
    api_key: z.string().regex(API_KEY_PATTERN, 'must be snake_case, 1–64 characters'),
    field_type: z.enum(FIELD_TYPES),
    localized: z.boolean().default(false),
    label: z.string().max(255).nullish(),
    position: Position.default(0),
  }),
});
export type FieldEntity = z.infer<typeof FieldEntity>;

export const EnvironmentEntity = z.looseObject({
  type: z.string().min(1).max(64),
  id: EnvironmentId,
  attributes: z
    .looseObject({
      locales: z
        .array(z.string().regex(LOCALE_PATTERN, 'must be a locale code'))
        .min(1)
        .max(100)
        .optional(),
    })
    .optional(),
});
export type EnvironmentEntity = z.infer<typeof EnvironmentEntity>;

/** One event of POST /events, shape only (the entity is narrowed per entity type later). */
export const EventInput = z.object({
  type: z.literal('event'),
  id: EventId.optional(),
  attributes: z.object({
    entity_type: z.enum(ENTITY_TYPES as [EntityType, ...EntityType[]]),
    event_type: z.enum(EVENT_TYPES as [EventType, ...EventType[]]),
    environment: EnvironmentId.optional(),
    occurred_at: Timestamp.optional(),
    entity: Entity,
    previous_entity: Entity.nullish(),
    related_entities: z.array(Entity).max(10_000).default([]),
  }),
});
export type EventInput = z.infer<typeof EventInput>;

export const EVENTS_PER_REQUEST_MAX = 1000;
/** docs/api.md, POST /events and Limits: 300 KB per entity. */
export const ENTITY_BYTES_MAX = 300 * 1024;

/** Job name of the event-match queue; the data holds event ids only. */
export const MATCH_EVENT_JOB = 'match-event';
/** Event ids per match job: one job carries what one POST /events stored (or a sweeper page). */
export const MATCH_JOB_EVENTS_MAX = EVENTS_PER_REQUEST_MAX;
/**
 * An event-match job: the ids of events stored together, matched together (one query to load
 * them, one statement for their calls). Redis work is per job, not per event, which is most of
 * what enqueuing a large batch used to cost. A job of the first release (`{ eventId }`, one event
 * each) still parses, as a list of one.
 */
export const EventMatchJobData = z.union([
  z.object({ eventIds: z.array(EventId).min(1).max(MATCH_JOB_EVENTS_MAX) }),
  z.object({ eventId: EventId }).transform(({ eventId }) => ({ eventIds: [eventId] })),
]);
export type EventMatchJobData = z.output<typeof EventMatchJobData>;

/**
 * BullMQ job id of a match job of one event (runtime's eventMatchJobId names jobs of several):
 * the event id itself, except where BullMQ refuses a custom id (it rejects `:` and
 * integer-looking ids). `:` becomes `%` and integer-looking ids get a `#` prefix; neither
 * character is allowed in event ids, so the mapping stays one-to-one.
 */
export function eventJobId(eventId: string): string {
  const id = eventId.replaceAll(':', '%');
  return `${Number.parseInt(id, 10)}` === id ? `#${id}` : id;
}
