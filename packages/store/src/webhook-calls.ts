import type { AttemptTrigger, WebhookCallStatus } from '@herald/contract';
import { sqlState, type Db, type NamedStatement, type Queryable } from './db.js';
import type { StoredEvent } from './events.js';
import { rollUpAttemptsSql } from './webhook-stats.js';
import { WEBHOOK_COLUMNS, toWebhook, type WebhookRecord, type WebhookRow } from './webhooks.js';

// The statuses of docs/api.md (The webhook call resource) are the contract's (the console lists
// them too).
export {
  WEBHOOK_CALL_STATUSES,
  type AttemptTrigger,
  type WebhookCallStatus,
} from '@herald/contract';

// Statements that find rows by key and also test their state write the state test as
// `(…) IS TRUE`. Written plainly (`matched_at IS NULL`, `status = 'pending'`), the test matches
// the predicate of a partial index (events_unmatched, webhook_calls_unfinished), which the
// statistics, read while few rows were unfinished, make look nearly empty: the planner then
// scans that index whole and filters by key, so every match or drop costs O(backlog) exactly
// when a backlog builds up (EXPLAIN ANALYZE with 100,000 unmatched events: 27 ms, not 0.07).
// `IS TRUE` means the same for these NOT NULL or tested-for-NULL columns and hides the
// predicate, so the key's index is used.

export interface WebhookCallRecord {
  id: string;
  /** The stored event's id; for a test call, the id of the event it carries. */
  eventId: string;
  /** A test call's own event (POST /webhooks/:id/test); null for the calls events make. */
  testEvent: StoredEvent | null;
  webhookId: string;
  entityType: string;
  eventType: string;
  status: WebhookCallStatus;
  createdAt: Date;
  requestUrl: string | null;
  requestHeaders: Record<string, string> | null;
  requestPayload: string | null;
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  responsePayload: string | null;
  failureReason: string | null;
  attemptedAutoRetriesCount: number;
  lastSentAt: Date | null;
  nextRetryAt: Date | null;
  /** The events it carries, in the order they reached it (flow control: several; else [eventId]). */
  eventIds: string[];
  /** Its lane, for a webhook with flow control (migration 023); null for every other call. */
  lane: string | null;
}

interface WebhookCallRow extends Record<string, unknown> {
  id: string;
  event_id: string;
  test_event: TestEventJson | null;
  webhook_id: string;
  entity_type: string;
  event_type: string;
  status: WebhookCallStatus;
  created_at: Date;
  request_url: string | null;
  request_headers: Record<string, string> | null;
  request_payload: string | null;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_payload: string | null;
  failure_reason: string | null;
  attempted_auto_retries_count: number;
  last_sent_at: Date | null;
  next_retry_at: Date | null;
  event_ids: string[];
  lane: string | null;
}

const COLUMNS = `id, coalesce(event_id, test_event->>'id') AS event_id, test_event, webhook_id, entity_type, event_type, status, created_at, request_url,
  request_headers, request_payload, response_status, response_headers, response_payload,
  failure_reason, attempted_auto_retries_count, last_sent_at, next_retry_at,
  coalesce(event_ids, ARRAY[coalesce(event_id, test_event->>'id')]) AS event_ids, lane`;

const toCall = (row: WebhookCallRow): WebhookCallRecord => ({
  id: row.id,
  eventId: row.event_id,
  testEvent: row.test_event ? fromTestEventJson(row.test_event) : null,
  webhookId: row.webhook_id,
  entityType: row.entity_type,
  eventType: row.event_type,
  status: row.status,
  createdAt: row.created_at,
  requestUrl: row.request_url,
  requestHeaders: row.request_headers,
  requestPayload: row.request_payload,
  responseStatus: row.response_status,
  responseHeaders: row.response_headers,
  responsePayload: row.response_payload,
  failureReason: row.failure_reason,
  attemptedAutoRetriesCount: row.attempted_auto_retries_count,
  lastSentAt: row.last_sent_at,
  nextRetryAt: row.next_retry_at,
  eventIds: row.event_ids,
  lane: row.lane,
});

/** A webhook's circuit breaker: open after `failures` tripping failures in a row, `cooldownMs`. */
export interface CircuitSettings {
  failures: number;
  cooldownMs: number;
}

/** A StoredEvent as a test call keeps it (webhook_calls.test_event): its dates as ISO strings. */
type TestEventJson = Omit<StoredEvent, 'occurredAt' | 'acceptedAt' | 'matchedAt'> & {
  occurredAt: string;
  acceptedAt: string;
  matchedAt: string | null;
};

function fromTestEventJson(json: TestEventJson): StoredEvent {
  return {
    ...json,
    occurredAt: new Date(json.occurredAt),
    acceptedAt: new Date(json.acceptedAt),
    matchedAt: json.matchedAt === null ? null : new Date(json.matchedAt),
  };
}

/**
 * A test call of a webhook (POST /webhooks/:id/test): pending, carrying `event` (a sample, or a
 * copy of a stored event) rather than naming it. Attempted like any call, never auto-retried.
 */
export async function createTestWebhookCall(
  db: Queryable,
  webhookId: string,
  event: StoredEvent,
): Promise<WebhookCallRecord> {
  const { rows } = await db.query<WebhookCallRow>(
    `INSERT INTO webhook_calls (webhook_id, entity_type, event_type, test_event)
     VALUES ($1, $2, $3, $4::json) RETURNING ${COLUMNS}`,
    [webhookId, event.entityType, event.eventType, JSON.stringify(event)],
  );
  return toCall(rows[0]!);
}

/** The attempts' values, one row per call: the parameters $1–$15 of the statements below. */
const ATTEMPT_VALUES = `v AS (
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[],
                            $6::int[], $7::text[], $8::text[], $9::text[], $10::int[],
                            $11::timestamptz[], $12::timestamptz[], $13::text[], $14::float8[],
                            $15::boolean[])
         AS v(id, status, request_url, request_headers, request_payload, response_status,
              response_headers, response_payload, failure_reason, attempted, last_sent_at,
              next_retry_at, trigger, duration_ms, trips)
     )`;
const SET_OUTCOME = `status = v.status, request_url = v.request_url,
         request_headers = v.request_headers::json, request_payload = v.request_payload,
         response_status = v.response_status, response_headers = v.response_headers::json,
         response_payload = v.response_payload, failure_reason = v.failure_reason,
         attempted_auto_retries_count = v.attempted, last_sent_at = v.last_sent_at,
         next_retry_at = v.next_retry_at, enqueued_at = coalesce(v.next_retry_at, c.enqueued_at),
         held_by = NULL, attempts_count = c.attempts_count + 1, claimed_at = NULL`;

/**
 * The statement that records attempts (recordWebhookCallAttempts), in parts: each call takes the
 * attempt as its last one, and the attempt joins the call's history; `before` has each call's
 * body before this attempt, so that the earlier attempts that shared it keep a copy.
 *
 * `month` (a partition's suffix, `2026_11` or `legacy`): the statement writes that month's
 * partitions of the log directly, all its calls being of that month (the month is in the id).
 * Through the partitioned parents, Postgres opens and locks every month's partition and every
 * index of each at every execution (a generic plan cannot prune a join), which cost more than
 * the write itself (bench/delivery/event-statements.ts). A partition written directly fires
 * none of the parent's statement triggers, so the statement keeps webhook_call_counts itself
 * (`counted`, as herald_count_webhook_calls does): each call's status before, read under the row
 * lock the update takes anyway, so that a change committed meanwhile is counted from the status
 * it left. Without `month`, through the parents, the count triggers do it.
 */
function recordCallsSql(month: string | null): string {
  const calls = month === null ? 'webhook_calls' : `webhook_calls_${month}`;
  const attempts = month === null ? 'webhook_call_attempts' : `webhook_call_attempts_${month}`;
  // The earlier attempts that shared the call's body before this one keep a copy.
  const kept = `kept AS (
       UPDATE ${attempts} a SET request_payload = b.request_payload
       FROM before b WHERE a.call_id = b.id AND a.request_payload IS NULL
     ),`;
  return month === null
    ? `WITH ${ATTEMPT_VALUES}, before AS (
       SELECT c.id, c.request_payload FROM ${calls} c JOIN v ON v.id = c.id
       WHERE c.attempts_count > 0 AND c.request_payload IS DISTINCT FROM v.request_payload
     ), ${kept} updated AS (
       UPDATE ${calls} AS c SET ${SET_OUTCOME}
       FROM v WHERE c.id = v.id
       RETURNING c.id, c.attempts_count, c.webhook_id
     )`
    : `WITH ${ATTEMPT_VALUES}, old AS MATERIALIZED (
       SELECT c.id, c.status, c.request_payload, c.attempts_count FROM ${calls} c
       WHERE c.id = ANY($1::bigint[]) FOR NO KEY UPDATE
     ), before AS (
       SELECT o.id, o.request_payload FROM old o JOIN v ON v.id = o.id
       WHERE o.attempts_count > 0 AND o.request_payload IS DISTINCT FROM v.request_payload
     ), ${kept} updated AS (
       UPDATE ${calls} AS c SET ${SET_OUTCOME}
       FROM v JOIN old o ON o.id = v.id WHERE c.id = v.id
       RETURNING c.id, c.attempts_count, c.webhook_id, c.entity_type, c.event_type, c.created_at,
         c.status, o.status AS old_status
     ), counted AS MATERIALIZED (
       SELECT herald_add_webhook_call_count(k.webhook_id, k.entity_type, k.event_type, k.status,
         k.month, k.calls)
       FROM (
         SELECT u.webhook_id, u.entity_type, u.event_type, s.status,
           date_trunc('month', u.created_at AT TIME ZONE 'UTC')::date AS month,
           sum(s.delta)::bigint AS calls
         FROM updated u
         CROSS JOIN LATERAL (VALUES (u.old_status, -1), (u.status, 1)) AS s (status, delta)
         WHERE u.old_status IS DISTINCT FROM u.status
         GROUP BY 1, 2, 3, 4, 5 HAVING sum(s.delta) <> 0 ORDER BY 1, 2, 3, 4, 5) k
     )`;
}

/** The attempts' history rows, after the CTEs of recordCallsSql. */
const recordHistorySql = (month: string | null) => `history AS (
       INSERT INTO ${month === null ? 'webhook_call_attempts' : `webhook_call_attempts_${month}`}
         (call_id, number, trigger, outcome, started_at, duration_ms, request_url,
         request_headers, response_status, response_headers, response_payload, failure_reason)
       SELECT u.id, u.attempts_count, v.trigger, v.status, v.last_sent_at, v.duration_ms,
         v.request_url, v.request_headers::json, v.response_status, v.response_headers::json,
         v.response_payload, v.failure_reason
       FROM updated u JOIN v ON v.id = u.id
     )`;
/** The stats' rollups of those attempts (webhook-stats.ts), with each webhook's circuit settings. */
const ROLL_UP = `attempted AS (
       SELECT u.webhook_id, v.status, v.last_sent_at, v.duration_ms, v.trips,
         -- The circuit breaker's parameters: the webhook's policy, else the deployment's.
         coalesce((w.delivery_policy->>'circuit_failures')::int, $16::int) AS threshold,
         coalesce((w.delivery_policy->>'circuit_cooldown_ms')::float8, $17::float8) AS cooldown_ms
       FROM updated u JOIN v ON v.id = u.id LEFT JOIN webhooks w ON w.id = u.webhook_id
     ), ${rollUpAttemptsSql('attempted')}`;

/**
 * The whole statement: with the stats' rollups, or without them (the delivery workers add them
 * up and write them apart: AttemptRollups). Data-modifying CTEs run whether read or not;
 * `counted`, a SELECT, runs because the statement reads it.
 */
function recordAttemptsSql(month: string | null, rollUp: boolean): string {
  const key = `${month ?? 'all'} ${rollUp}`;
  let text = recordAttemptsTexts.get(key);
  if (text === undefined) recordAttemptsTexts.set(key, (text = buildRecordAttempts(month, rollUp)));
  return text;
}
/** By month and rollUp: the text is built once. */
const recordAttemptsTexts = new Map<string, string>();

function buildRecordAttempts(month: string | null, rollUp: boolean): string {
  const parts = [recordCallsSql(month), ...(rollUp ? [ROLL_UP] : []), recordHistorySql(month)];
  return `${parts.join(', ')}
     SELECT ${month === null ? '0' : '(SELECT count(*) FROM counted)'} AS counted`;
}

/**
 * The month of the log's partition that holds a call (its id's top bits: migration 021), as the
 * partitions are named: `2026_11`, or `legacy` for the ids made before the log was partitioned.
 */
export function callPartition(id: string): string {
  const months = Number(BigInt(id) >> 36n);
  if (months === 0) return 'legacy';
  const month = (months % 12) + 1;
  return `${Math.floor(months / 12)}_${month < 10 ? '0' : ''}${month}`;
}

const isCallId = (id: string): boolean => /^[1-9]\d{0,17}$/.test(id);

/** A call createWebhookCalls made (or found pending), with its webhook as it is now. */
export interface NewWebhookCall {
  id: string;
  webhookId: string;
  eventId: string;
  /** null when the webhook was deleted meanwhile. */
  webhook: WebhookRecord | null;
}

type CreatedCallRow = Partial<WebhookRow> & {
  call_id: string;
  call_webhook_id: string;
  call_event_id: string;
};

/** SQLSTATE check_violation: a row outside the partition's bounds or its month's CHECK. */
const CHECK_VIOLATION = '23514';
/**
 * How close to a month's turn (UTC) new calls go through the partitioned parent rather than to
 * this month's partition directly: the process's clock, Postgres's, and the transaction's start
 * (`now()`, which the call's id and created_at take) may differ by this much.
 */
const MONTH_TURN_MS = 60_000;

/** The month a call made now goes to (its partition's suffix), or null near a month's turn. */
function partitionOfNow(now: number): string | null {
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const start = Date.UTC(year, month, 1);
  const next = Date.UTC(year, month + 1, 1);
  if (now - start < MONTH_TURN_MS || next - now < MONTH_TURN_MS) return null;
  return `${year}_${month < 9 ? '0' : ''}${month + 1}`;
}

const CREATED_WEBHOOK_COLUMNS = WEBHOOK_COLUMNS.split(',')
  .map((column) => `w.${column.trim()}`)
  .join(', ');

/**
 * The statement of createWebhookCalls. A commit that creates calls waits for the WAL flush even
 * on the workers' pool (synchronous_commit=off, DELIVERY_SYNCHRONOUS_COMMIT): their first
 * attempts go out at once, and a crash that forgot the calls would match the event again under
 * new call ids, i.e. new webhook-ids a receiver cannot deduplicate. Evaluated per returned row,
 * so only when calls were made; the setting in effect at commit is the one that counts.
 * The webhook's row decides, not the caller's index: a webhook disabled or deleted (by the API or
 * by a worker on a 410) gets no new call from the moment that change commits.
 * One call per (event, webhook): only the events not matched yet get calls, each held (in id
 * order, so that two statements never wait for each other in a circle) until the statement
 * commits; a statement that waited finds the event matched and makes nothing (webhook_calls is
 * partitioned by month, so no unique index spans the calls of two months; migration 021). The
 * partition's unique index stays a second guard.
 *
 * `month`: the calls go to that month's partition directly, which fires none of the parent's
 * statement triggers (the routing and the count trigger's transition table cost more than the
 * insert), so the statement counts them itself (`counted`), as recordCallsSql does; null:
 * through the parent and its count trigger.
 */
function createCallsStatement(month: string | null): NamedStatement {
  const key = month ?? 'all';
  let statement = createCallsStatements.get(key);
  if (!statement) createCallsStatements.set(key, (statement = buildCreateCalls(month)));
  return statement;
}
/** By month (a handful a process ever sees): the text is built once. */
const createCallsStatements = new Map<string, NamedStatement>();

function buildCreateCalls(month: string | null): NamedStatement {
  const counted =
    month === null
      ? ''
      : `, counted AS MATERIALIZED (
       SELECT herald_add_webhook_call_count(k.webhook_id, k.entity_type, k.event_type, k.status,
         k.month, k.calls)
       FROM (
         SELECT webhook_id, entity_type, event_type, status,
           date_trunc('month', created_at AT TIME ZONE 'UTC')::date AS month, count(*) AS calls
         FROM inserted GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5) k
     )`;
  return {
    name: `herald.webhook_calls.create.${month ?? 'all'}`,
    // On one partition the generic plan is the custom plans' (bench/delivery/event-statements.ts:
    // ~800 µs per event against ~1,500 planned each time). Through the parent, plans made with the
    // ids prune the months.
    planOnce: month !== null,
    text: `WITH unmatched AS (
       SELECT id FROM events WHERE id = ANY($2::text[]) AND (matched_at IS NULL) IS TRUE
       ORDER BY id FOR NO KEY UPDATE
     ), inserted AS (
       INSERT INTO ${month === null ? 'webhook_calls' : `webhook_calls_${month}`}
         (event_id, webhook_id, entity_type, event_type, held_by)
       SELECT x.e, x.w, x.t, x.v, $3
       FROM json_to_recordset($1::json) AS x(e text, w bigint, t text, v text, n integer)
       JOIN unmatched u ON u.id = x.e
       JOIN webhooks ww ON ww.id = x.w AND ww.enabled
       ORDER BY x.n
       ON CONFLICT DO NOTHING
       RETURNING id, webhook_id, event_id, entity_type, event_type, status, created_at
     )${counted}, matched AS (
       UPDATE events SET matched_at = now() WHERE id IN (SELECT id FROM unmatched)
       RETURNING 1
     )
     SELECT c.id AS call_id, c.webhook_id AS call_webhook_id, c.event_id AS call_event_id,
       ${CREATED_WEBHOOK_COLUMNS}, set_config('synchronous_commit', 'on', true) AS durable
       ${month === null ? '' : ', (SELECT count(*) FROM counted) AS counted'}
     FROM inserted c LEFT JOIN webhooks w ON w.id = c.webhook_id
     ORDER BY c.id`,
  };
}

/**
 * The calls of several events in one statement: a row per (event, matching webhook that is still
 * enabled when the statement runs), and every event marked matched, even those matching nothing.
 * The new calls are held by `holder` (the lease of the process that will make their first
 * attempts; see takeOverOrphanedWebhookCalls) and returned in creation order, each with its
 * webhook read in the same statement (the first attempt needs its current settings and secrets).
 * Calls that already existed (a repeated match) are not returned: they belong to whoever made
 * them, and the sweeper takes over those of a dead holder.
 */
export async function createWebhookCalls(
  db: Queryable,
  matches: readonly {
    event: { id: string; entityType: string; eventType: string };
    webhookIds: readonly string[];
  }[],
  holder: string | null = null,
): Promise<NewWebhookCall[]> {
  if (matches.length === 0) return [];
  let n = 0;
  const rows = matches.flatMap(({ event, webhookIds }) =>
    webhookIds.map((w) => ({ n: n++, e: event.id, w, t: event.entityType, v: event.eventType })),
  );
  const eventIds = matches.map(({ event }) => event.id);
  const params = [JSON.stringify(rows), eventIds, holder];
  const month = partitionOfNow(Date.now());
  let result: { rows: CreatedCallRow[] };
  try {
    result = await db.query<CreatedCallRow>(createCallsStatement(month), params);
  } catch (error) {
    // Not the month the process thought (its clock and Postgres's disagree by more than
    // MONTH_TURN_MS), or its partition not made yet: the parent routes the calls. Inside a
    // transaction the error stands: the transaction is over.
    const state = sqlState(error);
    const elsewhere = state === CHECK_VIOLATION || state === UNDEFINED_TABLE;
    if (month === null || !elsewhere || !('transaction' in db)) throw error;
    result = await db.query<CreatedCallRow>(createCallsStatement(null), params);
  }
  // One record per webhook, however many calls it has in the batch.
  const webhooks = new Map<string, WebhookRecord>();
  const webhookOf = (row: Partial<WebhookRow>): WebhookRecord | null => {
    if (!row.id) return null;
    let webhook = webhooks.get(row.id);
    if (!webhook) webhooks.set(row.id, (webhook = toWebhook(row as WebhookRow)));
    return webhook;
  };
  return result.rows.map((row) => ({
    id: row.call_id,
    webhookId: row.call_webhook_id,
    eventId: row.call_event_id,
    webhook: webhookOf(row),
  }));
}

export async function findWebhookCall(
  db: Queryable,
  id: string,
): Promise<WebhookCallRecord | null> {
  if (!isCallId(id)) return null;
  const { rows } = await db.query<WebhookCallRow>(
    `SELECT ${COLUMNS} FROM webhook_calls WHERE id = $1`,
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
      text: `SELECT ${COLUMNS} FROM webhook_calls WHERE id = ANY($1::bigint[])`,
    },
    [valid],
  );
  return rows.map(toCall);
}

/** The outcome of one attempt, as the deliver worker records it. */
export interface WebhookCallAttempt {
  status: Exclude<WebhookCallStatus, 'pending'>;
  trigger: AttemptTrigger;
  /** From sending the request to its answer (or failure), in milliseconds. */
  durationMs: number;
  /**
   * Whether the failure says the endpoint is away (no answer, a timeout, a 5xx, a 429): a run of
   * those opens the webhook's circuit. False for a success and for other answers.
   */
  tripsCircuit: boolean;
  requestUrl: string;
  requestHeaders: Record<string, string>;
  requestPayload: string;
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  responsePayload: string | null;
  failureReason: string | null;
  attemptedAutoRetriesCount: number;
  lastSentAt: Date;
  nextRetryAt: Date | null;
}

/**
 * Several attempts' outcomes in one statement (the deliver worker batches its writes): each call
 * takes the attempt as its last one (the DatoCMS shape), and the attempt is added to the call's
 * history, numbered after the attempts before it. Its body is stored only on the call; when it
 * differs from the one the call had, the earlier attempts that shared that one keep a copy. Ids
 * must be distinct within one call.
 */
export async function recordWebhookCallAttempts(
  db: Queryable,
  attempts: readonly { id: string; attempt: WebhookCallAttempt }[],
  /** The circuit breaker: opens after `failures` tripping failures in a row (0: never). */
  circuit: CircuitSettings = { failures: 0, cooldownMs: 0 },
  /** false: leave the stats' rollups to the caller (recordAttemptRollups, later, in bulk). */
  rollUp = true,
): Promise<void> {
  if (attempts.length === 0) return;
  // One statement per month of the log (nearly always one), each on its partitions.
  const byMonth = new Map<string, { id: string; attempt: WebhookCallAttempt }[]>();
  for (const attempt of attempts) {
    const month = callPartition(attempt.id);
    const list = byMonth.get(month);
    if (list) list.push(attempt);
    else byMonth.set(month, [attempt]);
  }
  if (byMonth.size > 1 && 'transaction' in db) {
    // Calls of two months (retries across a month's turn): their statements commit together.
    const months = [...byMonth];
    await (db as Db).transaction(async (tx) => {
      for (const [month, list] of months) await recordAttempts(tx, list, circuit, rollUp, month);
    });
    return;
  }
  for (const [month, list] of byMonth) {
    try {
      await recordAttempts(db, list, circuit, rollUp, month);
    } catch (error) {
      // The month's partition is gone (retention dropped it with its calls): through the parent,
      // the statement finds nothing to write, as it did before the month was dropped. Inside a
      // transaction the error stands: the transaction is over.
      if (sqlState(error) !== UNDEFINED_TABLE || !('transaction' in db)) throw error;
      await recordAttempts(db, list, circuit, rollUp, null);
    }
  }
}

/** SQLSTATE undefined_table. */
const UNDEFINED_TABLE = '42P01';

async function recordAttempts(
  db: Queryable,
  attempts: readonly { id: string; attempt: WebhookCallAttempt }[],
  circuit: CircuitSettings,
  rollUp: boolean,
  month: string | null,
): Promise<void> {
  const column = <T>(pick: (a: WebhookCallAttempt) => T) => attempts.map((a) => pick(a.attempt));
  await db.query(
    {
      name: `herald.webhook_calls.record_attempts${rollUp ? '' : '_only'}.${month ?? 'all'}`,
      text: recordAttemptsSql(month, rollUp),
      // As createCallsStatement's.
      planOnce: month !== null,
    },
    [
      attempts.map((a) => a.id),
      column((a) => a.status),
      column((a) => a.requestUrl),
      column((a) => JSON.stringify(a.requestHeaders)),
      column((a) => a.requestPayload),
      column((a) => a.responseStatus),
      column((a) => (a.responseHeaders ? JSON.stringify(a.responseHeaders) : null)),
      column((a) => a.responsePayload),
      column((a) => a.failureReason),
      column((a) => a.attemptedAutoRetriesCount),
      column((a) => a.lastSentAt),
      column((a) => a.nextRetryAt),
      column((a) => a.trigger),
      column((a) => a.durationMs),
      column((a) => a.tripsCircuit),
      ...(rollUp ? [circuit.failures, circuit.cooldownMs] : []),
    ],
  );
}

/** Ends a call without sending (its webhook was deleted or disabled): no retry stays planned. */
export async function dropWebhookCall(db: Queryable, id: string, reason: string): Promise<void> {
  await db.query(
    `UPDATE webhook_calls SET status = 'failed', next_retry_at = NULL, failure_reason = $2,
       held_by = NULL
     WHERE id = $1 AND (status IN ('pending', 'rescheduled')) IS TRUE`,
    [id, reason],
  );
}

/**
 * Deletes up to `limit` finished calls (success, failed) created before `before`, oldest first,
 * with their attempts, and returns how many: the delivery log's retention where a whole month
 * cannot go at once (dropWebhookCallMonths). Calls still pending or rescheduled stay whatever
 * their age. Rows another transaction holds (a resend being recorded, another delivery process
 * pruning) are skipped, so pruners never wait for each other or for deliveries.
 */
export async function deleteFinishedWebhookCalls(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<number> {
  const { rows } = await db.query<{ deleted: string }>(
    `WITH gone AS (
       DELETE FROM webhook_calls WHERE id IN (
         SELECT id FROM webhook_calls
         WHERE created_at < $1 AND status IN ('success', 'failed')
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       RETURNING id
     ), attempts AS (
       DELETE FROM webhook_call_attempts WHERE call_id IN (SELECT id FROM gone)
     )
     SELECT count(*) AS deleted FROM gone`,
    [before, limit],
  );
  return Number(rows[0]?.deleted ?? 0);
}

/** The first instant of the month (UTC) `at` falls in. */
export const monthStart = (at: Date): Date =>
  new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));

/** The ids of one month: a call's id is its month (since year 0, UTC) times 2^36 plus a number. */
const MONTH_IDS = 2n ** 36n;

/** A month's partitions and their bounds. */
function partitionMonth(start: Date) {
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth();
  // Digits only: the partitions' names are made from them (never from input).
  const suffix = `${year}_${String(month + 1).padStart(2, '0')}`;
  const first = BigInt(year * 12 + month) * MONTH_IDS;
  return {
    calls: `webhook_calls_${suffix}`,
    attempts: `webhook_call_attempts_${suffix}`,
    first,
    end: first + MONTH_IDS,
    start,
    next: new Date(Date.UTC(year, month + 1, 1)),
  };
}

async function exists(tx: Queryable, table: string): Promise<boolean> {
  const { rows } = await tx.query<{ found: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AS found',
    [table],
  );
  return rows[0]?.found ?? false;
}

/**
 * Makes the monthly partitions of webhook_calls and webhook_call_attempts (migration 021) of
 * `months` months from the one `from` falls in, those missing; returns how many it made. The
 * delivery processes make this month's and the next two at start and at every pruning pass.
 */
export function createWebhookCallMonths(db: Db, from: Date = new Date(), months = 3) {
  return db.transaction((tx) => makeWebhookCallMonths(tx, from, months));
}

/**
 * createWebhookCallMonths in the transaction `tx` is (migration 021's own). Under a lock, so that
 * processes running it together make each month once; making a partition takes a lock on
 * webhook_calls that waits for the statements using it, at most lock_timeout (the next pass tries
 * again, months ahead of need).
 */
export async function makeWebhookCallMonths(
  tx: Queryable,
  from: Date,
  months: number,
): Promise<number> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('herald:webhook_call_partitions'))`);
  let made = 0;
  for (let i = 0; i < months; i++) {
    const month = partitionMonth(
      new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + i, 1)),
    );
    if (await exists(tx, month.calls)) continue;
    await tx.query(`SELECT set_config('lock_timeout', '2s', true)`);
    await tx.query(
      `CREATE TABLE ${month.calls} PARTITION OF webhook_calls
       FOR VALUES FROM (${month.first}) TO (${month.end})`,
    );
    // A partition holds exactly its month's calls: webhook_call_counts' rows of the month are its.
    await tx.query(
      `ALTER TABLE ${month.calls} ADD CONSTRAINT ${month.calls}_month
       CHECK (created_at >= '${month.start.toISOString()}' AND created_at < '${month.next.toISOString()}')`,
    );
    // One call per (event, webhook) in the month (across months: the match's locks, migration 021).
    await tx.query(
      `CREATE UNIQUE INDEX ${month.calls}_event_webhook ON ${month.calls} (event_id, webhook_id)`,
    );
    await tx.query(
      `CREATE TABLE ${month.attempts} PARTITION OF webhook_call_attempts
       FOR VALUES FROM (${month.first}) TO (${month.end})`,
    );
    made++;
  }
  return made;
}

/**
 * The delivery log's retention by whole months: drops each month partition that ended before
 * `before` (calls, attempts and their counts, at once), oldest first, except a month that still
 * holds a pending or rescheduled call (it goes once that call ends), and the partition of the
 * calls made before migration 021 once the row-by-row retention has emptied it. Returns the
 * months dropped and how many calls they held.
 */
export async function dropWebhookCallMonths(
  db: Db,
  before: Date,
): Promise<{ months: string[]; calls: number }> {
  const { rows } = await db.query<{ relname: string }>(
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'webhook_calls'::regclass AND c.relname ~ '^webhook_calls_[0-9]{4}_[0-9]{2}$'
     ORDER BY c.relname`,
  );
  const months: string[] = [];
  let calls = 0;
  for (const { relname } of rows) {
    const [year = 0, month = 0] = relname.slice('webhook_calls_'.length).split('_').map(Number);
    const start = new Date(Date.UTC(year, month - 1, 1));
    if (new Date(Date.UTC(year, month, 1)) > before) break;
    const dropped = await db.transaction((tx) => dropWebhookCallMonth(tx, start));
    if (dropped === null) continue;
    months.push(relname.slice('webhook_calls_'.length).replace('_', '-'));
    calls += dropped;
  }
  await db.transaction(dropEmptyLegacyWebhookCalls);
  return { months, calls };
}

/**
 * Drops the month `start` begins, calls and attempts, and its counts, unless a call in it is still
 * pending or rescheduled (it stays until that call ends; the row-by-row retention keeps deleting
 * its finished calls meanwhile) or the legacy partition still holds calls of that month or before
 * (their counts share the month's rows). Returns how many calls it dropped, or null when it
 * dropped nothing.
 */
async function dropWebhookCallMonth(tx: Queryable, start: Date): Promise<number | null> {
  const month = partitionMonth(start);
  if (!(await exists(tx, month.calls))) return null;
  // Before looking, so that no statement makes a call pending in it (a resend) meanwhile.
  await tx.query(`SELECT set_config('lock_timeout', '2s', true)`);
  await tx.query('LOCK TABLE webhook_calls, webhook_call_attempts IN ACCESS EXCLUSIVE MODE');
  const { rows: unfinished } = await tx.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${month.calls} WHERE status IN ('pending', 'rescheduled')) AS found`,
  );
  if (unfinished[0]?.found) return null;
  if (await exists(tx, 'webhook_calls_legacy')) {
    const { rows: older } = await tx.query<{ found: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM webhook_calls_legacy WHERE created_at < $1) AS found',
      [month.next],
    );
    if (older[0]?.found) return null;
  }
  const day = month.start.toISOString().slice(0, 10);
  const { rows: counted } = await tx.query<{ calls: string }>(
    'SELECT coalesce(sum(calls), 0) AS calls FROM webhook_call_counts WHERE month = $1::date',
    [day],
  );
  await tx.query(`DROP TABLE ${month.attempts}`);
  await tx.query(`DROP TABLE ${month.calls}`);
  await tx.query('DELETE FROM webhook_call_counts WHERE month = $1::date', [day]);
  return Number(counted[0]?.calls ?? 0);
}

/** Drops the legacy partition (migration 021) once the row-by-row retention has emptied it. */
async function dropEmptyLegacyWebhookCalls(tx: Queryable): Promise<void> {
  const empty = async () =>
    (await tx.query('SELECT 1 FROM webhook_calls_legacy LIMIT 1')).rowCount === 0;
  if (!(await exists(tx, 'webhook_calls_legacy')) || !(await empty())) return;
  await tx.query(`SELECT set_config('lock_timeout', '2s', true)`);
  await tx.query('LOCK TABLE webhook_calls, webhook_call_attempts IN ACCESS EXCLUSIVE MODE');
  if (!(await empty())) return;
  await tx.query('DROP TABLE webhook_call_attempts_legacy');
  await tx.query('DROP TABLE webhook_calls_legacy');
}

/** Notes that a job was just put in Redis for these calls (restarts the sweeper's clock). */
export async function markWebhookCallsEnqueued(
  db: Queryable,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    `UPDATE webhook_calls SET enqueued_at = now(), held_by = NULL WHERE id = ANY($1::bigint[])`,
    [ids],
  );
}

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
): Promise<
  {
    id: string;
    webhookId: string;
    status: 'pending' | 'rescheduled';
    attemptedAutoRetriesCount: number;
  }[]
> {
  const { rows } = await db.query<{
    id: string;
    webhook_id: string;
    status: 'pending' | 'rescheduled';
    attempted_auto_retries_count: number;
  }>(
    // The conditions of the webhook_calls_unfinished index (enqueued_at, partial), on purpose.
    // Calls held by a process are its own while its lease lives (takeOverOrphanedWebhookCalls).
    `SELECT id, webhook_id, status, attempted_auto_retries_count FROM webhook_calls
     WHERE status IN ('pending', 'rescheduled') AND enqueued_at < $1 AND held_by IS NULL
     ORDER BY enqueued_at LIMIT $2`,
    [options.before, options.limit],
  );
  return rows.map((row) => ({
    id: row.id,
    webhookId: row.webhook_id,
    status: row.status,
    attemptedAutoRetriesCount: row.attempted_auto_retries_count,
  }));
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
  {
    id: string;
    webhookId: string;
    status: 'pending' | 'rescheduled';
    attemptedAutoRetriesCount: number;
    dueAt: Date;
    /** Its place in the list (enqueued_at to the microsecond). */
    cursor: string;
  }[]
> {
  const { rows } = await db.query<{
    id: string;
    webhook_id: string;
    status: 'pending' | 'rescheduled';
    attempted_auto_retries_count: number;
    enqueued_at: Date;
    cursor: string;
  }>(
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
    id: String(row.id),
    webhookId: String(row.webhook_id),
    status: row.status,
    attemptedAutoRetriesCount: row.attempted_auto_retries_count,
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
     SELECT ${COLUMNS} FROM webhook_calls WHERE id IN (SELECT id FROM page) ORDER BY ${order}`;
  }
  if (!NULLABLE.has(column)) {
    // NOT NULL: the same order without NULLS LAST, which a backward index scan gives.
    return `SELECT ${COLUMNS} FROM webhook_calls ${whereSql}
     ORDER BY ${column} ${direction}, id ${direction} ${limit}`;
  }
  if (!query.orderBy.desc) {
    return `SELECT ${COLUMNS} FROM webhook_calls ${whereSql} ORDER BY ${order} ${limit}`;
  }
  // DESC NULLS LAST is no index's order (a backward scan puts NULLs first): the dated calls
  // newest first, then the undated ones, each part read backwards from the column's index.
  const and = whereSql ? `${whereSql} AND` : 'WHERE';
  const enough = bind(params, query.offset + query.limit);
  return `SELECT ${COLUMNS} FROM webhook_calls WHERE id IN (SELECT id FROM (
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
export interface WebhookCallAttemptRecord {
  callId: string;
  number: number;
  trigger: AttemptTrigger;
  outcome: Exclude<WebhookCallStatus, 'pending'>;
  startedAt: Date;
  /** null for an attempt recorded before attempts had their own rows. */
  durationMs: number | null;
  requestUrl: string;
  requestHeaders: Record<string, string>;
  requestPayload: string | null;
  responseStatus: number | null;
  responseHeaders: Record<string, string> | null;
  responsePayload: string | null;
  failureReason: string | null;
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
  const { rows } = await db.query<{
    attempts_count: number;
    number: number | null;
    trigger: AttemptTrigger;
    outcome: Exclude<WebhookCallStatus, 'pending'>;
    started_at: Date;
    duration_ms: number | null;
    request_url: string;
    request_headers: Record<string, string>;
    request_payload: string | null;
    response_status: number | null;
    response_headers: Record<string, string> | null;
    response_payload: string | null;
    failure_reason: string | null;
  }>(
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
              requestUrl: row.request_url,
              requestHeaders: row.request_headers,
              requestPayload: row.request_payload,
              responseStatus: row.response_status,
              responseHeaders: row.response_headers,
              responsePayload: row.response_payload,
              failureReason: row.failure_reason,
            },
          ],
    ),
  };
}
