import type { AttemptTrigger, WebhookCallStatus } from '@herald/contract';
import { sqlState, type Db, type NamedStatement, type Queryable } from '../db.js';
import type { StoredEvent } from '../events.js';
import { rollUpAttemptsSql } from '../webhook-stats.js';
import { WEBHOOK_COLUMNS, toWebhook, type WebhookRecord, type WebhookRow } from '../webhooks.js';
import { CALL_COLUMNS, toCall, type WebhookCallRecord, type WebhookCallRow } from './call.js';
import { callPartition, partitionOfNow } from './partitions.js';

// The delivery log's writes: calls made by the match and by tests, attempts recorded, calls
// dropped, retention row by row.

/** A webhook's circuit breaker: open after `failures` tripping failures in a row, `cooldownMs`. */
export interface CircuitSettings {
  failures: number;
  cooldownMs: number;
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
     VALUES ($1, $2, $3, $4::json) RETURNING ${CALL_COLUMNS}`,
    [webhookId, event.entityType, event.eventType, JSON.stringify(event)],
  );
  return toCall(rows[0]!);
}

/**
 * The attempts' values, one row per call: $1 the calls' ids (the row locks' lookup), $2 the rows
 * as JSON (one parameter: pg escaped an array per column element by element; 22.2–24.8 against
 * 18.1–24.1 µs of the process per outcome in bench/delivery/fanout-statements.ts).
 */
const ATTEMPT_VALUES = `v AS (
       SELECT * FROM json_to_recordset($2::json)
         AS v(id bigint, status text, request_url text, request_headers json,
              request_payload text, response_status int, response_headers json,
              response_payload text, failure_reason text, attempted int,
              last_sent_at timestamptz, next_retry_at timestamptz, trigger text,
              duration_ms float8, trips boolean)
     )`;
const SET_OUTCOME = `status = v.status, request_url = v.request_url,
         request_headers = v.request_headers, request_payload = v.request_payload,
         response_status = v.response_status, response_headers = v.response_headers,
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
       -- The ids ($1) as the monthly statement's lock reads them: each month's index is probed.
       WHERE c.id = ANY($1::bigint[]) AND c.attempts_count > 0
         AND c.request_payload IS DISTINCT FROM v.request_payload
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
         v.request_url, v.request_headers, v.response_status, v.response_headers,
         v.response_payload, v.failure_reason
       FROM updated u JOIN v ON v.id = u.id
     )`;
/** The stats' rollups of those attempts (webhook-stats.ts), with each webhook's circuit settings. */
const ROLL_UP = `attempted AS (
       SELECT u.webhook_id, v.status, v.last_sent_at, v.duration_ms, v.trips,
         -- The circuit breaker's parameters: the webhook's policy, else the deployment's.
         coalesce((w.delivery_policy->>'circuit_failures')::int, $3::int) AS threshold,
         coalesce((w.delivery_policy->>'circuit_cooldown_ms')::float8, $4::float8) AS cooldown_ms
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
     FROM (SELECT id, webhook_id, event_id,
         row_number() OVER (PARTITION BY webhook_id ORDER BY id) AS nth FROM inserted) c
     LEFT JOIN webhooks w ON w.id = c.webhook_id AND c.nth = 1
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
  // One record per webhook, read on its first call's row only (a fan-out's thousands of calls
  // name a few webhooks: each row carrying its webhook's columns was most of what the statement
  // sent and this process parsed).
  const webhooks = new Map<string, WebhookRecord>();
  for (const row of result.rows) {
    if (row.id) webhooks.set(row.id, toWebhook(row as WebhookRow));
  }
  return result.rows.map((row) => ({
    id: row.call_id,
    webhookId: row.call_webhook_id,
    eventId: row.call_event_id,
    webhook: webhooks.get(row.call_webhook_id) ?? null,
  }));
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
  const rows = attempts.map(({ id, attempt: a }) => ({
    id,
    status: a.status,
    request_url: a.requestUrl,
    request_headers: a.requestHeaders,
    request_payload: wellFormed(a.requestPayload),
    response_status: a.responseStatus,
    response_headers: a.responseHeaders,
    response_payload: a.responsePayload === null ? null : wellFormed(a.responsePayload),
    failure_reason: a.failureReason === null ? null : wellFormed(a.failureReason),
    attempted: a.attemptedAutoRetriesCount,
    last_sent_at: a.lastSentAt,
    next_retry_at: a.nextRetryAt,
    trigger: a.trigger,
    duration_ms: a.durationMs,
    trips: a.tripsCircuit,
  }));
  await db.query(
    {
      name: `herald.webhook_calls.record_attempts${rollUp ? '' : '_only'}.${month ?? 'all'}`,
      text: recordAttemptsSql(month, rollUp),
      // As createCallsStatement's.
      planOnce: month !== null,
    },
    [
      attempts.map((a) => a.id),
      JSON.stringify(rows),
      ...(rollUp ? [circuit.failures, circuit.cooldownMs] : []),
    ],
  );
}

/**
 * `text` with any lone surrogate replaced (U+FFFD), as its UTF-8 encoding would be: JSON escapes
 * one (a backslash, u and four digits), which Postgres refuses to turn into text, and the whole
 * batch would fail with it. (Node 20 has both methods: String's well-formed ones, ES2024.)
 */
const wellFormed = (text: string): string => (text.isWellFormed() ? text : text.toWellFormed());

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
