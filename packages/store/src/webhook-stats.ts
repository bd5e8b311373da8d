import type { Queryable } from './db.js';
import { disableWebhook } from './webhooks.js';

/** Milliseconds until a circuit's probe may go: null when it is closed, 0 once its cool-down is over. */
const CIRCUIT_WAIT_MS = `(CASE WHEN circuit_open_until IS NOT NULL
  THEN greatest(0, extract(epoch FROM circuit_open_until - now()) * 1000)::float8 END)`;

/**
 * The upper bounds (ms) of the attempt-duration ranges the rollups count: an attempt of 37 ms
 * counts in the range 25–50. The slot after the last bound counts the slower ones. Percentiles
 * are estimated within a range, so they are as precise as these bounds.
 */
export const LATENCY_BOUNDS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000];
const SLOTS = LATENCY_BOUNDS_MS.length + 1;

/** The windows GET /webhooks/:id/stats takes, with the buckets each is read from. */
export const STATS_WINDOWS = {
  '1h': { ms: 3_600_000, granularity: 'minute' },
  '24h': { ms: 86_400_000, granularity: 'hour' },
  '7d': { ms: 7 * 86_400_000, granularity: 'hour' },
  '30d': { ms: 30 * 86_400_000, granularity: 'hour' },
} as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;

/** How long minute buckets are kept (the 1-hour window, with margin); hours follow the log. */
const MINUTE_BUCKETS_KEPT_MS = 2 * 86_400_000;
/** Hour buckets are kept at least this long, whatever the call log's retention (the 30d window). */
const HOUR_BUCKETS_KEPT_MS = 31 * 86_400_000;

/**
 * CTEs that roll the attempts just recorded up into webhook_stats and webhook_health, for the
 * statement that records them (recordWebhookCallAttempts): `attempts` must be a CTE with one row
 * per attempt of (webhook_id, status, last_sent_at, duration_ms, trips, threshold, cooldown_ms),
 * `trips` telling whether the attempt's failure says the endpoint is away, `threshold` and
 * `cooldown_ms` the webhook's circuit breaker (a threshold of 0 never opens it).
 */
export function rollUpAttemptsSql(attempts: string): string {
  // The circuit's run of failures after these attempts: theirs, after the last one that reached
  // the endpoint (a success, or an answer that does not trip), or theirs added to the earlier run.
  const failures = `CASE WHEN EXCLUDED.last_reached_at IS NOT NULL
    THEN EXCLUDED.circuit_failures ELSE h.circuit_failures + EXCLUDED.circuit_failures END`;
  const bounds = `ARRAY[${LATENCY_BOUNDS_MS.join(', ')}]::float8[]`;
  const slots = Array.from(
    { length: SLOTS },
    (_, i) => `count(*) FILTER (WHERE width_bucket(a.duration_ms, ${bounds}) = ${i})::int`,
  ).join(', ');
  return `stats AS (
       INSERT INTO webhook_stats AS s (webhook_id, granularity, bucket_start, attempts_success,
         attempts_failure, calls_succeeded, calls_failed, latency_buckets, latency_ms_sum)
       SELECT a.webhook_id, g.granularity, date_trunc(g.granularity, a.last_sent_at),
         count(*) FILTER (WHERE a.status = 'success'),
         count(*) FILTER (WHERE a.status <> 'success'),
         count(*) FILTER (WHERE a.status = 'success'),
         count(*) FILTER (WHERE a.status = 'failed'),
         ARRAY[${slots}], coalesce(sum(a.duration_ms), 0)
       FROM ${attempts} a CROSS JOIN (VALUES ('minute'), ('hour')) AS g (granularity)
       GROUP BY 1, 2, 3
       -- Rows locked in key order: two processes writing the same webhooks never deadlock.
       ORDER BY 1, 2, 3
       ON CONFLICT (webhook_id, granularity, bucket_start) DO UPDATE SET
         attempts_success = s.attempts_success + EXCLUDED.attempts_success,
         attempts_failure = s.attempts_failure + EXCLUDED.attempts_failure,
         calls_succeeded = s.calls_succeeded + EXCLUDED.calls_succeeded,
         calls_failed = s.calls_failed + EXCLUDED.calls_failed,
         latency_buckets = ARRAY(SELECT x + y FROM unnest(s.latency_buckets,
           EXCLUDED.latency_buckets) AS t (x, y)),
         latency_ms_sum = s.latency_ms_sum + EXCLUDED.latency_ms_sum
     ), health AS (
       INSERT INTO webhook_health AS h (webhook_id, last_success_at, last_failure_at,
         failure_streak, failing_since, last_reached_at, circuit_failures, circuit_open_until,
         circuit_threshold, circuit_cooldown_ms)
       SELECT webhook_id, max(last_sent_at) FILTER (WHERE status = 'success'),
         max(last_sent_at) FILTER (WHERE status <> 'success'),
         -- The failures after the last success among these attempts.
         count(*) FILTER (WHERE status <> 'success' AND last_sent_at > coalesce(last_success,
           '-infinity')),
         -- The first of those failures: when the run of failures began.
         min(last_sent_at) FILTER (WHERE status <> 'success' AND last_sent_at > coalesce(
           last_success, '-infinity')),
         max(last_sent_at) FILTER (WHERE NOT trips),
         -- The tripping failures after the last attempt that reached the endpoint.
         count(*) FILTER (WHERE trips AND last_sent_at > coalesce(last_kept, '-infinity')),
         -- A first row opens the circuit only if its own run reaches the threshold.
         CASE WHEN max(threshold) > 0 AND count(*) FILTER (WHERE trips AND last_sent_at >
             coalesce(last_kept, '-infinity')) >= max(threshold)
           THEN now() + max(cooldown_ms) * interval '1 millisecond' END,
         max(threshold), max(cooldown_ms)
       FROM (SELECT a.*,
               max(a.last_sent_at) FILTER (WHERE a.status = 'success')
                 OVER (PARTITION BY a.webhook_id) AS last_success,
               max(a.last_sent_at) FILTER (WHERE NOT a.trips)
                 OVER (PARTITION BY a.webhook_id) AS last_kept
             FROM ${attempts} a) a
       GROUP BY webhook_id
       ORDER BY webhook_id
       ON CONFLICT (webhook_id) DO UPDATE SET
         last_success_at = greatest(h.last_success_at, EXCLUDED.last_success_at),
         last_failure_at = greatest(h.last_failure_at, EXCLUDED.last_failure_at),
         failure_streak = CASE WHEN EXCLUDED.last_success_at IS NOT NULL
           THEN EXCLUDED.failure_streak ELSE h.failure_streak + EXCLUDED.failure_streak END,
         failing_since = CASE WHEN EXCLUDED.last_success_at IS NOT NULL
           THEN EXCLUDED.failing_since ELSE coalesce(h.failing_since, EXCLUDED.failing_since) END,
         last_reached_at = greatest(h.last_reached_at, EXCLUDED.last_reached_at),
         circuit_failures = ${failures},
         -- Open (again, after a probe that failed) once the run reaches the threshold; closed
         -- by an attempt that did not trip. The probe's claim ends with its outcome.
         circuit_open_until = CASE WHEN EXCLUDED.circuit_threshold > 0
             AND ${failures} >= EXCLUDED.circuit_threshold
           THEN now() + EXCLUDED.circuit_cooldown_ms * interval '1 millisecond' END,
         circuit_threshold = EXCLUDED.circuit_threshold,
         circuit_cooldown_ms = EXCLUDED.circuit_cooldown_ms,
         circuit_probe_at = NULL,
         updated_at = now()
       RETURNING h.webhook_id, h.circuit_open_until
     )`;
}

export interface StatsBucket {
  start: Date;
  attemptsSuccess: number;
  attemptsFailure: number;
  callsSucceeded: number;
  callsFailed: number;
  /** Attempts per duration range (LATENCY_BOUNDS_MS). */
  latencyBuckets: number[];
  latencyMsSum: number;
}

export interface WebhookStats {
  webhookId: string;
  window: StatsWindow;
  granularity: 'minute' | 'hour';
  /** The start of the first bucket read (the window, widened to a whole bucket). */
  from: Date;
  to: Date;
  buckets: StatsBucket[];
  totals: Omit<StatsBucket, 'start'>;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  failureStreak: number;
  backlog: { pending: number; rescheduled: number; oldestCreatedAt: Date | null };
  /** The circuit breaker: closed, open until `openUntil`, or half-open (its probe may go). */
  circuit: { state: 'closed' | 'open' | 'half_open'; openUntil: Date | null; failures: number };
}

/**
 * The stats of these webhooks (or of every webhook that exists) over a window: three indexed
 * reads (buckets, health, backlog), none of the call log's finished rows. Webhooks without any
 * attempt have zeros.
 */
export async function readWebhookStats(
  db: Queryable,
  window: StatsWindow,
  webhookIds: readonly string[] | null,
): Promise<WebhookStats[]> {
  const { ms, granularity } = STATS_WINDOWS[window];
  const ids = webhookIds === null ? null : webhookIds.filter((id) => /^[1-9]\d{0,17}$/.test(id));
  const { rows: hooks } = await db.query<{ id: string; from: Date; to: Date }>(
    `SELECT w.id, date_trunc($2, now() - $3::float8 * interval '1 millisecond') AS from,
       now() AS to
     FROM webhooks w WHERE $1::bigint[] IS NULL OR w.id = ANY($1::bigint[]) ORDER BY w.id`,
    [ids, granularity, ms],
  );
  if (hooks.length === 0) return [];
  const from = hooks[0]!.from;
  const hookIds = hooks.map((hook) => hook.id);
  const [buckets, health, backlog] = await Promise.all([
    db.query<{
      webhook_id: string;
      bucket_start: Date;
      attempts_success: number;
      attempts_failure: number;
      calls_succeeded: number;
      calls_failed: number;
      latency_buckets: number[];
      latency_ms_sum: number;
    }>(
      `SELECT webhook_id, bucket_start, attempts_success, attempts_failure, calls_succeeded,
         calls_failed, latency_buckets, latency_ms_sum
       FROM webhook_stats
       WHERE webhook_id = ANY($1::bigint[]) AND granularity = $2 AND bucket_start >= $3
       ORDER BY webhook_id, bucket_start`,
      [hookIds, granularity, from],
    ),
    db.query<{
      webhook_id: string;
      last_success_at: Date | null;
      last_failure_at: Date | null;
      failure_streak: number;
      circuit_failures: number;
      circuit_open_until: Date | null;
      circuit_open: boolean;
    }>(
      `SELECT webhook_id, last_success_at, last_failure_at, failure_streak, circuit_failures,
         circuit_open_until, circuit_open_until > now() AS circuit_open
       FROM webhook_health WHERE webhook_id = ANY($1::bigint[])`,
      [hookIds],
    ),
    db.query<{ webhook_id: string; pending: string; rescheduled: string; oldest: Date | null }>(
      // webhook_calls_unfinished_by_webhook: only the calls not finished are read.
      `SELECT webhook_id, count(*) FILTER (WHERE status = 'pending') AS pending,
         count(*) FILTER (WHERE status = 'rescheduled') AS rescheduled, min(created_at) AS oldest
       FROM webhook_calls
       WHERE webhook_id = ANY($1::bigint[]) AND status IN ('pending', 'rescheduled')
       GROUP BY webhook_id`,
      [hookIds],
    ),
  ]);
  const healthOf = new Map(health.rows.map((row) => [String(row.webhook_id), row]));
  const backlogOf = new Map(backlog.rows.map((row) => [String(row.webhook_id), row]));
  const bucketsOf = new Map<string, StatsBucket[]>();
  for (const row of buckets.rows) {
    const list = bucketsOf.get(String(row.webhook_id)) ?? [];
    list.push({
      start: row.bucket_start,
      attemptsSuccess: row.attempts_success,
      attemptsFailure: row.attempts_failure,
      callsSucceeded: row.calls_succeeded,
      callsFailed: row.calls_failed,
      latencyBuckets: row.latency_buckets,
      latencyMsSum: row.latency_ms_sum,
    });
    bucketsOf.set(String(row.webhook_id), list);
  }
  return hooks.map((hook) => {
    const id = String(hook.id);
    const list = bucketsOf.get(id) ?? [];
    const h = healthOf.get(id);
    const b = backlogOf.get(id);
    return {
      webhookId: id,
      window,
      granularity,
      from: hook.from,
      to: hook.to,
      buckets: list,
      totals: sumBuckets(list),
      lastSuccessAt: h?.last_success_at ?? null,
      lastFailureAt: h?.last_failure_at ?? null,
      failureStreak: h?.failure_streak ?? 0,
      circuit: {
        state: !h?.circuit_open_until ? 'closed' : h.circuit_open ? 'open' : 'half_open',
        openUntil: h?.circuit_open_until ?? null,
        failures: h?.circuit_failures ?? 0,
      },
      backlog: {
        pending: Number(b?.pending ?? 0),
        rescheduled: Number(b?.rescheduled ?? 0),
        oldestCreatedAt: b?.oldest ?? null,
      },
    };
  });
}

function sumBuckets(buckets: readonly StatsBucket[]): Omit<StatsBucket, 'start'> {
  const totals = {
    attemptsSuccess: 0,
    attemptsFailure: 0,
    callsSucceeded: 0,
    callsFailed: 0,
    latencyBuckets: new Array<number>(SLOTS).fill(0),
    latencyMsSum: 0,
  };
  for (const bucket of buckets) {
    totals.attemptsSuccess += bucket.attemptsSuccess;
    totals.attemptsFailure += bucket.attemptsFailure;
    totals.callsSucceeded += bucket.callsSucceeded;
    totals.callsFailed += bucket.callsFailed;
    totals.latencyMsSum += bucket.latencyMsSum;
    bucket.latencyBuckets.forEach((count, i) => (totals.latencyBuckets[i]! += count));
  }
  return totals;
}

/**
 * The duration under which a fraction `q` of the counted attempts fell, estimated by linear
 * interpolation within its range; null when none was counted. Above the last bound, the bound.
 */
export function latencyPercentile(latencyBuckets: readonly number[], q: number): number | null {
  const total = latencyBuckets.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < latencyBuckets.length; i++) {
    const count = latencyBuckets[i]!;
    if (count > 0 && seen + count >= rank) {
      const low = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const high = LATENCY_BOUNDS_MS[i];
      if (high === undefined) return low;
      return low + ((high - low) * Math.max(0, rank - seen)) / count;
    }
    seen += count;
  }
  return LATENCY_BOUNDS_MS.at(-1)!;
}

/**
 * Deletes the buckets past their keeping: minutes after 2 days, hours after the call log's
 * retention (at least 31 days; never when the log is kept forever, `logRetentionMs` null).
 */
export async function deleteOldWebhookStats(
  db: Queryable,
  logRetentionMs: number | null,
): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM webhook_stats
     WHERE (granularity = 'minute' AND bucket_start < now() - $1::float8 * interval '1 millisecond')
        OR (granularity = 'hour' AND bucket_start < now() - $2::float8 * interval '1 millisecond')`,
    [
      MINUTE_BUCKETS_KEPT_MS,
      logRetentionMs === null ? null : Math.max(HOUR_BUCKETS_KEPT_MS, logRetentionMs),
    ],
  );
  return rowCount;
}

/**
 * The circuits not closed: each webhook's wait until its cool-down ends (0 when it has: a probe
 * may go), measured on the database's clock.
 */
export async function listOpenCircuits(
  db: Queryable,
): Promise<{ webhookId: string; waitMs: number }[]> {
  const { rows } = await db.query<{ webhook_id: string; wait_ms: number }>({
    name: 'herald.circuits.open',
    text: `SELECT webhook_id, ${CIRCUIT_WAIT_MS} AS wait_ms
       FROM webhook_health WHERE circuit_open_until IS NOT NULL`,
  });
  return rows.map((row) => ({ webhookId: String(row.webhook_id), waitMs: row.wait_ms }));
}

/** One webhook's circuit, read now (an attempt about to send a retry asks so). */
export async function readCircuit(db: Queryable, webhookId: string): Promise<CircuitWait> {
  const { rows } = await db.query<{ wait_ms: number | null }>(
    {
      name: 'herald.circuits.one',
      text: `SELECT ${CIRCUIT_WAIT_MS} AS wait_ms FROM webhook_health WHERE webhook_id = $1`,
    },
    [webhookId],
  );
  return { webhookId, waitMs: rows[0]?.wait_ms ?? null };
}

/**
 * Takes the one probe of a webhook whose circuit's cool-down has ended: true for the caller that
 * may send it, false while another's probe runs (a claim older than `probeTimeoutMs` is dead).
 * The probe's outcome, recorded with the others, closes the circuit or opens it again.
 */
export async function claimCircuitProbe(
  db: Queryable,
  webhookId: string,
  probeTimeoutMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_health SET circuit_probe_at = now()
     WHERE webhook_id = $1 AND circuit_open_until <= now()
       AND (circuit_probe_at IS NULL
            OR circuit_probe_at < now() - $2::float8 * interval '1 millisecond')`,
    [webhookId, probeTimeoutMs],
  );
  return rowCount === 1;
}

/** What the delivery alerts watch in the webhooks' health (herald_webhooks_failing and beside). */
export interface DeliveryHealth {
  /** Enabled webhooks whose every attempt since their last success failed. */
  failing: number;
  /** How long the longest of those runs has lasted (0 when none). */
  failingLongestSeconds: number;
  /**
   * How long the endpoint of the longest-open circuit of an enabled webhook has gone unreached:
   * since an attempt last reached it (or, never reached, since its failures began); 0 when none.
   */
  circuitOpenLongestSeconds: number;
}

/**
 * Reads the delivery health of all enabled webhooks at once (no ids: the alerts ask whether any
 * endpoint is failing, the log and the stats say which), from the rows the partial indexes on
 * failing_since and circuit_open_until keep.
 */
export async function readDeliveryHealth(db: Queryable): Promise<DeliveryHealth> {
  const { rows } = await db.query<{ failing: number; failing_s: number; circuit_s: number }>({
    name: 'herald.delivery.health',
    text: `SELECT count(*) FILTER (WHERE h.failing_since IS NOT NULL)::int AS failing,
         coalesce(extract(epoch FROM now() - min(h.failing_since)), 0)::float8 AS failing_s,
         coalesce(extract(epoch FROM now() - min(coalesce(h.last_reached_at, h.failing_since))
           FILTER (WHERE h.circuit_open_until IS NOT NULL)), 0)::float8 AS circuit_s
       FROM webhook_health h JOIN webhooks w ON w.id = h.webhook_id
       WHERE w.enabled AND (h.failing_since IS NOT NULL OR h.circuit_open_until IS NOT NULL)`,
  });
  const row = rows[0];
  return {
    failing: row?.failing ?? 0,
    failingLongestSeconds: Math.max(0, row?.failing_s ?? 0),
    circuitOpenLongestSeconds: Math.max(0, row?.circuit_s ?? 0),
  };
}

/**
 * Disables the enabled webhooks whose attempts have all failed for longer than `afterMs`: the
 * run of failures began that long ago, and so did the webhook's last edit (re-enabling it, or
 * fixing its URL, starts the clock again). Their waiting calls end as failed, as when an
 * endpoint answers 410. Returns the webhooks disabled, with their reason.
 */
export async function disableFailingWebhooks(
  db: Queryable,
  /** The deployment's default; null: only webhooks whose policy sets a time are disabled. */
  defaultAfterMs: number | null,
): Promise<{ id: string; reason: string }[]> {
  const { rows: due } = await db.query<{ id: string; since: Date; after_ms: number }>(
    `SELECT id, since, after_ms FROM (
       SELECT w.id, h.failing_since AS since, w.updated_at, coalesce(
           (w.delivery_policy->>'disable_after_failing_ms')::float8, $1::float8) AS after_ms
       FROM webhook_health h JOIN webhooks w ON w.id = h.webhook_id
       WHERE h.failing_since IS NOT NULL AND w.enabled) f
     WHERE after_ms > 0 AND since < now() - after_ms * interval '1 millisecond'
       AND updated_at < now() - after_ms * interval '1 millisecond'`,
    [defaultAfterMs],
  );
  const disabled: { id: string; reason: string }[] = [];
  for (const { id, since, after_ms: afterMs } of due) {
    const days = Math.round((afterMs / 86_400_000) * 10) / 10;
    const reason =
      `every delivery attempt failed since ${since.toISOString()} ` +
      `(more than ${days} days without a success)`;
    // Only if still enabled and not edited meanwhile (a re-enable just now keeps it).
    const webhook = await disableWebhook(
      db,
      String(id),
      reason,
      `the webhook was disabled: ${reason}`,
      afterMs,
    );
    if (webhook) disabled.push({ id: String(id), reason });
  }
  return disabled;
}

/** An attempt as the rollups count it. */
export interface AttemptRollup {
  webhookId: string;
  status: 'success' | 'failed' | 'rescheduled';
  lastSentAt: Date;
  durationMs: number;
  tripsCircuit: boolean;
}

/** The rollups of attempts recorded without them, with each webhook's circuit settings. */
const RECORD_ROLLUPS = `WITH attempted AS (
       SELECT r.webhook_id, r.status, r.last_sent_at, r.duration_ms, r.trips,
         coalesce((w.delivery_policy->>'circuit_failures')::int, $6::int) AS threshold,
         coalesce((w.delivery_policy->>'circuit_cooldown_ms')::float8, $7::float8) AS cooldown_ms
       FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::float8[], $5::boolean[])
         AS r (webhook_id, status, last_sent_at, duration_ms, trips)
       LEFT JOIN webhooks w ON w.id = r.webhook_id
     ), ${rollUpAttemptsSql('attempted')}
     SELECT webhook_id, ${CIRCUIT_WAIT_MS} AS wait_ms FROM health`;

/** A webhook's circuit as the delivery processes keep it: null closed, else ms until its probe. */
export interface CircuitWait {
  webhookId: string;
  /** null: closed; 0: its cool-down is over (its probe may go). */
  waitMs: number | null;
}

/**
 * Adds attempts already recorded (recordWebhookCallAttempts with rollUp false) to the stats,
 * the health and the circuits, in one statement: what a delivery process gathered over a moment,
 * so that each webhook's rows are written once per moment, not once per batch of outcomes.
 * Returns the circuit of each webhook it wrote, as that statement left it.
 */
export async function recordAttemptRollups(
  db: Queryable,
  attempts: readonly AttemptRollup[],
  circuit: { failures: number; cooldownMs: number },
): Promise<CircuitWait[]> {
  if (attempts.length === 0) return [];
  const { rows } = await db.query<{ webhook_id: string; wait_ms: number | null }>(
    { name: 'herald.webhook_stats.roll_up', text: RECORD_ROLLUPS },
    [
      attempts.map((a) => a.webhookId),
      attempts.map((a) => a.status),
      attempts.map((a) => a.lastSentAt),
      attempts.map((a) => a.durationMs),
      attempts.map((a) => a.tripsCircuit),
      circuit.failures,
      circuit.cooldownMs,
    ],
  );
  return rows.map((row) => ({ webhookId: String(row.webhook_id), waitMs: row.wait_ms }));
}
