/**
 * GET /webhooks with 10,000 webhooks (issue 5: under 200 ms), beside a baseline measured in the
 * same run on the same rows: a raw `pg` SELECT serialized by a bare node:http server. The gap is
 * what Herald's plumbing (auth, rate limit, headers) and resource serialization cost.
 *
 *   pnpm bench:webhooks            (WEBHOOKS=10000 REQUESTS=30 by default)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { createApp } from '@herald/ingest';
import {
  TEST_DATABASE_URL,
  createTestDb,
  createTestToken,
  serve,
  testDeps,
  testRedis,
} from '@herald/testkit';
import { productionHttp } from '../lib/http.js';

const WEBHOOKS = Number(process.env['WEBHOOKS'] ?? 10_000);
const REQUESTS = Number(process.env['REQUESTS'] ?? 30);
const WARMUP = 3;
const BUDGET_MS = 200;

interface Stats {
  p50: number;
  p95: number;
  max: number;
  mean: number;
  bytes: number;
  count: number;
}

async function measure(url: string, headers: Record<string, string>): Promise<Stats> {
  const times: number[] = [];
  let last = new ArrayBuffer(0);
  for (let i = 0; i < WARMUP + REQUESTS; i++) {
    const started = performance.now();
    const response = await fetch(url, { headers });
    // Bytes only: decoding and parsing 8 MB here would run on the servers' event loop too.
    last = await response.arrayBuffer();
    const elapsed = performance.now() - started;
    if (response.status !== 200) {
      throw new Error(`${url} answered ${response.status}: ${Buffer.from(last).toString()}`);
    }
    if (i >= WARMUP) times.push(elapsed);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return {
    p50: at(0.5),
    p95: at(0.95),
    max: times[times.length - 1]!,
    mean: times.reduce((a, b) => a + b, 0) / times.length,
    bytes: last.byteLength,
    count: (JSON.parse(Buffer.from(last).toString('utf8')) as { data: unknown[] }).data.length,
  };
}

/** 10,000 webhooks of realistic size (headers, Basic auth, filtered events, a custom payload). */
async function seed(query: (text: string, params?: unknown[]) => Promise<unknown>): Promise<void> {
  await query(
    `INSERT INTO webhooks (name, url, headers, events, custom_payload, http_basic_user,
       http_basic_password, signing_secret)
     SELECT 'hook ' || n, 'https://hooks.example.com/' || n || '/{{entity_type}}',
       json_build_object('X-Tenant', 'tenant-' || (n % 97), 'X-Trace', 'on'),
       json_build_array(
         json_build_object('entity_type', 'item', 'event_types', json_build_array('publish', 'unpublish'),
           'filters', json_build_array(json_build_object('entity_type', 'item_type',
             'entity_ids', json_build_array('model-' || (n % 50), 'article')))),
         json_build_object('entity_type', 'item_type', 'event_types', json_build_array('create'))),
       CASE WHEN n % 3 = 0 THEN '{"event":"{{event_type}}","id":"{{#entity}}{{id}}{{/entity}}"}' END,
       'user' || n, 'password' || n,
       'whsec_' || encode(sha256(n::text::bytea), 'base64')
     FROM generate_series(1, $1::int) AS n`,
    [WEBHOOKS],
  );
}

function baselineServer(pool: pg.Pool): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    pool
      .query('SELECT * FROM webhooks ORDER BY id')
      .then(({ rows }) => {
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ data: rows }));
      })
      .catch((error: unknown) => {
        res.writeHead(500).end(String(error));
      });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }),
    ),
  );
}

async function main(): Promise<void> {
  const testDb = await createTestDb('postgres');
  const redis = testRedis();
  const pool = new pg.Pool({
    connectionString: TEST_DATABASE_URL,
    options: `-c search_path=${testDb.schema}`,
    max: 2,
  });
  try {
    process.stdout.write(`seeding ${WEBHOOKS} webhooks…\n`);
    await seed((text, params) => testDb.db.query(text, params));
    const token = await createTestToken(testDb.db, 'admin');

    const herald = await serve(createApp(testDeps(testDb.db, redis, productionHttp())));
    const baseline = await baselineServer(pool);
    try {
      const raw = await measure(baseline.url, {});
      const ours = await measure(`${herald.url}/webhooks`, { authorization: `Bearer ${token}` });
      // Cold: a fresh process-level cache each time (the first request after a start).
      const coldTimes: number[] = [];
      for (let i = 0; i < 5; i++) {
        const fresh = await serve(createApp(testDeps(testDb.db, redis, productionHttp())));
        try {
          const started = performance.now();
          const response = await fetch(`${fresh.url}/webhooks`, {
            headers: { authorization: `Bearer ${token}` },
          });
          await response.arrayBuffer();
          coldTimes.push(performance.now() - started);
        } finally {
          await fresh.close();
        }
      }
      coldTimes.sort((a, b) => a - b);
      const cold: Stats = {
        ...ours,
        p50: coldTimes[2]!,
        p95: coldTimes[4]!,
        max: coldTimes[4]!,
        mean: coldTimes.reduce((a, b) => a + b, 0) / coldTimes.length,
      };
      if (ours.count !== WEBHOOKS) throw new Error(`GET /webhooks returned ${ours.count} webhooks`);

      const row = (name: string, s: Stats) =>
        `| ${name} | ${s.count} | ${(s.bytes / 1e6).toFixed(2)} MB | ${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} | ${s.max.toFixed(1)} | ${s.mean.toFixed(1)} |`;
      const table = [
        `GET /webhooks, ${WEBHOOKS} webhooks, ${REQUESTS} sequential requests after ${WARMUP} warm-ups (ms)`,
        '',
        '| server | webhooks | body | p50 | p95 | max | mean |',
        '|---|---|---|---|---|---|---|',
        row('baseline: raw pg SELECT + node:http', raw),
        row('Herald GET /webhooks', ours),
        row('Herald, first request after start (5 runs)', cold),
        '',
        `Herald p95 ${ours.p95.toFixed(1)} ms vs budget ${BUDGET_MS} ms: ${ours.p95 < BUDGET_MS ? 'PASS' : 'FAIL'}` +
          ` (${(ours.p50 / raw.p50).toFixed(2)}× the baseline's p50)`,
        `machine: ${cpus().length} cores, load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} (other work on the machine inflates every row)`,
      ];
      process.stdout.write(`\n${table.join('\n')}\n`);
    } finally {
      await herald.close();
      await new Promise((resolve) => baseline.server.close(resolve));
    }
  } finally {
    await pool.end();
    await redis.quit();
    await testDb.cleanup();
  }
}

await main();
