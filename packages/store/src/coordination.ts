import type { NamedStatement, Queryable } from './db.js';

// The statements of the Postgres coordination (migration 027): what Herald keeps in Redis when it
// has one, kept in UNLOGGED tables, LISTEN/NOTIFY and advisory locks when it has none.

const ACQUIRE_IN_FLIGHT: NamedStatement = {
  name: 'coordination.acquire-in-flight',
  text: 'SELECT herald_acquire_in_flight($1::text[], $2::text[], $3, $4) AS taken',
};

/** For each (webhook, token), in order, whether it took one of its webhook's `limit` slots. */
export async function acquireInFlightSlots(
  db: Queryable,
  requests: readonly { webhookId: string; token: string }[],
  limit: number,
  ttlMs: number,
): Promise<boolean[]> {
  const { rows } = await db.query<{ taken: boolean[] }>(ACQUIRE_IN_FLIGHT, [
    requests.map((r) => r.webhookId),
    requests.map((r) => r.token),
    limit,
    ttlMs,
  ]);
  return rows[0]?.taken ?? [];
}

const RELEASE_IN_FLIGHT: NamedStatement = {
  name: 'coordination.release-in-flight',
  text: `DELETE FROM in_flight_slots
    WHERE (webhook_id, token) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
};

export async function releaseInFlightSlots(
  db: Queryable,
  slots: readonly { webhookId: string; token: string }[],
): Promise<void> {
  await db.query(RELEASE_IN_FLIGHT, [slots.map((s) => s.webhookId), slots.map((s) => s.token)]);
}

const ADMIT_RATE_TURN: NamedStatement = {
  name: 'coordination.admit-rate-turn',
  text: 'SELECT wait_us, slot_us FROM herald_admit_rate_turn($1, $2, $3, $4)',
};

/**
 * A request of this webhook asks to go (spacing `intervalUs`; `hasTurn`: it waited for its turn
 * in the queue): how long it waits (µs), and the slot it reserved (µs, the server's clock) if it
 * may go once that wait is over; none when it comes back with its turn (functions/
 * herald_admit_rate_turn.sql).
 */
export async function admitRateTurn(
  db: Queryable,
  webhookId: string,
  intervalUs: number,
  hasTurn: boolean,
  withinUs: number,
): Promise<{ waitUs: number; slotUs: number | null }> {
  const { rows } = await db.query<{ wait_us: string; slot_us: string | null }>(ADMIT_RATE_TURN, [
    webhookId,
    intervalUs,
    hasTurn,
    withinUs,
  ]);
  const row = rows[0]!;
  return { waitUs: Number(row.wait_us), slotUs: row.slot_us === null ? null : Number(row.slot_us) };
}

const RATE_TURN_STARTED: NamedStatement = {
  name: 'coordination.rate-turn-started',
  text: 'UPDATE webhook_rate_turns SET next_at = greatest(next_at, $2::bigint) WHERE webhook_id = $1',
};

/** A request reserved earlier started late: the next may go no sooner than `notBeforeUs`. */
export async function startRateTurn(
  db: Queryable,
  webhookId: string,
  notBeforeUs: number,
): Promise<void> {
  await db.query(RATE_TURN_STARTED, [webhookId, notBeforeUs]);
}

// The HTTP rate limit's fixed window, as the Redis script keeps it (runtime's coordination):
// a window opened by its first request; while it has room a grant is a lease of up to $4
// requests ($5 of the room left, at least one); once full a request is counted alone. An ended
// window starts again.
const LEASE_REQUESTS: NamedStatement = {
  name: 'coordination.lease-requests',
  text: `WITH clock AS (SELECT clock_timestamp() AS now)
    INSERT INTO rate_limit_windows AS w (key, counted, ends_at, granted)
    SELECT $1, g, clock.now + $2::integer * interval '1 millisecond', g
    FROM clock, (SELECT greatest(1, least($4::integer, floor($3::bigint * $5::float8)))::integer AS g) grant_first
    ON CONFLICT (key) DO UPDATE SET
      counted = CASE WHEN w.ends_at <= EXCLUDED.ends_at - $2::integer * interval '1 millisecond'
        THEN EXCLUDED.counted
        ELSE w.counted + CASE WHEN $3::bigint - w.counted > 0
          THEN greatest(1, least($4::integer, floor(($3::bigint - w.counted) * $5::float8)))::integer ELSE 1 END END,
      ends_at = CASE WHEN w.ends_at <= EXCLUDED.ends_at - $2::integer * interval '1 millisecond'
        THEN EXCLUDED.ends_at ELSE w.ends_at END,
      granted = CASE WHEN w.ends_at <= EXCLUDED.ends_at - $2::integer * interval '1 millisecond'
        THEN EXCLUDED.granted
        ELSE CASE WHEN $3::bigint - w.counted > 0
          THEN greatest(1, least($4::integer, floor(($3::bigint - w.counted) * $5::float8)))::integer ELSE 1 END END
    RETURNING counted, granted,
      greatest(1, ceil(extract(epoch FROM ends_at - clock_timestamp()) * 1000))::integer AS ttl_ms`,
};

/** The window's count after this grant, the time it has left (ms) and the grant. */
export async function leaseRequests(
  db: Queryable,
  key: string,
  windowMs: number,
  limit: number,
  leaseMax: number,
  leaseShare: number,
): Promise<{ counted: number; ttlMs: number; granted: number }> {
  const { rows } = await db.query<{ counted: string; granted: number; ttl_ms: number }>(
    LEASE_REQUESTS,
    [key, windowMs, limit, leaseMax, leaseShare],
  );
  const row = rows[0]!;
  return { counted: Number(row.counted), ttlMs: row.ttl_ms, granted: row.granted };
}

/** Drops the HTTP rate limit's windows that ended a while ago (keys come and go). */
export async function pruneRateLimitWindows(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM rate_limit_windows WHERE ends_at < clock_timestamp() - interval '1 minute'`,
  );
  return rowCount;
}
