import pg from 'pg';
import {
  createPostgresDb,
  createWebhookCallMonths,
  dropWebhookCallMonths,
  insertWebhook,
  loadMigrations,
  migrate,
  type Db,
} from '@herald/store';
import { testWebhookInput } from '@herald/testkit';

/** What the rehearsal of migration 021 measured in one run. */
export interface MigrationFigures {
  calls: number;
  attempts: number;
  /** Migration 021 on the log as 020 left it. */
  migrateSeconds: number;
  /** The floor: one count(*) over each table, the scan that attaching them as partitions needs. */
  scanSeconds: number;
  /** Retention afterwards: a month of `monthCalls` calls dropped, and the same number deleted. */
  monthCalls: number;
  dropSeconds: number;
  deleteSeconds: number;
}

/**
 * `webhooks` webhooks and one event per `webhooks` calls, over the last 30 days, each matched
 * (the call log's data set); returns how many events.
 */
export async function insertBenchEvents(db: Db, calls: number, webhooks: number): Promise<number> {
  for (let i = 0; i < webhooks; i++) {
    await insertWebhook(db, testWebhookInput({ name: `bench-${i}` }));
  }
  const events = Math.ceil(calls / webhooks);
  await db.query(
    `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
       entity_id, occurred_at, entity, matched_at)
     SELECT 'e' || n, 'main', true, 'item', 'update', 'r' || n,
       now() - (n::float8 / $1) * interval '30 days', '{}', now()
     FROM generate_series(1, $1) AS n`,
    [events],
  );
  return events;
}

const seconds = async (work: () => Promise<unknown>): Promise<number> => {
  const started = performance.now();
  await work();
  return (performance.now() - started) / 1000;
};

/**
 * The rehearsal of migration 021 (issue #14: the call log partitioned by month, in place): a
 * database of its own migrated to 020 and filled with `calls` calls of the last 30 days, each with
 * one attempt, then migrated to 021 (timed, beside the scan of both tables it cannot do without).
 * Then retention: a month partition of `calls / 10` calls dropped (timed) beside deleting as many
 * calls row by row with their attempts (what retention did before), in the same run.
 */
export async function rehearseMigration(url: string, calls: number): Promise<MigrationFigures> {
  const name = 'herald_bench_migration';
  const admin = new pg.Client({ connectionString: url.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const db = createPostgresDb({
    connectionString: url.replace(/\/[^/]+$/, `/${name}`),
    maxConnections: 2,
  });
  try {
    await migrate(
      db,
      (await loadMigrations()).filter((m) => m.version < 21),
    );
    const webhooks = 100;
    const events = await insertBenchEvents(db, calls, webhooks);
    await db.query(
      `INSERT INTO webhook_calls (event_id, webhook_id, entity_type, event_type, status,
         created_at, request_url, request_headers, request_payload, response_status,
         response_payload, last_sent_at, attempts_count, enqueued_at)
       SELECT e.id, w.id, 'item', 'update', 'success', e.occurred_at, 'https://example.com/hook',
         '{"Content-Type":"application/json"}', '{"entity":{"id":"' || e.entity_id || '"}}',
         200, 'ok', e.occurred_at, 1, e.occurred_at
       FROM events e CROSS JOIN (SELECT id FROM webhooks ORDER BY id LIMIT $1) w
       ORDER BY e.seq`,
      [webhooks],
    );
    await db.query(
      `INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
         duration_ms, request_url, request_headers, response_status)
       SELECT id, 1, 'first', 'success', created_at, 12, request_url, '{}', 200
       FROM webhook_calls`,
    );
    await db.query('VACUUM ANALYZE');
    const scanSeconds = await seconds(async () => {
      await db.query('SELECT count(*) FROM webhook_calls WHERE id > 0');
      await db.query('SELECT count(*) FROM webhook_call_attempts WHERE call_id > 0');
    });
    const migrateSeconds = await seconds(() => migrate(db));

    // Retention afterwards: a past month of calls / 10 calls, dropped whole; as many deleted.
    const monthCalls = Math.ceil(calls / 10);
    const past = new Date(Date.UTC(2025, 0, 15));
    await createWebhookCallMonths(db, past, 1);
    const fill = async () => {
      await db.query(
        `WITH made AS (
           INSERT INTO webhook_calls (id, created_at, event_id, webhook_id, entity_type,
             event_type, status)
           SELECT herald_webhook_call_id($1), $1, 'e' || (n % $3 + 1), n / $3 + 1000, 'item',
             'update', 'success'
           FROM generate_series(0, $2 - 1) AS n
           RETURNING id, created_at)
         INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
           request_url, request_headers)
         SELECT id, 1, 'first', 'success', created_at, 'https://example.com/hook', '{}' FROM made`,
        [past, monthCalls, events],
      );
      await db.query('VACUUM ANALYZE webhook_calls_2025_01');
    };
    await fill();
    const deleteSeconds = await seconds(async () => {
      await db.query(
        `WITH gone AS (DELETE FROM webhook_calls WHERE id IN (
             SELECT id FROM webhook_calls_2025_01) RETURNING id)
         DELETE FROM webhook_call_attempts WHERE call_id IN (SELECT id FROM gone)`,
      );
    });
    await fill();
    let dropped = 0;
    const dropSeconds = await seconds(async () => {
      dropped = (await dropWebhookCallMonths(db, new Date(Date.UTC(2025, 1, 1)))).calls;
    });
    if (dropped !== monthCalls) throw new Error(`dropped ${dropped} of ${monthCalls} calls`);
    return {
      calls,
      attempts: calls,
      migrateSeconds,
      scanSeconds,
      monthCalls,
      dropSeconds,
      deleteSeconds,
    };
  } finally {
    await db.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.end();
  }
}
