import type { Queryable } from './db.js';

// A delivery process holds the calls whose first attempts it queued in its memory
// (webhook_calls.held_by = its lease id) and proves it is alive by renewing its lease
// (delivery_leases.heartbeat_at). Times are the database's, so the processes' clocks never matter.

/** Creates or renews the lease `id`: the process is alive now. */
export async function renewLease(
  db: Queryable,
  lease: { id: string; host: string; pid: number },
): Promise<void> {
  await db.query(
    {
      name: 'herald.leases.renew',
      text: `INSERT INTO delivery_leases (id, host, pid) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`,
    },
    [lease.id, lease.host, lease.pid],
  );
}

/** Removes a lease at a clean shutdown, once the calls it held were released. */
export async function endLease(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM delivery_leases WHERE id = $1', [id]);
}

/**
 * Lets go of calls `holder` held without finishing them. `due`: no job exists for them (their
 * attempt was given up here), so the sweeper re-enqueues them at its next pass; otherwise a job
 * was just put in Redis for them (an attempt deferred behind its webhook's in-flight limit) and
 * the sweeper's clock restarts. A lane call its release claimed (herald_release_flow_lanes) loses
 * that claim with the hold: nothing sends it here, and its job claims it again. Returns how many
 * calls were released.
 */
export async function releaseWebhookCalls(
  db: Queryable,
  holder: string,
  ids: readonly string[],
  due: boolean,
): Promise<number> {
  if (ids.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE webhook_calls
     SET held_by = NULL, enqueued_at = CASE WHEN $3 THEN '-infinity'::timestamptz ELSE now() END,
       claimed_at = NULL
     WHERE id = ANY($1::bigint[]) AND held_by = $2`,
    [ids, holder, due],
  );
  return rowCount;
}

/**
 * The calls Postgres says `holder` holds. The holder compares them with what it has in memory:
 * a call held here but not there is one whose release Postgres forgot (a commit lost in a crash
 * under synchronous_commit=off), or one created by a statement whose reply never came.
 */
export async function listHeldWebhookCalls(db: Queryable, holder: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    { name: 'herald.leases.held', text: 'SELECT id FROM webhook_calls WHERE held_by = $1' },
    [holder],
  );
  return rows.map((row) => row.id);
}

/**
 * Pending calls held by a process whose lease ran out (it died, or lost the database for longer
 * than a lease): up to `limit`, oldest first. The sweeper enqueues them, then
 * markWebhookCallsEnqueued hands them over.
 */
export async function listOrphanedWebhookCalls(
  db: Queryable,
  options: {
    leaseMs: number;
    limit: number;
    /** The caller's own lease: its calls are never orphans to it, however late its heartbeat. */
    self?: string;
  },
): Promise<{ id: string; webhookId: string }[]> {
  const { rows } = await db.query<{ id: string; webhook_id: string }>(
    // webhook_calls_held holds only calls in some process's memory: a small index to scan.
    `SELECT c.id, c.webhook_id FROM webhook_calls c
     WHERE c.held_by IS NOT NULL AND c.status = 'pending' AND c.held_by IS DISTINCT FROM $3
       AND NOT EXISTS (
         SELECT 1 FROM delivery_leases l
         WHERE l.id = c.held_by AND l.heartbeat_at > now() - $1 * interval '1 millisecond')
     ORDER BY c.id LIMIT $2`,
    [options.leaseMs, options.limit, options.self ?? null],
  );
  return rows.map((row) => ({ id: row.id, webhookId: row.webhook_id }));
}

/** Deletes the leases that ran out and hold no call any more; returns how many. */
export async function deleteExpiredLeases(db: Queryable, leaseMs: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM delivery_leases l
     WHERE l.heartbeat_at < now() - $1 * interval '1 millisecond'
       AND NOT EXISTS (SELECT 1 FROM webhook_calls c WHERE c.held_by = l.id)`,
    [leaseMs],
  );
  return rowCount;
}

/** The deployment's identity (migration 007 creates it, once per database). */
export async function readDeploymentId(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM deployment');
  if (!rows[0]) throw new Error('the deployment table is empty: run the migrations');
  return rows[0].id;
}
