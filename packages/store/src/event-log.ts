import type { WebhookCallStatus } from '@herald/contract';
import type { Queryable } from './db.js';
import { toLoggedEvent, type LoggedEvent } from './events.js';

// The event log as integrators read it (docs/api.md, GET /events and GET /events/:id): apart from
// events.ts, which is the ingest and match path.

/** Exclusive bounds of a date column. */
interface DateBounds {
  gt?: Date | undefined;
  lt?: Date | undefined;
}

export interface EventListQuery {
  environment?: string | undefined;
  entityType?: string | undefined;
  entityId?: string | undefined;
  eventType?: string | undefined;
  occurredAt?: DateBounds | undefined;
  acceptedAt?: DateBounds | undefined;
  /** occurred_at (then acceptance order) descending; ascending when false. */
  newestFirst: boolean;
  offset: number;
  limit: number;
}

/**
 * Up to this many matching events, GET /events counts them exactly; past it, the count it gives
 * is an upper bound (listEvents). Counting 10,001 index entries takes a few milliseconds; counting
 * millions, most of a second on every page.
 */
export const EVENT_COUNT_EXACT_MAX = 10_000;

/**
 * A page of events, with how many match: exactly when at most EVENT_COUNT_EXACT_MAX do, else an
 * upper bound (`totalCountExact` false). The bound is the span of `seq` (an identity column: every
 * stored event has a distinct value in it), so it counts every stored event, plus the values
 * duplicates and rolled-back batches used up. An undercount would make a client that pages up to
 * the count (the DatoCMS client's paged iterator) miss events; an overcount costs it empty pages.
 *
 * The order is occurred_at then seq, which migration 015's indexes hold: events_by_entity
 * (entity_id, occurred_at, seq) when the entity is named, events_by_occurrence (occurred_at, seq)
 * otherwise. The other filters are checked on the rows those indexes give.
 */
export async function listEvents(
  db: Queryable,
  query: EventListQuery,
): Promise<{ events: LoggedEvent[]; totalCount: number; totalCountExact: boolean }> {
  const where: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  // Column names from these fixed lists only; values as parameters.
  for (const [column, value] of [
    ['environment', query.environment],
    ['entity_type', query.entityType],
    ['entity_id', query.entityId],
    ['event_type', query.eventType],
  ] as const) {
    if (value !== undefined) where.push(`${column} = ${param(value)}`);
  }
  for (const [column, range] of [
    ['occurred_at', query.occurredAt],
    ['accepted_at', query.acceptedAt],
  ] as const) {
    if (range?.gt) where.push(`${column} > ${param(range.gt)}`);
    if (range?.lt) where.push(`${column} < ${param(range.lt)}`);
  }
  const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const direction = query.newestFirst ? 'DESC' : 'ASC';
  const countParams = [...params, EVENT_COUNT_EXACT_MAX];
  const [page, count] = await Promise.all([
    db.query<Parameters<typeof toLoggedEvent>[0]>(
      // The offset is walked in the index (an index-only scan when the filters are its columns),
      // and only the page's rows are read from the table: skipping 200,000 rows took 215 ms
      // through the table, 30 ms in the index (EXPLAIN ANALYZE, 500,000 events).
      `SELECT e.id, e.environment, e.entity_type, e.event_type, e.entity_id, e.item_type_id,
         e.item_type_api_key, e.occurred_at, e.accepted_at, e.matched_at
       FROM (
         SELECT seq, occurred_at FROM events ${whereSql}
         ORDER BY occurred_at ${direction}, seq ${direction}
         LIMIT ${param(query.limit)} OFFSET ${param(query.offset)}) p
       JOIN events e ON e.seq = p.seq
       ORDER BY p.occurred_at ${direction}, p.seq ${direction}`,
      params,
    ),
    db.query<{ matched: string; bound: string | null }>(
      `WITH counted AS (
         SELECT count(*) AS matched FROM (
           SELECT 1 FROM events ${whereSql} LIMIT $${countParams.length}::int + 1) m)
       SELECT matched,
         CASE WHEN matched > $${countParams.length}::int
           THEN (SELECT max(seq) - min(seq) + 1 FROM events) END AS bound
       FROM counted`,
      countParams,
    ),
  ]);
  const matched = Number(count.rows[0]?.matched ?? 0);
  const bound = count.rows[0]?.bound;
  return {
    events: page.rows.map(toLoggedEvent),
    totalCount: bound == null ? matched : Math.max(Number(bound), matched),
    totalCountExact: bound == null,
  };
}

/** A webhook call of an event, as GET /events/:id includes it (in full: GET /webhook_calls/:id). */
export interface EventCall {
  id: string;
  webhookId: string;
  status: WebhookCallStatus;
  createdAt: Date;
  /** Every attempt recorded (first, retries, resends). */
  attemptsCount: number;
  attemptedAutoRetriesCount: number;
  lastSentAt: Date | null;
  nextRetryAt: Date | null;
  responseStatus: number | null;
  failureReason: string | null;
}

/**
 * The webhook calls of the event, in the order they were made: the one per matching webhook it
 * made (through the unique (event_id, webhook_id) index), or, for a webhook with flow control,
 * the call that carries it (coalesced or batched with others; webhook_calls_carried). Test sends
 * that carry a copy of the event are not its calls: it was not matched for them.
 */
export async function listEventCalls(db: Queryable, eventId: string): Promise<EventCall[]> {
  const { rows } = await db.query<{
    id: string;
    webhook_id: string;
    status: WebhookCallStatus;
    created_at: Date;
    attempts_count: number;
    attempted_auto_retries_count: number;
    last_sent_at: Date | null;
    next_retry_at: Date | null;
    response_status: number | null;
    failure_reason: string | null;
  }>(
    `SELECT id, webhook_id, status, created_at, attempts_count, attempted_auto_retries_count,
       last_sent_at, next_retry_at, response_status, failure_reason
     FROM webhook_calls WHERE event_id = $1 OR event_ids @> ARRAY[$1]::text[] ORDER BY id`,
    [eventId],
  );
  return rows.map((row) => ({
    id: row.id,
    webhookId: row.webhook_id,
    status: row.status,
    createdAt: row.created_at,
    attemptsCount: row.attempts_count,
    attemptedAutoRetriesCount: row.attempted_auto_retries_count,
    lastSentAt: row.last_sent_at,
    nextRetryAt: row.next_retry_at,
    responseStatus: row.response_status,
    failureReason: row.failure_reason,
  }));
}
