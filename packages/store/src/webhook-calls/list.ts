import type { AttemptTrigger, WebhookCallStatus } from '@herald/contract';
import type { Db, Queryable } from '../db.js';
import {
  CALL_COLUMNS,
  isCallId,
  toCall,
  toExchange,
  type ExchangeRecord,
  type ExchangeRow,
  type WebhookCallRecord,
  type WebhookCallRow,
} from './call.js';

// The delivery log's reads: calls by id, the sweeper's lists, GET /webhook_calls and a call's
// attempts.

export async function findWebhookCall(
  db: Queryable,
  id: string,
): Promise<WebhookCallRecord | null> {
  if (!isCallId(id)) return null;
  const { rows } = await db.query<WebhookCallRow>(
    `SELECT ${CALL_COLUMNS} FROM webhook_calls WHERE id = $1`,
    [id],
  );
  return rows[0] ? toCall(rows[0]) : null;
}

/** Several calls in one query (the deliver worker batches its reads); unknown ids are left out. */
export async function findWebhookCalls(
  db: Queryable,
  ids: readonly string[],
): Promise<WebhookCallRecord[]> {
  const valid = ids.filter(isCallId);
  if (!valid.length) return [];
  const { rows } = await db.query<WebhookCallRow>(
    {
      name: 'herald.webhook_calls.find',
      text: `SELECT ${CALL_COLUMNS} FROM webhook_calls WHERE id = ANY($1::bigint[])`,
    },
    [valid],
  );
  return rows.map(toCall);
}

/** An unfinished call as the sweeper's lists give it: enough to add its job again. */
interface UnfinishedCall {
  id: string;
  webhookId: string;
  status: 'pending' | 'rescheduled';
  attemptedAutoRetriesCount: number;
}

type UnfinishedCallRow = {
  id: string;
  webhook_id: string;
  status: 'pending' | 'rescheduled';
  attempted_auto_retries_count: number;
};

const toUnfinishedCall = (row: UnfinishedCallRow): UnfinishedCall => ({
  id: String(row.id),
  webhookId: String(row.webhook_id),
  status: row.status,
  attemptedAutoRetriesCount: row.attempted_auto_retries_count,
});

/**
 * Calls whose job Redis may have lost, oldest first: `pending` or `rescheduled` calls whose clock
 * (enqueued_at) is older than `before`. The clock of a pending call starts when its job is added;
 * a rescheduled call's is its next_retry_at (recordWebhookCallAttempts), so it is listed once its
 * retry is overdue. markWebhookCallsEnqueued restarts the clock of the calls the sweeper re-adds,
 * which takes them off the list: the next page is the next query.
 */
export async function listStrandedWebhookCalls(
  db: Queryable,
  options: { before: Date; limit: number },
): Promise<UnfinishedCall[]> {
  const { rows } = await db.query<UnfinishedCallRow>(
    // The conditions of the webhook_calls_unfinished index (enqueued_at, partial), on purpose.
    // Calls held by a process are its own while its lease lives (takeOverOrphanedWebhookCalls).
    `SELECT id, webhook_id, status, attempted_auto_retries_count FROM webhook_calls
     WHERE status IN ('pending', 'rescheduled') AND enqueued_at < $1 AND held_by IS NULL
     ORDER BY enqueued_at LIMIT $2`,
    [options.before, options.limit],
  );
  return rows.map(toUnfinishedCall);
}

/**
 * Calls that wait for a time still ahead, held by no process: `rescheduled` ones until their
 * next_retry_at, `pending` ones until their due time (a batch's window, a put-off attempt),
 * in the order they are due, from `after` on (a page's last). Parked lane calls and a replay's
 * own calls (enqueued_at 'infinity') are not listed: no job stands for them. After Redis lost
 * its keys, the sweeper enqueues these as jobs delayed to their time (their jobs went too).
 */
export async function listWaitingWebhookCalls(
  db: Queryable,
  /** `after`: the last call of the page before (its cursor and id). */
  options: { after: { cursor: string; id: string } | null; limit: number },
): Promise<
  (UnfinishedCall & {
    dueAt: Date;
    /** Its place in the list (enqueued_at to the microsecond). */
    cursor: string;
  })[]
> {
  const { rows } = await db.query<UnfinishedCallRow & { enqueued_at: Date; cursor: string }>(
    // The webhook_calls_unfinished index (enqueued_at, partial), as listStrandedWebhookCalls.
    `SELECT id, webhook_id, status, attempted_auto_retries_count, enqueued_at,
       enqueued_at::text AS cursor FROM webhook_calls
     WHERE status IN ('pending', 'rescheduled') AND held_by IS NULL
       AND enqueued_at >= coalesce($1::timestamptz, now()) AND enqueued_at < 'infinity'
       AND ($1::timestamptz IS NULL OR (enqueued_at, id) > ($1::timestamptz, $2::bigint))
     ORDER BY enqueued_at, id LIMIT $3`,
    [options.after?.cursor ?? null, options.after?.id ?? null, options.limit],
  );
  return rows.map((row) => ({
    ...toUnfinishedCall(row),
    dueAt: row.enqueued_at,
    cursor: row.cursor,
  }));
}

/** The columns GET /webhook_calls filters and orders on: the only identifiers reaching SQL. */
const LIST_COLUMNS = {
  webhook_id: 'webhook_id',
  entity_type: 'entity_type',
  event_type: 'event_type',
  status: 'status',
  created_at: 'created_at',
  last_sent_at: 'last_sent_at',
  next_retry_at: 'next_retry_at',
} as const;
type WebhookCallListColumn = keyof typeof LIST_COLUMNS;
/** The filters webhook_call_counts (migration 016) counts by: their total_count is exact. */
const COUNTED = ['webhook_id', 'entity_type', 'event_type', 'status'] as const;
/** Orders on columns that may be NULL (calls never sent, or with no retry planned). */
const NULLABLE = new Set<string>(['last_sent_at', 'next_retry_at']);

/**
 * Up to how many calls GET /webhook_calls counts one by one when webhook_call_counts cannot answer
 * its filter (ids, event, entity, date ranges): past it, total_count is an upper bound.
 */
export const WEBHOOK_CALL_COUNT_CAP = 10_000;

export interface WebhookCallListQuery {
  ids?: string[];
  eq?: Partial<
    Record<
      'webhook_id' | 'entity_type' | 'event_type' | 'status' | 'event_id' | 'entity_id',
      string
    >
  >;
  range?: Partial<
    Record<'created_at' | 'last_sent_at' | 'next_retry_at', { gt?: Date; lt?: Date }>
  >;
  orderBy: {
    column: 'created_at' | 'last_sent_at' | 'next_retry_at' | 'webhook_id';
    desc: boolean;
  };
  offset: number;
  limit: number;
}

export interface WebhookCallList {
  calls: WebhookCallRecord[];
  /** Never below the number of matching calls; equal to it when `exact`. */
  totalCount: number;
  exact: boolean;
}

/**
 * A page of calls and how many match (docs/api.md, GET /webhook_calls). The count is exact when
 * the filter uses only webhook, entity type, event type and status (a sum of webhook_call_counts
 * rows), or when at most `countCap` calls match (counted through an index, never more than
 * countCap + 1 of them); otherwise it is an upper bound: the counts of the filter's webhook,
 * types and status in the months its created_at range touches (and at most the number of ids
 * asked for). The official client's paged iterator reads the first page's count and asks for
 * every page below it, so a count may exceed the truth (the last pages come back empty) but
 * never fall short of it (calls would be missed).
 */
export async function listWebhookCalls(
  db: Db,
  query: WebhookCallListQuery,
  countCap = WEBHOOK_CALL_COUNT_CAP,
): Promise<WebhookCallList> {
  const exactlyCounted =
    !query.ids &&
    query.eq?.event_id === undefined &&
    query.eq?.entity_id === undefined &&
    Object.values(query.range ?? {}).every((bounds) => !bounds || (!bounds.gt && !bounds.lt));
  // One connection, in turn: the count decides how the page is read. JIT off: a count or a page
  // whose estimate crosses jit_above_cost would spend more compiling (5–20 ms) than running.
  return db.transaction(async (tx) => {
    await tx.query('SET LOCAL jit = off');
    let totalCount: number;
    let exact = exactlyCounted;
    const countParams: unknown[] = [];
    const counts = `SELECT coalesce(sum(calls), 0)::bigint AS n FROM webhook_call_counts
      ${whereSql(countedConditions(query, countParams))}`;
    if (exactlyCounted) {
      const { rows } = await tx.query<{ n: string }>(counts, countParams);
      totalCount = Number(rows[0]!.n);
    } else {
      const filter = whereSql(filterConditions(query, countParams));
      const { rows } = await tx.query<{ n: string; bound: string | null }>(
        `SELECT count(*) AS n, CASE WHEN count(*) > ${bind(countParams, countCap)}
           THEN (${counts}) END AS bound
         FROM (SELECT 1 FROM webhook_calls ${filter} LIMIT ${bind(countParams, countCap + 1)}) capped`,
        countParams,
      );
      const n = Number(rows[0]!.n);
      exact = rows[0]!.bound === null;
      const idsAsked = query.ids ? new Set(query.ids.filter(isCallId)).size : Infinity;
      totalCount = exact ? n : Math.max(n, Math.min(Number(rows[0]!.bound), idsAsked));
    }
    if (exact && totalCount <= query.offset) return { calls: [], totalCount, exact };
    const pageParams: unknown[] = [];
    const filter = whereSql(filterConditions(query, pageParams));
    const page = await tx.query<WebhookCallRow>(
      pageSql(query, filter, pageParams, !exactlyCounted && exact),
      pageParams,
    );
    return { calls: page.rows.map(toCall), totalCount, exact };
  });
}

/** The filter's webhook, types and status: columns of both webhook_calls and its counts. */
function countedEquals(query: WebhookCallListQuery, params: unknown[]): string[] {
  return COUNTED.flatMap((key) => {
    const value = query.eq?.[key];
    if (value === undefined) return [];
    return [key === 'webhook_id' && !isCallId(value) ? 'false' : `${key} = ${bind(params, value)}`];
  });
}

const whereSql = (conditions: string[]): string =>
  conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';

/** The filter as conditions on webhook_calls, its values bound in `params`. */
function filterConditions(query: WebhookCallListQuery, params: unknown[]): string[] {
  const where = countedEquals(query, params);
  if (query.ids) where.push(`id = ANY(${bind(params, query.ids.filter(isCallId))}::bigint[])`);
  const eventId = query.eq?.event_id;
  if (eventId !== undefined) {
    // The call's event_id attribute: the stored event's, or the one a test call carries.
    const p = bind(params, eventId);
    where.push(`(event_id = ${p} OR (event_id IS NULL AND test_event->>'id' = ${p}))`);
  }
  const entityId = query.eq?.entity_id;
  if (entityId !== undefined) {
    // Calls have no entity column; their events have one (events_by_entity, migration 015), and a
    // test call's event is its own.
    const p = bind(params, entityId);
    where.push(
      `id IN (SELECT c.id FROM events e JOIN webhook_calls c ON c.event_id = e.id
         WHERE e.entity_id = ${p}
         UNION ALL SELECT t.id FROM webhook_calls t
         WHERE t.event_id IS NULL AND t.test_event->>'entityId' = ${p})`,
    );
  }
  for (const [key, bounds] of Object.entries(query.range ?? {})) {
    if (!bounds) continue;
    const column = LIST_COLUMNS[key as WebhookCallListColumn];
    if (bounds.gt) where.push(`${column} > ${bind(params, bounds.gt)}`);
    if (bounds.lt) where.push(`${column} < ${bind(params, bounds.lt)}`);
  }
  where.push(...monthBounds(query, params));
  return where;
}

/**
 * The months (partitions, migration 021) a filter's dates allow, as bounds on the id, which
 * carries its month: the other months are not read at all. Without them, ordering by created_at
 * merges every month's index and reads the whole of a month that holds no matching call (4.7 s
 * for last_sent_at 29 days ago on 10 million calls). A call is sent and retried after it was
 * made, so last_sent_at and next_retry_at before a date mean created_at before it too (a day of
 * margin for the workers' clocks). Calls logged before migration 021 (ids below 2^36) are in
 * every month.
 */
function monthBounds(query: WebhookCallListQuery, params: unknown[]): string[] {
  const first = (at: string) => `(herald_month_number(${at}::timestamptz) << 36)`;
  const bounds: string[] = [];
  const { created_at: created, last_sent_at: sent, next_retry_at: retry } = query.range ?? {};
  if (created?.gt) bounds.push(`(id >= ${first(bind(params, created.gt))} OR id < ${2 ** 36})`);
  // Dates created_at is before: its own bound, and the others' plus the day of margin.
  const withMargin = (date?: Date) => date && new Date(date.getTime() + 86_400_000);
  const ends = [created?.lt, withMargin(sent?.lt), withMargin(retry?.lt)].filter(
    (date): date is Date => date !== undefined,
  );
  if (ends.length) {
    const end = new Date(Math.min(...ends.map((date) => date.getTime())));
    bounds.push(`id < ${first(`(${bind(params, end)}::timestamptz + interval '1 month')`)}`);
  }
  return bounds;
}

/**
 * The part of the filter webhook_call_counts can take, as conditions on its rows: webhook, types,
 * status, and created_at's range widened to whole months. Exact when it is the whole filter, an
 * upper bound otherwise.
 */
function countedConditions(query: WebhookCallListQuery, params: unknown[]): string[] {
  const where = countedEquals(query, params);
  const created = query.range?.created_at;
  const month = (date: Date) =>
    `date_trunc('month', ${bind(params, date)}::timestamptz AT TIME ZONE 'UTC')`;
  if (created?.gt) where.push(`month >= ${month(created.gt)}`);
  if (created?.lt) where.push(`month <= ${month(created.lt)}`);
  return where;
}

/**
 * The page's statement. `few`: the filter is known to match at most the count cap, so its calls
 * are found first (by the filter's best index) and sorted: under ORDER BY … LIMIT the planner
 * would rather walk the order's index and filter, which goes through nearly the whole log when
 * the filter's calls sit at the other end of it (e.g. last_sent_at in the last hour, oldest
 * first).
 */
function pageSql(
  query: WebhookCallListQuery,
  whereSql: string,
  params: unknown[],
  few: boolean,
): string {
  const column = LIST_COLUMNS[query.orderBy.column];
  const direction = query.orderBy.desc ? 'DESC' : 'ASC';
  // Calls never sent (or with no retry planned) sort last whichever the direction.
  const order = `${column} ${direction} NULLS LAST, id ${direction}`;
  const limit = `LIMIT ${bind(params, query.limit)} OFFSET ${bind(params, query.offset)}`;
  if (few) {
    return `WITH found AS MATERIALIZED (SELECT id, ${column} FROM webhook_calls ${whereSql}),
       page AS MATERIALIZED (SELECT id FROM found ORDER BY ${order} ${limit})
     SELECT ${CALL_COLUMNS} FROM webhook_calls WHERE id IN (SELECT id FROM page) ORDER BY ${order}`;
  }
  if (!NULLABLE.has(column)) {
    // NOT NULL: the same order without NULLS LAST, which a backward index scan gives.
    return `SELECT ${CALL_COLUMNS} FROM webhook_calls ${whereSql}
     ORDER BY ${column} ${direction}, id ${direction} ${limit}`;
  }
  if (!query.orderBy.desc) {
    return `SELECT ${CALL_COLUMNS} FROM webhook_calls ${whereSql} ORDER BY ${order} ${limit}`;
  }
  // DESC NULLS LAST is no index's order (a backward scan puts NULLs first): the dated calls
  // newest first, then the undated ones, each part read backwards from the column's index.
  const and = whereSql ? `${whereSql} AND` : 'WHERE';
  const enough = bind(params, query.offset + query.limit);
  return `SELECT ${CALL_COLUMNS} FROM webhook_calls WHERE id IN (SELECT id FROM (
       (SELECT id, ${column} FROM webhook_calls ${and} ${column} IS NOT NULL
        ORDER BY ${column} DESC, id DESC LIMIT ${enough})
       UNION ALL
       (SELECT id, ${column} FROM webhook_calls ${and} ${column} IS NULL
        ORDER BY id DESC LIMIT ${enough})
     ) dated ORDER BY ${order} ${limit})
     ORDER BY ${order}`;
}

const bind = (params: unknown[], value: unknown): string => {
  params.push(value);
  return `$${params.length}`;
};

/** One attempt of a call, as GET /webhook_calls/:id/attempts lists it. */
export interface WebhookCallAttemptRecord extends ExchangeRecord<never> {
  callId: string;
  number: number;
  trigger: AttemptTrigger;
  outcome: Exclude<WebhookCallStatus, 'pending'>;
  startedAt: Date;
  /** null for an attempt recorded before attempts had their own rows. */
  durationMs: number | null;
}

/**
 * A page of a call's attempts, oldest first, with how many it has; null when there is no such
 * call. Each attempt's body is its own when it kept one, else the call's.
 */
export async function listWebhookCallAttempts(
  db: Queryable,
  callId: string,
  page: { offset: number; limit: number },
): Promise<{ attempts: WebhookCallAttemptRecord[]; totalCount: number } | null> {
  if (!isCallId(callId)) return null;
  const { rows } = await db.query<
    ExchangeRow<never> & {
      attempts_count: number;
      number: number | null;
      trigger: AttemptTrigger;
      outcome: Exclude<WebhookCallStatus, 'pending'>;
      started_at: Date;
      duration_ms: number | null;
    }
  >(
    // The call's row even when the page is empty (a call never attempted, an offset past the end).
    `SELECT c.attempts_count, a.number, a.trigger, a.outcome, a.started_at, a.duration_ms,
       a.request_url, a.request_headers, coalesce(a.request_payload, c.request_payload)
       AS request_payload, a.response_status, a.response_headers, a.response_payload,
       a.failure_reason
     FROM webhook_calls c
     LEFT JOIN LATERAL (
       SELECT * FROM webhook_call_attempts a WHERE a.call_id = c.id
       ORDER BY a.number LIMIT $2 OFFSET $3
     ) a ON true
     WHERE c.id = $1
     ORDER BY a.number`,
    [callId, page.limit, page.offset],
  );
  if (rows.length === 0) return null;
  return {
    totalCount: rows[0]!.attempts_count,
    attempts: rows.flatMap((row) =>
      row.number === null
        ? []
        : [
            {
              callId,
              number: row.number,
              trigger: row.trigger,
              outcome: row.outcome,
              startedAt: row.started_at,
              durationMs: row.duration_ms,
              ...toExchange<never>(row),
            },
          ],
    ),
  };
}
