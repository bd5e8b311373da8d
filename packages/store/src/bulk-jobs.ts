import type { Db, Queryable } from './db.js';
import type { EventRow, MatchableEvent, StoredEvent } from './events.js';
import type { WebhookCallStatus } from './webhook-calls/call.js';

// Bulk jobs (migration 017, docs/api.md, Bulk jobs): a bulk resend or a replay, stored here and
// run by one delivery process at a time, held by its lease. Everything a job has done is in its
// items' states, so a process that takes over a job (its holder died) carries on where it ended.

export type BulkJobKind = 'bulk_resend' | 'replay';
export type BulkJobState = 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';
export type BulkItemOutcome = 'succeeded' | 'failed' | 'skipped';

/** A time range as the API takes it: exclusive bounds, ISO-8601 instants. */
export interface InstantRange {
  gt?: string;
  lt?: string;
}

/** The calls a bulk resend sends again. */
export interface BulkResendFilter {
  webhook_id?: string;
  status?: WebhookCallStatus;
  created_at?: InstantRange;
  entity_type?: string;
  event_type?: string;
  entity_id?: string;
}

/** The events a replay sends (those its webhook's entries match). */
export interface ReplayFilter {
  occurred_at?: InstantRange;
}

export interface BulkJobRecord {
  id: string;
  kind: BulkJobKind;
  state: BulkJobState;
  webhookId: string | null;
  filter: BulkResendFilter | ReplayFilter;
  ratePerSecond: number | null;
  /** null while the selection is being made. */
  matched: number | null;
  selected: number;
  selectAfter: { occurredAt: Date; seq: string } | null;
  succeeded: number;
  failed: number;
  skipped: number;
  observedRate: number | null;
  failureReason: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
}

interface BulkJobRow extends Record<string, unknown> {
  id: string;
  kind: BulkJobKind;
  state: BulkJobState;
  webhook_id: string | null;
  filter: BulkResendFilter | ReplayFilter;
  rate_per_second: number | null;
  matched: string | null;
  selected: string;
  select_after_at: Date | null;
  select_after_seq: string | null;
  succeeded: string;
  failed: string;
  skipped: string;
  observed_rate: number | null;
  failure_reason: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

const JOB_COLUMNS = `id, kind, state, webhook_id, filter, rate_per_second, matched, selected,
  select_after_at, select_after_seq, succeeded, failed, skipped, observed_rate, failure_reason,
  created_at, started_at, finished_at, updated_at`;

const toJob = (row: BulkJobRow): BulkJobRecord => ({
  id: row.id,
  kind: row.kind,
  state: row.state,
  webhookId: row.webhook_id,
  filter: row.filter,
  ratePerSecond: row.rate_per_second,
  matched: row.matched === null ? null : Number(row.matched),
  selected: Number(row.selected),
  selectAfter:
    row.select_after_at && row.select_after_seq
      ? { occurredAt: row.select_after_at, seq: row.select_after_seq }
      : null,
  succeeded: Number(row.succeeded),
  failed: Number(row.failed),
  skipped: Number(row.skipped),
  observedRate: row.observed_rate,
  failureReason: row.failure_reason,
  createdAt: row.created_at,
  startedAt: row.started_at,
  finishedAt: row.finished_at,
  updatedAt: row.updated_at,
});

const isId = (id: string): boolean => /^[1-9]\d{0,17}$/.test(id);

/** A new job, queued: the next delivery process to look for work takes it. */
export async function createBulkJob(
  db: Queryable,
  job: {
    kind: BulkJobKind;
    webhookId: string | null;
    filter: BulkResendFilter | ReplayFilter;
    ratePerSecond: number | null;
  },
): Promise<BulkJobRecord> {
  const { rows } = await db.query<BulkJobRow>(
    `INSERT INTO bulk_jobs (kind, webhook_id, filter, rate_per_second)
     VALUES ($1, $2, $3::json, $4) RETURNING ${JOB_COLUMNS}`,
    [job.kind, job.webhookId, JSON.stringify(job.filter), job.ratePerSecond],
  );
  return toJob(rows[0]!);
}

export async function findBulkJob(db: Queryable, id: string): Promise<BulkJobRecord | null> {
  if (!isId(id)) return null;
  const { rows } = await db.query<BulkJobRow>(
    `SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE id = $1`,
    [id],
  );
  return rows[0] ? toJob(rows[0]) : null;
}

/** A page of jobs, newest first, optionally those of one webhook. */
export async function listBulkJobs(
  db: Queryable,
  query: { webhookId?: string; offset: number; limit: number },
): Promise<{ jobs: BulkJobRecord[]; totalCount: number }> {
  if (query.webhookId !== undefined && !isId(query.webhookId)) return { jobs: [], totalCount: 0 };
  const where = query.webhookId === undefined ? '' : 'WHERE webhook_id = $3';
  const params = query.webhookId === undefined ? [] : [query.webhookId];
  const [page, count] = await Promise.all([
    db.query<BulkJobRow>(
      `SELECT ${JOB_COLUMNS} FROM bulk_jobs ${where} ORDER BY id DESC LIMIT $1 OFFSET $2`,
      [query.limit, query.offset, ...params],
    ),
    db.query<{ n: string }>(
      `SELECT count(*) AS n FROM bulk_jobs ${where.replace('$3', '$1')}`,
      params,
    ),
  ]);
  return { jobs: page.rows.map(toJob), totalCount: Number(count.rows[0]?.n ?? 0) };
}

/**
 * Cancels a job that has not finished; returns the job as it is now (null: no such job). The
 * process running it sends no item it has not started (isBulkJobRunning, just before each send),
 * and the job keeps its holder so that the outcomes of the items being sent are still counted
 * (finishBulkJobItems). Calls a replay made whose first attempt never went (their item was being
 * sent when its process died) end as failed, so that no one sends them: a call being sent right
 * now still has its outcome recorded over this.
 */
export async function cancelBulkJob(db: Queryable, id: string): Promise<BulkJobRecord | null> {
  if (!isId(id)) return null;
  await db.query(
    `WITH job AS (
       UPDATE bulk_jobs SET state = 'cancelled', finished_at = now(), updated_at = now()
       WHERE id = $1 AND state IN ('queued', 'running') RETURNING id
     ), unsent AS (
       UPDATE webhook_calls c SET status = 'failed', failure_reason = 'the replay was cancelled',
         enqueued_at = now()
       FROM bulk_job_items i, job
       WHERE i.job_id = job.id AND i.state = 'sending' AND i.new_call AND c.id = i.call_id
         AND c.status = 'pending' AND c.attempts_count = 0
     )
     SELECT 1`,
    [id],
  );
  // The statement's own reads see the job as it was before it: read it again.
  return findBulkJob(db, id);
}

/**
 * Takes a job that needs running and no live process holds (queued, or running under a lease
 * that ran out), oldest first; `running` lists the jobs this process runs already. Returns it,
 * now held by `holder`, or null.
 */
export async function claimBulkJob(
  db: Queryable,
  holder: string,
  leaseMs: number,
  running: readonly string[],
): Promise<BulkJobRecord | null> {
  const { rows } = await db.query<BulkJobRow>(
    `UPDATE bulk_jobs SET held_by = $1, state = 'running',
       started_at = coalesce(started_at, now()), updated_at = now()
     WHERE id = (
       SELECT b.id FROM bulk_jobs b
       WHERE b.state IN ('queued', 'running') AND NOT (b.id = ANY($3::bigint[]))
         AND (b.held_by IS NULL OR b.held_by = $1 OR NOT EXISTS (
           SELECT 1 FROM delivery_leases l
           WHERE l.id = b.held_by AND l.heartbeat_at > now() - $2 * interval '1 millisecond'))
       ORDER BY b.id LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING ${JOB_COLUMNS}`,
    [holder, leaseMs, running],
  );
  return rows[0] ? toJob(rows[0]) : null;
}

/**
 * A job taken over: items its last holder was sending are finished if their call has an attempt
 * of the job's trigger made after the item was taken (the send happened and was recorded), else
 * queued again; the counters are counted again from the items.
 */
export async function resumeBulkJob(db: Queryable, id: string, trigger: string): Promise<void> {
  await db.query(
    `UPDATE bulk_job_items i SET state = coalesce((
         SELECT CASE WHEN a.outcome = 'success' THEN 'succeeded' ELSE 'failed' END
         FROM webhook_call_attempts a
         WHERE a.call_id = i.call_id AND a.number > coalesce(i.attempts_before, 0)
           AND a.trigger = $2
         ORDER BY a.number LIMIT 1), 'queued')
     WHERE i.job_id = $1 AND i.state = 'sending'`,
    [id, trigger],
  );
  await db.query(
    `UPDATE bulk_jobs j SET succeeded = c.succeeded, failed = c.failed, skipped = c.skipped,
       updated_at = now()
     FROM (SELECT count(*) FILTER (WHERE state = 'succeeded') AS succeeded,
             count(*) FILTER (WHERE state = 'failed') AS failed,
             count(*) FILTER (WHERE state = 'skipped') AS skipped
           FROM bulk_job_items WHERE job_id = $1) c
     WHERE j.id = $1`,
    [id],
  );
}

/** Whether an instant range's bounds, in SQL, over `column`. */
function rangeSql(
  column: string,
  range: InstantRange | undefined,
  param: (value: unknown) => string,
): string[] {
  const where: string[] = [];
  if (range?.gt) where.push(`${column} > ${param(range.gt)}::timestamptz`);
  if (range?.lt) where.push(`${column} < ${param(range.lt)}::timestamptz`);
  return where;
}

/**
 * A bulk resend's selection, in one statement: an item per call the filter selects, in call id
 * order, and `matched` set. Returns how many.
 */
export async function selectBulkResendCalls(
  db: Queryable,
  jobId: string,
  filter: BulkResendFilter,
): Promise<number> {
  const params: unknown[] = [jobId];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const where: string[] = [];
  if (filter.webhook_id) where.push(`c.webhook_id = ${param(filter.webhook_id)}`);
  if (filter.status) where.push(`c.status = ${param(filter.status)}`);
  if (filter.entity_type) where.push(`c.entity_type = ${param(filter.entity_type)}`);
  if (filter.event_type) where.push(`c.event_type = ${param(filter.event_type)}`);
  if (filter.entity_id) {
    where.push(
      `c.event_id IN (SELECT id FROM events WHERE entity_id = ${param(filter.entity_id)})`,
    );
  }
  where.push(...rangeSql('c.created_at', filter.created_at, param));
  const { rows } = await db.query<{ matched: string }>(
    `WITH selected AS (
       INSERT INTO bulk_job_items (job_id, position, call_id)
       SELECT $1, row_number() OVER (ORDER BY c.id), c.id FROM webhook_calls c
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       RETURNING 1
     )
     UPDATE bulk_jobs SET matched = (SELECT count(*) FROM selected),
       selected = (SELECT count(*) FROM selected), updated_at = now()
     WHERE id = $1 AND matched IS NULL
     RETURNING matched`,
    params,
  );
  return Number(rows[0]?.matched ?? 0);
}

/** An event a replay may send: what matching reads of it, and where it is in the order. */
export type ReplayCandidate = MatchableEvent & Pick<StoredEvent, 'id' | 'seq' | 'occurredAt'>;

/**
 * The next `limit` stored events of a replay's range after `after`, in occurrence order
 * (occurred_at, then acceptance), of the entity types its webhook listens to.
 */
export async function listReplayCandidates(
  db: Queryable,
  query: {
    range: InstantRange | undefined;
    after: { occurredAt: Date; seq: string } | null;
    entityTypes: readonly string[];
    limit: number;
  },
): Promise<ReplayCandidate[]> {
  const params: unknown[] = [query.entityTypes, query.limit];
  const param = (value: unknown): string => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = ['entity_type = ANY($1::text[])', ...rangeSql('occurred_at', query.range, param)];
  if (query.after) {
    where.push(
      `(occurred_at, seq) > (${param(query.after.occurredAt)}::timestamptz, ${param(query.after.seq)}::bigint)`,
    );
  }
  const { rows } = await db.query<
    Pick<
      EventRow,
      | 'id'
      | 'seq'
      | 'occurred_at'
      | 'environment'
      | 'is_environment_primary'
      | 'entity_type'
      | 'event_type'
      | 'entity_id'
      | 'item_type_id'
      | 'item_type_api_key'
    >
  >(
    `SELECT id, seq, occurred_at, environment, is_environment_primary, entity_type, event_type,
       entity_id, item_type_id, item_type_api_key
     FROM events WHERE ${where.join(' AND ')} ORDER BY occurred_at, seq LIMIT $2`,
    params,
  );
  return rows.map((row) => ({
    id: row.id,
    seq: row.seq,
    occurredAt: row.occurred_at,
    environment: row.environment,
    isEnvironmentPrimary: row.is_environment_primary,
    entityType: row.entity_type,
    eventType: row.event_type,
    entityId: row.entity_id,
    itemTypeId: row.item_type_id,
    itemTypeApiKey: row.item_type_api_key,
  }));
}

/**
 * One page of a replay's selection: items for `eventIds` (those matched, in order) after the
 * ones selected so far, and the selection's place moved to `after` (the page's last event), in
 * one statement; `complete` sets `matched`. Held by `holder`, or nothing happens (false).
 */
export async function addReplayItems(
  db: Queryable,
  jobId: string,
  holder: string,
  eventIds: readonly string[],
  after: { occurredAt: Date; seq: string } | null,
  complete: boolean,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH job AS (
       SELECT id, selected FROM bulk_jobs
       WHERE id = $1 AND held_by = $2 AND state = 'running' AND matched IS NULL FOR UPDATE
     ), added AS (
       INSERT INTO bulk_job_items (job_id, position, event_id)
       SELECT job.id, job.selected + u.n, u.id FROM job, unnest($3::text[]) WITH ORDINALITY AS u(id, n)
     )
     UPDATE bulk_jobs j SET selected = j.selected + cardinality($3::text[]),
       select_after_at = coalesce($4, j.select_after_at),
       select_after_seq = coalesce($5, j.select_after_seq),
       matched = CASE WHEN $6 THEN j.selected + cardinality($3::text[]) END, updated_at = now()
     FROM job WHERE j.id = job.id`,
    [jobId, holder, eventIds, after?.occurredAt ?? null, after?.seq ?? null, complete],
  );
  return rowCount > 0;
}

/**
 * Whether the job still runs under `holder`: asked just before each of its items is sent, so
 * that after a cancel (or a takeover) answers, the job sends nothing it had not started.
 */
export async function isBulkJobRunning(
  db: Queryable,
  jobId: string,
  holder: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM bulk_jobs WHERE id = $1 AND held_by = $2 AND state = 'running'`,
    [jobId, holder],
  );
  return rowCount > 0;
}

/** An item taken for sending. */
export interface BulkJobItem {
  position: string;
  callId: string | null;
  eventId: string | null;
  newCall: boolean;
}

/**
 * The job's next `limit` queued items, now `sending`, in order, each with its call's attempt
 * count; null when the job is no longer running under `holder` (cancelled, or taken over).
 */
export async function takeBulkJobItems(
  db: Queryable,
  jobId: string,
  holder: string,
  limit: number,
): Promise<BulkJobItem[] | null> {
  const { rows } = await db.query<{
    position: string | null;
    call_id: string | null;
    event_id: string | null;
    new_call: boolean | null;
  }>(
    `WITH job AS (
       SELECT id FROM bulk_jobs WHERE id = $1 AND held_by = $2 AND state = 'running'
     ), taken AS (
       UPDATE bulk_job_items i SET state = 'sending',
         attempts_before = coalesce((SELECT c.attempts_count FROM webhook_calls c
                                     WHERE c.id = i.call_id), 0)
       FROM job
       WHERE i.job_id = job.id AND i.position IN (
         SELECT position FROM bulk_job_items WHERE job_id = $1 AND state = 'queued'
         ORDER BY position LIMIT $3)
       RETURNING i.position, i.call_id, i.event_id, i.new_call
     )
     SELECT position, call_id, event_id, new_call FROM taken
     UNION ALL SELECT NULL, NULL, NULL, NULL FROM job`,
    [jobId, holder, limit],
  );
  // The last row stands for the job itself: none means it is no longer this holder's to run.
  if (rows.length === 0) return null;
  return rows
    .filter((row) => row.position !== null)
    .map((row) => ({
      position: row.position!,
      callId: row.call_id,
      eventId: row.event_id,
      newCall: row.new_call === true,
    }))
    .sort((a, b) => Number(a.position) - Number(b.position));
}

/**
 * The call a replay's item sends: the event's existing call for the webhook, or a new one the
 * job makes (pending, never swept: its first attempt is the job's), recorded on the item before
 * anything is sent so that a job taken over sends the same call. null: the event is gone, or
 * not matched yet (its calls are on their way: the match sends it to the webhook if it matches).
 */
export async function takeReplayCall(
  db: Db,
  jobId: string,
  position: string,
  eventId: string,
  webhookId: string,
): Promise<{ callId: string; newCall: boolean } | null> {
  return db.transaction(async (tx) => {
    // One call per (event, webhook) across the months of webhook_calls (migration 021): the
    // event's row is held, and an event not matched yet is left to the match, which makes its
    // call if the webhook matches it (createWebhookCalls makes calls only for unmatched events
    // under the same lock). The next statement sees every call the match made.
    const event = await tx.query<{ matched: boolean }>(
      'SELECT matched_at IS NOT NULL AS matched FROM events WHERE id = $1 FOR NO KEY UPDATE',
      [eventId],
    );
    if (!event.rows[0]?.matched) return null;
    const { rows } = await tx.query<{ call_id: string | null; new_call: boolean }>(
      `WITH existing AS (
         SELECT id FROM webhook_calls WHERE event_id = $3 AND webhook_id = $4
       ), made AS (
         INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, enqueued_at)
         SELECT e.id, $4, e.entity_type, e.event_type, 'infinity' FROM events e
         WHERE e.id = $3 AND NOT EXISTS (SELECT 1 FROM existing)
         ON CONFLICT DO NOTHING RETURNING id
       ), found AS (
         SELECT id, true AS new_call FROM made
         UNION ALL
         SELECT id, false FROM existing
       ), chosen AS (SELECT id, new_call FROM found ORDER BY new_call DESC LIMIT 1)
       UPDATE bulk_job_items i SET call_id = chosen.id, new_call = chosen.new_call,
         attempts_before = 0
       FROM chosen WHERE i.job_id = $1 AND i.position = $2
       RETURNING i.call_id, i.new_call`,
      [jobId, position, eventId, webhookId],
    );
    const row = rows[0];
    return row?.call_id ? { callId: row.call_id, newCall: row.new_call } : null;
  });
}

/**
 * Items finished (each `sending` until now) and the job's counters, in one statement, with the
 * rate it is going at. The counters move only while `holder` holds the job, cancelled or not:
 * what was being sent when a cancel came is counted.
 */
export async function finishBulkJobItems(
  db: Queryable,
  jobId: string,
  holder: string,
  items: readonly { position: string; outcome: BulkItemOutcome }[],
  observedRate: number | null,
): Promise<void> {
  if (items.length === 0) return;
  await db.query(
    `WITH done AS (
       UPDATE bulk_job_items i SET state = v.outcome
       FROM unnest($3::bigint[], $4::text[]) AS v(position, outcome)
       WHERE i.job_id = $1 AND i.position = v.position AND i.state = 'sending'
       RETURNING i.state
     )
     UPDATE bulk_jobs SET
       succeeded = succeeded + (SELECT count(*) FROM done WHERE state = 'succeeded'),
       failed = failed + (SELECT count(*) FROM done WHERE state = 'failed'),
       skipped = skipped + (SELECT count(*) FROM done WHERE state = 'skipped'),
       observed_rate = coalesce($5, observed_rate), updated_at = now()
     WHERE id = $1 AND held_by = $2`,
    [
      jobId,
      holder,
      items.map((item) => item.position),
      items.map((item) => item.outcome),
      observedRate,
    ],
  );
}

/** Ends a running job held by `holder`: every item done (completed), or it cannot go on. */
export async function endBulkJob(
  db: Queryable,
  jobId: string,
  holder: string,
  end: { state: 'completed' } | { state: 'failed'; reason: string },
): Promise<BulkJobRecord | null> {
  const { rows } = await db.query<BulkJobRow>(
    `UPDATE bulk_jobs SET state = $3, failure_reason = $4, finished_at = now(), updated_at = now(),
       held_by = NULL
     WHERE id = $1 AND held_by = $2 AND state = 'running' RETURNING ${JOB_COLUMNS}`,
    [jobId, holder, end.state, end.state === 'failed' ? end.reason : null],
  );
  return rows[0] ? toJob(rows[0]) : null;
}
