import type { Queryable } from './db.js';

// Operational notices (migration 019; docs/api.md, Notices): events Herald stores about itself,
// entity type `notice`, matched and delivered like a producer's. Each statement below finds what
// changed since it was last told, marks it told and stores its notice in one go, so a change is
// told once whichever delivery processes look at the same time (the loser's row re-check fails),
// and a notice stored is delivered even if its process dies then (the sweeper matches events).

/** The notice kinds: the event types of entity type `notice`. */
export type NoticeKind =
  'failing' | 'recovered' | 'circuit_opened' | 'disabled' | 'bulk_job_finished';

/**
 * Stores `kinds` (a query with `kind`, `webhook_id` and `attributes` jsonb columns) as notice
 * events of the primary environment. `entity_id` is the webhook the notice is about, so that it
 * is never delivered to that webhook (webhook-index.ts) and GET /events finds a webhook's notices.
 */
const storeNotices = (kinds: string): string => `INSERT INTO events (id, environment,
       is_environment_primary, entity_type, event_type, entity_id, occurred_at, entity)
     SELECT n.id, env.id, true, 'notice', n.kind, n.webhook_id, now(),
       jsonb_build_object('type', 'notice', 'id', n.id,
         'attributes', jsonb_build_object('kind', n.kind) || n.attributes)
     FROM (SELECT 'herald-notice-' || gen_random_uuid() AS id, k.* FROM ${kinds} k) n
       CROSS JOIN (SELECT id FROM environments WHERE is_primary) env
     RETURNING id`;

/**
 * Webhooks whose health changed since last told: failing (a run of `failingAfter` failed
 * attempts; 0: never told), recovered (a success after being told failing), circuit opened,
 * disabled with a reason (a 410, or failing too long). Returns the notices' event ids.
 */
async function emitHealthNotices(db: Queryable, failingAfter: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH seen AS (
       SELECT h.webhook_id, h.noticed_failing AS was_failing, h.noticed_circuit AS was_open,
         h.noticed_disabled_reason AS was_disabled, now_.failing, now_.open, now_.disabled
       FROM webhook_health h JOIN webhooks w ON w.id = h.webhook_id
         CROSS JOIN LATERAL (SELECT
           CASE WHEN $1 > 0 AND h.failure_streak >= $1 THEN true
                WHEN h.failure_streak = 0 THEN false ELSE h.noticed_failing END AS failing,
           h.circuit_open_until IS NOT NULL AS open,
           CASE WHEN w.enabled THEN NULL ELSE w.disabled_reason END AS disabled) now_
       WHERE now_.failing <> h.noticed_failing OR now_.open <> h.noticed_circuit
         OR (now_.disabled IS NOT NULL AND now_.disabled IS DISTINCT FROM h.noticed_disabled_reason)
       -- Only the rows that changed, locked in key order (the stats rollups write them too).
       ORDER BY h.webhook_id
       FOR UPDATE OF h
     ), changed AS (
       UPDATE webhook_health h SET noticed_failing = s.failing, noticed_circuit = s.open,
         noticed_disabled_reason = coalesce(s.disabled, h.noticed_disabled_reason)
       FROM seen s
       WHERE h.webhook_id = s.webhook_id
         AND (s.failing <> s.was_failing OR s.open <> s.was_open
              OR (s.disabled IS NOT NULL AND s.disabled IS DISTINCT FROM s.was_disabled))
         -- Re-checked on the row as another process left it: one of them tells.
         AND h.noticed_failing = s.was_failing AND h.noticed_circuit = s.was_open
         AND h.noticed_disabled_reason IS NOT DISTINCT FROM s.was_disabled
       RETURNING h.webhook_id, s.was_failing, s.failing, s.was_open, s.open, s.was_disabled,
         s.disabled, h.failure_streak, h.failing_since, h.last_failure_at, h.last_success_at,
         h.circuit_open_until
     ), kinds AS (
       SELECT k.kind, c.webhook_id::text AS webhook_id,
         jsonb_build_object('webhook_id', c.webhook_id::text, 'webhook_name', w.name,
           'failure_streak', c.failure_streak, 'failing_since', c.failing_since,
           'last_failure_at', c.last_failure_at, 'last_success_at', c.last_success_at,
           'circuit_open_until', c.circuit_open_until, 'disabled_reason', c.disabled,
           'message', CASE k.kind
             WHEN 'failing' THEN format('Webhook "%s" is failing: %s attempts in a row failed',
               w.name, c.failure_streak)
             WHEN 'recovered' THEN format('Webhook "%s" recovered: an attempt succeeded', w.name)
             WHEN 'circuit_opened' THEN format(
               'Webhook "%s": its circuit breaker opened; its calls wait until a probe succeeds',
               w.name)
             ELSE format('Webhook "%s" was disabled: %s', w.name, c.disabled) END) AS attributes
       FROM changed c JOIN webhooks w ON w.id = c.webhook_id
         CROSS JOIN LATERAL (VALUES
           ('failing', c.failing AND NOT c.was_failing),
           ('recovered', c.was_failing AND NOT c.failing),
           ('circuit_opened', c.open AND NOT c.was_open),
           ('disabled', c.disabled IS NOT NULL AND c.disabled IS DISTINCT FROM c.was_disabled)
         ) AS k (kind, told)
       WHERE k.told
     )
     ${storeNotices('kinds')}`,
    [failingAfter],
  );
  return rows.map((row) => row.id);
}

/** Bulk jobs that ended (completed, failed, cancelled) since last told. */
async function emitBulkJobNotices(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH ended AS (
       UPDATE bulk_jobs SET noticed = true
       WHERE state IN ('completed', 'failed', 'cancelled') AND NOT noticed
       RETURNING id, kind, state, webhook_id, matched, succeeded, failed, skipped,
         failure_reason, started_at, finished_at
     ), kinds AS (
       SELECT 'bulk_job_finished' AS kind, e.webhook_id::text AS webhook_id,
         jsonb_build_object('webhook_id', e.webhook_id::text, 'webhook_name', w.name,
           'bulk_job_id', e.id::text, 'bulk_job_kind', e.kind, 'state', e.state,
           'matched', e.matched, 'succeeded', e.succeeded, 'failed', e.failed,
           'skipped', e.skipped, 'failure_reason', e.failure_reason,
           'started_at', e.started_at, 'finished_at', e.finished_at,
           'message', format('Bulk job %s (%s) %s: %s succeeded, %s failed, %s skipped of %s',
             e.id, e.kind, e.state, e.succeeded, e.failed, e.skipped,
             coalesce(e.matched::text, 'none selected'))) AS attributes
       FROM ended e LEFT JOIN webhooks w ON w.id = e.webhook_id
     )
     ${storeNotices('kinds')}`,
  );
  return rows.map((row) => row.id);
}

/**
 * Stores the notices of what changed since last told (webhook health, bulk jobs); returns their
 * event ids, for the caller to enqueue their match (the sweeper does it otherwise).
 */
export async function emitNotices(
  db: Queryable,
  options: { failingAfter: number },
): Promise<string[]> {
  return [
    ...(await emitHealthNotices(db, options.failingAfter)),
    ...(await emitBulkJobNotices(db)),
  ];
}
