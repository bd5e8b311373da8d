import type { Db, Queryable } from '../db.js';

// The delivery log's months (migration 021; docs/architecture.md, The delivery log by month): a
// call's month from its id, and the upkeep that makes and drops the monthly partitions.

/** A month's partitions' suffix, `2026_11` (`month` from 0): digits only. */
const monthSuffix = (year: number, month: number): string =>
  `${year}_${String(month + 1).padStart(2, '0')}`;

/**
 * The month of the log's partition that holds a call (its id's top bits: migration 021), as the
 * partitions are named: `2026_11`, or `legacy` for the ids made before the log was partitioned.
 */
export function callPartition(id: string): string {
  const months = Number(BigInt(id) >> 36n);
  return months === 0 ? 'legacy' : monthSuffix(Math.floor(months / 12), months % 12);
}

/**
 * How close to a month's turn (UTC) new calls go through the partitioned parent rather than to
 * this month's partition directly: the process's clock, Postgres's, and the transaction's start
 * (`now()`, which the call's id and created_at take) may differ by this much.
 */
const MONTH_TURN_MS = 60_000;

/** The month a call made now goes to (its partition's suffix), or null near a month's turn. */
export function partitionOfNow(now: number): string | null {
  const at = new Date(now);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const start = Date.UTC(year, month, 1);
  const next = Date.UTC(year, month + 1, 1);
  if (now - start < MONTH_TURN_MS || next - now < MONTH_TURN_MS) return null;
  return monthSuffix(year, month);
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
  // The partitions' names are made of its digits, never of input.
  const suffix = monthSuffix(year, month);
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
