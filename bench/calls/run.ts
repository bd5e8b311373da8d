import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Agent, request } from 'undici';
import { createApp } from '@herald/ingest';
import { createRedis, createLogger } from '@herald/runtime';
import {
  createPostgresDb,
  createWebhookCallMonths,
  createToken,
  listWebhookCallAttempts,
  listWebhookCalls,
  migrate,
  readWebhookStats,
  type Db,
  type StatsWindow,
  type WebhookCallListQuery,
} from '@herald/store';
import { deleteTestRedisKeys, testDeps } from '@herald/testkit';
import { productionHttp } from '../lib/http.js';
import { pairedLatencies } from '../lib/latency.js';
import { benchBulkResend } from './bulk-resend.js';
import { insertBenchEvents, rehearseMigration } from './migration.js';

/**
 * pnpm bench:calls [--calls=N] [--webhooks=N] [--samples=N] [--bulk-calls=N] [--bulk-only]
 *   [--regenerate] [--migration-only] [--migration-calls=N]
 * The call log at scale (issue #14): GET /webhooks/:id/stats, GET /webhook_stats and
 * GET /webhook_calls against a log of N calls (default 10 million), side by side with a baseline
 * that runs the same store functions (their SQL) through `pg` behind a bare node:http server (no
 * express, no auth, no validation, no serializer, no included webhooks), in the same run.
 * GET /webhook_calls is measured in each order without a filter, and with each filter in the
 * default order (created_at_asc) or its own.
 */

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? 'true'] as const;
  }),
);
const DATABASE = 'herald_bench_calls';
const URL_ = process.env['BENCH_DATABASE_URL'] ?? `postgres://postgres@127.0.0.1:5432/${DATABASE}`;
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const CALLS = Number(args.get('calls') ?? 10_000_000);
const WEBHOOKS = Number(args.get('webhooks') ?? 100);
const SAMPLES = Number(args.get('samples') ?? 200);
/** Failed calls the bulk resend measurement sends again (a database of its own). */
const BULK_CALLS = Number(args.get('bulk-calls') ?? 20_000);
/** Calls of the log migration 021 is rehearsed on (a database of its own). */
const MIGRATION_CALLS = Number(args.get('migration-calls') ?? 10_000_000);

/** Creates the database if missing, migrates it, and fills it unless it holds the data set. */
async function generate(): Promise<boolean> {
  const admin = new pg.Client({ connectionString: URL_.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
  if (args.has('regenerate') && exists.rowCount) await admin.query(`DROP DATABASE ${DATABASE}`);
  if (!exists.rowCount || args.has('regenerate')) await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();
  const db = createPostgresDb({ connectionString: URL_, maxConnections: 2 });
  try {
    await migrate(db);
    const { rows } = await db.query<{ n: string; attempts: boolean }>(
      `SELECT count(*) AS n, EXISTS (SELECT 1 FROM webhook_call_attempts) AS attempts
       FROM webhook_calls`,
    );
    if (Number(rows[0]!.n) === CALLS && rows[0]!.attempts) return false;
    // One event per (CALLS / WEBHOOKS), each matched by every webhook, over the last 30 days.
    await insertBenchEvents(db, CALLS, WEBHOOKS);
    // 99 % success, 1 % failed, a few pending: the last attempt's request and answer each,
    // made when the event occurred (in that month's partition, with that month's id).
    await createWebhookCallMonths(db, new Date(Date.now() - 31 * 86_400_000), 3);
    await db.query(
      `INSERT INTO webhook_calls (id, event_id, webhook_id, entity_type, event_type, status,
         created_at, request_url, request_headers, request_payload, response_status,
         response_payload, last_sent_at, attempts_count, enqueued_at)
       SELECT herald_webhook_call_id(e.occurred_at), e.id, w.id, 'item', 'update',
         CASE WHEN (w.id + e.seq) % 2000 = 0 THEN 'pending'
              WHEN (w.id + e.seq) % 100 = 0 THEN 'failed' ELSE 'success' END,
         e.occurred_at, 'https://example.com/hook', '{"Content-Type":"application/json"}',
         '{"event_type":"update","entity":{"id":"' || e.entity_id || '"}}', 200, 'ok',
         e.occurred_at, 1, e.occurred_at
       FROM events e CROSS JOIN (SELECT id FROM webhooks ORDER BY id LIMIT $1) w
       ORDER BY e.seq`,
      [WEBHOOKS],
    );
    // Each sent call's attempt, as the outcome statement records it (body kept on the call).
    await db.query(
      `INSERT INTO webhook_call_attempts (call_id, number, trigger, outcome, started_at,
         duration_ms, request_url, request_headers, response_status, response_payload)
       SELECT id, 1, 'first', status, last_sent_at, 12, request_url, request_headers,
         response_status, response_payload
       FROM webhook_calls WHERE status <> 'pending'`,
    );
    // The rollups the attempts would have kept: hours for 30 days, minutes for 2 days.
    await db.query(
      `INSERT INTO webhook_stats (webhook_id, granularity, bucket_start, attempts_success,
         attempts_failure, calls_succeeded, calls_failed, latency_buckets, latency_ms_sum)
       SELECT w.id, g.granularity, b.start, 990, 10, 990, 10,
         ARRAY[100, 300, 300, 200, 50, 30, 10, 5, 3, 1, 1, 0], 42000
       FROM webhooks w
       CROSS JOIN (VALUES ('hour', interval '30 days'), ('minute', interval '2 days'))
         AS g (granularity, span)
       CROSS JOIN LATERAL generate_series(date_trunc(g.granularity, now() - g.span),
         now(), ('1 ' || g.granularity)::interval) AS b (start)`,
    );
    await db.query(
      `INSERT INTO webhook_health (webhook_id, last_success_at, last_failure_at, failure_streak)
       SELECT id, now() - interval '1 minute', now() - interval '2 hours', 0 FROM webhooks`,
    );
    // The state autovacuum reaches soon after a bulk load: the visibility map set, so counts
    // read indexes only, as they do on a log that is not all fresh.
    await db.query('VACUUM ANALYZE');
    return true;
  } finally {
    await db.close();
  }
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Scenario {
  name: string;
  path: (webhookId: string) => string;
  /** The same store read, for the baseline. */
  baseline: (db: Db, webhookId: string) => Promise<unknown>;
  target?: string;
}

const stats = (window: StatsWindow): Scenario => ({
  name: `GET /webhooks/:id/stats?window=${window}`,
  path: (id) => `/webhooks/${id}/stats?window=${window}`,
  baseline: (db, id) => readWebhookStats(db, window, [id]),
  target: 'p50 ≤ 20 ms',
});

const DAY_AGO = new Date(Date.now() - 86_400_000);

/** GET /webhook_calls, first page, with `filter` (':id' stands for the webhook's id). */
function calls(
  name: string,
  filter: Partial<WebhookCallListQuery>,
  query?: (webhookId: string) => string,
): Scenario {
  const list = (webhookId: string): WebhookCallListQuery => ({
    eq: {},
    range: {},
    orderBy: { column: 'created_at', desc: false },
    offset: 0,
    limit: 30,
    ...filter,
    ...(filter.eq?.webhook_id ? { eq: { ...filter.eq, webhook_id: webhookId } } : {}),
  });
  return {
    name: `GET /webhook_calls?${name}`,
    path: (id) => `/webhook_calls?${query ? query(id) : toQuery(list(id))}`,
    baseline: (db, id) => listWebhookCalls(db, list(id)),
    target: 'p50 ≤ 20 ms',
  };
}

/** The query string of a list query (the bench's filters only). */
function toQuery(list: WebhookCallListQuery): string {
  const parts = Object.entries(list.eq ?? {}).map(
    ([key, value]) => `filter[fields][${key}][eq]=${encodeURIComponent(String(value))}`,
  );
  for (const [key, bounds] of Object.entries(list.range ?? {})) {
    for (const [op, date] of Object.entries(bounds ?? {})) {
      parts.push(`filter[fields][${key}][${op}]=${date.toISOString()}`);
    }
  }
  const { column, desc } = list.orderBy;
  parts.push(`order_by=${column}_${desc ? 'desc' : 'asc'}`);
  return parts.join('&');
}

/** The scenarios, `callIds` three calls of the log (first, middle, last). */
const scenarios = (callIds: readonly string[]): Scenario[] => [
  stats('1h'),
  stats('24h'),
  stats('30d'),
  {
    name: 'GET /webhook_stats?window=24h (every webhook)',
    path: () => '/webhook_stats?window=24h',
    baseline: (db) => readWebhookStats(db, '24h', null),
  },
  ...(['created_at', 'last_sent_at', 'next_retry_at', 'webhook_id'] as const).flatMap((column) =>
    [false, true].map((desc) =>
      calls(`order_by=${column}_${desc ? 'desc' : 'asc'}`, { orderBy: { column, desc } }),
    ),
  ),
  calls('filter[ids]=3 ids', { ids: [...callIds] }, () => `filter[ids]=${callIds.join(',')}`),
  calls('filter[fields][webhook_id][eq]', { eq: { webhook_id: ':id' } }),
  calls('filter[fields][webhook_id][eq], order_by=created_at_desc', {
    eq: { webhook_id: ':id' },
    orderBy: { column: 'created_at', desc: true },
  }),
  calls('filter[fields][entity_type][eq]=item', { eq: { entity_type: 'item' } }),
  calls('filter[fields][event_type][eq]=update', { eq: { event_type: 'update' } }),
  calls('filter[fields][status][eq]=failed (1 %)', { eq: { status: 'failed' } }),
  calls('filter[fields][status][eq]=pending (0.05 %)', { eq: { status: 'pending' } }),
  calls('filter[fields][event_id][eq]', { eq: { event_id: 'e5000' } }),
  calls('filter[fields][entity_id][eq]', { eq: { entity_id: 'r5000' } }),
  calls('filter[fields][created_at][gt]=1 day ago', { range: { created_at: { gt: DAY_AGO } } }),
  calls('filter[fields][webhook_id][eq], filter[fields][created_at][gt]=1 day ago', {
    eq: { webhook_id: ':id' },
    range: { created_at: { gt: DAY_AGO } },
  }),
  calls('filter[fields][last_sent_at][gt]=1 day ago, order_by=last_sent_at_desc', {
    range: { last_sent_at: { gt: DAY_AGO } },
    orderBy: { column: 'last_sent_at', desc: true },
  }),
  calls('filter[fields][last_sent_at][lt]=29 days ago', {
    range: { last_sent_at: { lt: new Date(Date.now() - 29 * 86_400_000) } },
  }),
  calls('filter[fields][next_retry_at][gt]=1 day ago', {
    range: { next_retry_at: { gt: DAY_AGO } },
  }),
  {
    name: 'GET /webhook_calls/:id/attempts',
    path: () => `/webhook_calls/${callIds[1]}/attempts`,
    baseline: (db) => listWebhookCallAttempts(db, callIds[1]!, { offset: 0, limit: 30 }),
    target: 'p50 ≤ 20 ms',
  },
];

async function main(): Promise<void> {
  // The bulk resend alone: it has a database of its own, not the 10 million calls.
  if (args.has('bulk-only')) return printBulkResend();
  // The rehearsal of migration 021 alone: a database of its own, filled at schema 020.
  if (args.has('migration-only')) return printMigration();
  const started = Date.now();
  const generated = await generate();
  process.stderr.write(
    generated
      ? `generated ${CALLS.toLocaleString('en')} calls in ${((Date.now() - started) / 1000).toFixed(0)} s\n`
      : `reusing the ${CALLS.toLocaleString('en')} calls in ${URL_} (--regenerate to rebuild)\n`,
  );
  if (args.has('generate-only')) return;

  const db = createPostgresDb({ connectionString: URL_, maxConnections: 10 });
  const redis = createRedis(REDIS_URL, 'producer', createLogger({ name: 'bench', level: 'warn' }));
  const { token } = await createToken(db, { name: 'bench', role: 'admin' });
  const herald = createServer(createApp(testDeps(db, redis, productionHttp())));
  const heraldUrl = await listen(herald);
  const pool = createPostgresDb({ connectionString: URL_, maxConnections: 10 });
  const byPath = new Map<string, () => Promise<unknown>>();
  const { rows: hooks } = await pool.query<{ id: string }>(
    'SELECT id::text FROM webhooks ORDER BY id LIMIT 1',
  );
  const webhookId = hooks[0]!.id;
  // The first, a middle and the last call (ids carry their month: not 1..N).
  const { rows: sample } = await pool.query<{ id: string }>(
    `(SELECT id::text FROM webhook_calls ORDER BY id LIMIT 1)
     UNION ALL (SELECT id::text FROM webhook_calls WHERE event_id = 'e' || $1::integer / 2
                ORDER BY id LIMIT 1)
     UNION ALL (SELECT id::text FROM webhook_calls ORDER BY id DESC LIMIT 1)`,
    [Math.ceil(CALLS / WEBHOOKS)],
  );
  const measured = scenarios(sample.map((row) => row.id));
  for (const s of measured) byPath.set(s.path(webhookId), () => s.baseline(pool, webhookId));
  const baseline = createServer((req, res) => {
    byPath.get(req.url ?? '')!()
      .then((result) => {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(result));
      })
      .catch((error: unknown) => {
        res.writeHead(500);
        res.end(String(error));
      });
  });
  const baselineUrl = await listen(baseline);

  const dispatcher = new Agent({ connections: 4 });
  const call = async (base: string, path: string): Promise<number> => {
    const t0 = process.hrtime.bigint();
    const { statusCode, body } = await request(`${base}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher,
    });
    await body.text();
    if (statusCode !== 200) throw new Error(`${base}${path} → ${statusCode}`);
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };

  const rows: string[][] = [];
  for (const s of measured) {
    const path = s.path(webhookId);
    for (let i = 0; i < 5; i++) {
      await call(heraldUrl, path);
      await call(baselineUrl, path);
    }
    const latencies = await pairedLatencies(
      SAMPLES,
      () => call(heraldUrl, path),
      () => call(baselineUrl, path),
    );
    rows.push([s.name, ...latencies, String(SAMPLES), s.target ?? '']);
  }

  const header = [
    'scenario',
    'Herald p50 ms',
    'p95',
    'baseline p50 ms',
    'p95',
    'samples',
    'target',
  ];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join(' | ')} |`;
  console.log(`\nCall log of ${CALLS.toLocaleString('en')} calls, ${WEBHOOKS} webhooks\n`);
  console.log(line(header));
  console.log(
    `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));

  herald.close();
  baseline.close();
  await dispatcher.close();
  await pool.close();
  await db.close();
  await deleteTestRedisKeys();
  await redis.quit();
  await printBulkResend();
}

/** Bulk resend throughput: one unpaced job, beside raw undici at the same in-flight limit. */
async function printBulkResend(): Promise<void> {
  const bulk = await benchBulkResend(BULK_CALLS);
  const perCall = bulk.herald.cpuMsPer1000;
  console.log(
    `\nBulk resend of ${bulk.calls.toLocaleString('en')} failed calls, ${bulk.inFlight} in flight\n`,
  );
  console.log('| scenario | calls/s | s | node CPU ms/1000 | Postgres CPU ms/1000 |');
  console.log('|---|---:|---:|---:|---:|');
  console.log(
    `| Herald bulk job (unpaced) | ${bulk.herald.perSecond.toFixed(0)} | ${bulk.herald.seconds.toFixed(2)} | ${perCall.node.toFixed(0)} | ${perCall.postgres.toFixed(0)} |`,
  );
  console.log(
    `| baseline: raw undici request() | ${bulk.raw.perSecond.toFixed(0)} | ${bulk.raw.seconds.toFixed(2)} | | |`,
  );
  console.log(`\nHerald / baseline: ${(bulk.herald.perSecond / bulk.raw.perSecond).toFixed(2)}×`);
}

/** Migration 021 on a log of MIGRATION_CALLS calls, and a month's retention, side by side. */
async function printMigration(): Promise<void> {
  const m = await rehearseMigration(URL_, MIGRATION_CALLS);
  const n = (value: number) => value.toLocaleString('en');
  console.log(
    `\nMigration 021 on ${n(m.calls)} calls and ${n(m.attempts)} attempts; retention of a month of ${n(m.monthCalls)} calls\n`,
  );
  console.log('| step | s | baseline | s |');
  console.log('|---|---:|---|---:|');
  console.log(
    `| migrate 020 → 021 (in place) | ${m.migrateSeconds.toFixed(2)} | raw pg: count(*) over both tables | ${m.scanSeconds.toFixed(2)} |`,
  );
  console.log(
    `| retention: drop the month | ${m.dropSeconds.toFixed(3)} | raw pg: DELETE its calls and attempts | ${m.deleteSeconds.toFixed(2)} |`,
  );
}

main().catch(async (error: unknown) => {
  console.error(error);
  // The queues' keys of the prefixes this run made, as a test file leaves none.
  await deleteTestRedisKeys().catch(() => 0);
  process.exit(1);
});
