import type { Queryable } from './db.js';

/** An event about to be stored (docs/api.md, POST /events). */
export interface NewEvent {
  id: string;
  environment: string;
  isEnvironmentPrimary: boolean;
  entityType: string;
  eventType: string;
  entityId: string | null;
  itemTypeId: string | null;
  itemTypeApiKey: string | null;
  occurredAt: Date;
  entity: unknown;
  /** JSON.stringify(entity), when the caller has it already (writeItemBatch then reuses it). */
  entityJson?: string;
  previousEntity: unknown;
  relatedEntities: unknown[];
  /**
   * The W3C traceparent of the span that stored the event (migration 028): its match and its
   * calls' attempts continue that trace. Absent or null: not traced.
   */
  traceparent?: string | null;
}

/** A stored event, as the match worker and delivery read it. */
export interface StoredEvent extends Omit<NewEvent, 'entityJson'> {
  seq: string;
  acceptedAt: Date;
  matchedAt: Date | null;
  /**
   * The version of the event's model when the event was read (the xmin of its item_types row,
   * see migration 006); null when the event names no model or the model is gone. Lets a cache of
   * models serve the ones that did not change.
   */
  modelVersion?: string | null;
  /**
   * Item events without a previous_entity: the attributes of the version the event replaced, as
   * stored before it was applied (`{}` when there was none; migration 022). Null otherwise.
   */
  previousAttributes?: Record<string, unknown> | null;
  /** Item saves, publishes and unpublishes: the status they give the record (migration 022). */
  recordStatus?: string | null;
}

/** What matching reads of an event (docs/api.md, Events and filters). */
export type MatchableEvent = Pick<
  StoredEvent,
  | 'environment'
  | 'isEnvironmentPrimary'
  | 'entityType'
  | 'eventType'
  | 'entityId'
  | 'itemTypeId'
  | 'itemTypeApiKey'
>;

/** The rows of insertEvents' recordset; `n` keeps the request order (seq follows it). */
function eventRows(events: readonly NewEvent[]): Record<string, unknown>[] {
  return events.map((e, n) => ({
    n,
    id: e.id,
    environment: e.environment,
    is_environment_primary: e.isEnvironmentPrimary,
    entity_type: e.entityType,
    event_type: e.eventType,
    entity_id: e.entityId,
    item_type_id: e.itemTypeId,
    item_type_api_key: e.itemTypeApiKey,
    occurred_at: e.occurredAt.toISOString(),
    entity: e.entity,
    previous_entity: e.previousEntity ?? null,
    related_entities: e.relatedEntities,
    ...(e.traceparent ? { traceparent: e.traceparent } : {}),
  }));
}

/**
 * Inserts the events of the recordset in `param`, skipping stored ids; returns the new ids.
 * `traced`: with the events' traceparent (migration 028); without, the statement is the one of
 * an untraced deployment, as before tracing.
 */
function insertEventsSql(param: string, traced: boolean): string {
  return `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
       entity_id, item_type_id, item_type_api_key, occurred_at, entity, previous_entity,
       related_entities${traced ? ', traceparent' : ''})
     SELECT x.id, x.environment, x.is_environment_primary, x.entity_type, x.event_type,
       x.entity_id, x.item_type_id, x.item_type_api_key, x.occurred_at, x.entity,
       x.previous_entity, x.related_entities${traced ? ', x.traceparent' : ''}
     FROM json_to_recordset(${param}::json) AS x(id text, environment text,
       is_environment_primary boolean, entity_type text, event_type text, entity_id text,
       item_type_id text, item_type_api_key text, occurred_at timestamptz, entity jsonb,
       previous_entity jsonb, related_entities jsonb, traceparent text, n integer)
     ORDER BY x.n
     ON CONFLICT (id) DO NOTHING
     RETURNING id`;
}

/**
 * Inserts the events in one statement; an id already stored (or repeated earlier in the list) is
 * skipped. Returns the ids that were inserted: the others are duplicates.
 */
export async function insertEvents(
  db: Queryable,
  events: readonly NewEvent[],
): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const traced = events.some((event) => event.traceparent);
  const { rows: inserted } = await db.query<{ id: string }>(insertEventsSql('$1', traced), [
    JSON.stringify(eventRows(events)),
  ]);
  return new Set(inserted.map((row) => row.id));
}

export interface EventRow extends Record<string, unknown> {
  id: string;
  seq: string;
  environment: string;
  is_environment_primary: boolean;
  entity_type: string;
  event_type: string;
  entity_id: string | null;
  item_type_id: string | null;
  item_type_api_key: string | null;
  occurred_at: Date;
  accepted_at: Date;
  entity: unknown;
  previous_entity: unknown;
  related_entities: unknown[];
  matched_at: Date | null;
  model_version: string | null;
  previous_attributes: Record<string, unknown> | null;
  record_status: string | null;
  traceparent: string | null;
}

const EVENT_COLUMNS = `id, seq, environment, is_environment_primary, entity_type, event_type,
  entity_id, item_type_id, item_type_api_key, occurred_at, accepted_at, entity, previous_entity,
  related_entities, matched_at, previous_attributes, record_status, traceparent,
  (SELECT m.xmin::text FROM item_types m
   WHERE m.environment = events.environment AND m.id = events.item_type_id) AS model_version`;

/** An event without its bodies and delivery internals: what GET /events lists (event-log.ts). */
export type LoggedEvent = Pick<
  StoredEvent,
  | 'id'
  | 'environment'
  | 'entityType'
  | 'eventType'
  | 'entityId'
  | 'itemTypeId'
  | 'itemTypeApiKey'
  | 'occurredAt'
  | 'acceptedAt'
  | 'matchedAt'
>;

export const toLoggedEvent = (
  row: Pick<
    EventRow,
    | 'id'
    | 'environment'
    | 'entity_type'
    | 'event_type'
    | 'entity_id'
    | 'item_type_id'
    | 'item_type_api_key'
    | 'occurred_at'
    | 'accepted_at'
    | 'matched_at'
  >,
): LoggedEvent => ({
  id: row.id,
  environment: row.environment,
  entityType: row.entity_type,
  eventType: row.event_type,
  entityId: row.entity_id,
  itemTypeId: row.item_type_id,
  itemTypeApiKey: row.item_type_api_key,
  occurredAt: row.occurred_at,
  acceptedAt: row.accepted_at,
  matchedAt: row.matched_at,
});

const toStoredEvent = (row: EventRow): StoredEvent => ({
  ...toLoggedEvent(row),
  seq: row.seq,
  isEnvironmentPrimary: row.is_environment_primary,
  entity: row.entity,
  previousEntity: row.previous_entity,
  relatedEntities: row.related_entities,
  modelVersion: row.model_version,
  previousAttributes: row.previous_attributes,
  recordStatus: row.record_status,
  traceparent: row.traceparent,
});

export async function findEvent(db: Queryable, id: string): Promise<StoredEvent | null> {
  const { rows } = await db.query<EventRow>(`SELECT ${EVENT_COLUMNS} FROM events WHERE id = $1`, [
    id,
  ]);
  return rows[0] ? toStoredEvent(rows[0]) : null;
}

/**
 * The events of a match (findEvents) and the webhooks' generation (migration 032) read in the same
 * statement: every webhook change committed before these events were is counted in it, so a
 * webhook index at least that new has every webhook they may match. 0n when none was found.
 */
export async function findEventsToMatch(
  db: Queryable,
  ids: readonly string[],
): Promise<{ events: StoredEvent[]; webhooksGeneration: bigint }> {
  const { rows } = await db.query<EventRow & { webhooks_generation: string }>(
    {
      name: 'herald.events.find-to-match',
      text: `SELECT ${EVENT_COLUMNS},
         (SELECT generation FROM webhooks_generation)::text AS webhooks_generation
       FROM events WHERE id = ANY($1::text[]) ORDER BY seq`,
      planOnce: true,
    },
    [ids],
  );
  return {
    events: rows.map(toStoredEvent),
    webhooksGeneration: BigInt(rows[0]?.webhooks_generation ?? 0),
  };
}

export async function findEvents(db: Queryable, ids: readonly string[]): Promise<StoredEvent[]> {
  const { rows } = await db.query<EventRow>(
    {
      name: 'herald.events.find',
      text: `SELECT ${EVENT_COLUMNS} FROM events WHERE id = ANY($1::text[]) ORDER BY seq`,
      // A probe of the primary key whatever the ids; their number makes no better plan.
      planOnce: true,
    },
    [ids],
  );
  return rows.map(toStoredEvent);
}

/**
 * The match worker (issue #6) calls this once an event's webhook_call rows exist. `IS TRUE`
 * keeps the planner on the primary key (see webhook-calls.ts on partial indexes).
 */
export async function markEventsMatched(db: Queryable, ids: readonly string[]): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE events SET matched_at = now() WHERE id = ANY($1::text[]) AND (matched_at IS NULL) IS TRUE`,
    [ids],
  );
  return rowCount;
}

/**
 * Stored events not matched yet, in acceptance order after `afterSeq`, accepted at least
 * `acceptedMsAgo` before now (so the sweeper leaves the events ingest is enqueuing right now
 * alone). The age is measured on the database's clock, the one that wrote `accepted_at`: with 0,
 * every event a committed statement accepted is listed, whatever the skew of this process's clock.
 */
export async function listUnmatchedEvents(
  db: Queryable,
  options: { afterSeq?: string; acceptedMsAgo: number; limit: number },
): Promise<{ id: string; seq: string }[]> {
  const { rows } = await db.query<{ id: string; seq: string }>(
    `SELECT id, seq FROM events
     WHERE matched_at IS NULL AND seq > $1
       AND accepted_at <= now() - $2::float8 * interval '1 millisecond'
     ORDER BY seq LIMIT $3`,
    [options.afterSeq ?? '0', options.acceptedMsAgo, options.limit],
  );
  return rows;
}
