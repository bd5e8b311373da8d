import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Agent, request } from 'undici';
import {
  createPostgresDb,
  createToken,
  findModelsByIdOrApiKey,
  findEnvironment,
  textSearchConfig,
  type Db,
} from '@herald/store';
import { Lifecycle, createLogger, createMetrics, createRedis } from '@herald/runtime';
import {
  IndexManager,
  compileListQuery,
  createApp,
  parseListParams,
  resolveListQuery,
} from '@herald/read';
import { testHttpSettings } from '@herald/testkit';
import { generate } from './generate.js';
import { benchRedisCoordination } from '../lib/coordination.js';
import { pairedLatencies } from '../lib/latency.js';

/**
 * pnpm bench:items [--records=N] [--others=N] [--regenerate]
 * GET /items against the generated data set, side by side with a baseline that runs the same SQL
 * (count + page) through `pg` behind a bare node:http server, in the same run.
 */

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? 'true'] as const;
  }),
);
const URL_ = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/herald_bench';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const RECORDS = Number(args.get('records') ?? 1_000_000);
const OTHERS = Number(args.get('others') ?? 100_000);
const SAMPLES = Number(args.get('samples') ?? 200);
const SECONDS = Number(args.get('seconds') ?? 5);
const CONCURRENCY = 16;

interface Scenario {
  name: string;
  query: string;
  target?: string;
}

const SCENARIOS: Scenario[] = [
  { name: 'first page, no filter', query: '', target: 'p50 ≤ 20 ms' },
  {
    name: 'field filter + order_by field',
    query: 'filter[type]=article&filter[fields][category][eq]=cat-0042&order_by=views_DESC',
    target: 'p50 ≤ 20 ms',
  },
  { name: 'full text ~1 %, ranked', query: 'filter[query]=zephyr', target: 'p50 ≤ 100 ms' },
  { name: 'offset 0 (article)', query: 'filter[type]=article' },
  { name: 'offset 10,000 (article)', query: 'filter[type]=article&page[offset]=10000' },
];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The SQL the read service runs for a query string (same compiler, same models). */
async function compile(db: Db, query: string) {
  const raw = Object.fromEntries(new URLSearchParams(query));
  const nested: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const parts = key.replace(/\]/g, '').split('[');
    let node = nested;
    for (const part of parts.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]!] = value;
  }
  const params = parseListParams(nested);
  const env = (await findEnvironment(db, 'main'))!;
  const models = params.types
    ? [...(await findModelsByIdOrApiKey(db, 'main', params.types)).values()]
    : [];
  return compileListQuery(
    resolveListQuery(params, { locales: env.locales, models, textSearchConfig }),
    'main',
  );
}

async function main(): Promise<void> {
  const startedGen = Date.now();
  const generated = await generate({
    url: URL_,
    records: RECORDS,
    others: OTHERS,
    regenerate: args.has('regenerate'),
  });
  process.stderr.write(
    generated
      ? `generated ${RECORDS.toLocaleString('en')} + ${OTHERS.toLocaleString('en')} records in ${((Date.now() - startedGen) / 1000).toFixed(0)} s\n`
      : `reusing the data set in ${URL_} (--regenerate to rebuild)\n`,
  );
  if (args.has('generate-only')) return;

  const logger = createLogger({ name: 'bench', level: 'warn' });
  const db = createPostgresDb({ connectionString: URL_, maxConnections: 20 });
  const redis = createRedis(REDIS_URL, 'producer', logger);
  const indexes = new IndexManager(db, logger, true);
  const { token, record } = await createToken(db, { name: 'bench', role: 'read_only' });
  const metrics = createMetrics({ defaultMetrics: false });
  const app = createApp({
    db,
    coordination: benchRedisCoordination(
      redis,
      REDIS_URL,
      `herald_bench_${randomBytes(4).toString('hex')}`,
      logger,
    ),
    logger,
    metrics,
    lifecycle: new Lifecycle(logger),
    indexes,
    // The tests' HTTP settings, with rate limits the benchmark never reaches and a token verified
    // once a minute.
    http: testHttpSettings({
      rateLimits: {
        windowMs: 3000,
        perRole: { admin: 1e9, read_only: 1e9, producer: 1e9 },
        anonymous: 1e9,
      },
      authCacheTtlMs: 60_000,
    }),
  });
  const heraldServer = createServer(app);
  const heraldUrl = await listen(heraldServer);

  // Baseline: node:http + pg, the same SQL texts and values, no validation, no serializer.
  const pool = new pg.Pool({ connectionString: URL_, max: 20 });
  const compiled = new Map<string, Awaited<ReturnType<typeof compile>>>();
  for (const s of SCENARIOS) compiled.set(s.query, await compile(db, s.query));
  const baselineServer = createServer((req, res) => {
    const query = decodeURIComponent((req.url ?? '').replace(/^\/items\??/, ''));
    const c = compiled.get(query)!;
    Promise.all([pool.query(c.count.text, c.count.values), pool.query(c.list.text, c.list.values)])
      .then(([count, page]) => {
        res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(
          JSON.stringify({ data: page.rows, meta: { total_count: Number(count.rows[0].count) } }),
        );
      })
      .catch((error: unknown) => {
        res.writeHead(500);
        res.end(String(error));
      });
  });
  const baselineUrl = await listen(baselineServer);

  const dispatcher = new Agent({ connections: CONCURRENCY * 2, pipelining: 1 });
  const headers = { authorization: `Bearer ${token}` };
  const call = async (base: string, query: string): Promise<number> => {
    const started = process.hrtime.bigint();
    const { statusCode, body } = await request(`${base}/items${query ? `?${query}` : ''}`, {
      headers,
      dispatcher,
    });
    await body.text();
    if (statusCode !== 200) throw new Error(`${base} ${query} → ${statusCode}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };

  // Warm up: lets the read service build its lazy expression indexes, fills the caches.
  for (const s of SCENARIOS) await call(heraldUrl, s.query);
  await indexes.idle();
  for (const s of SCENARIOS)
    for (let i = 0; i < 20; i++) {
      await call(heraldUrl, s.query);
      await call(baselineUrl, s.query);
    }

  const rows: string[][] = [];
  for (const s of SCENARIOS) {
    const latencies = await pairedLatencies(
      SAMPLES,
      () => call(heraldUrl, s.query),
      () => call(baselineUrl, s.query),
    );
    rows.push([s.name, ...latencies, s.target ?? '']);
  }

  const throughput = async (url: string): Promise<number> => {
    let done = 0;
    const until = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          await call(url, '');
          done++;
        }
      }),
    );
    return done / SECONDS;
  };
  const heraldRps = await throughput(heraldUrl);
  const baseRps = await throughput(baselineUrl);

  const total = await db.query<{ n: string }>(
    'SELECT count(*)::bigint AS n FROM records WHERE NOT is_block',
  );
  process.stdout.write(
    `\nGET /items — ${Number(total.rows[0]!.n).toLocaleString('en')} records, ${SAMPLES} sequential requests per cell (ms)\n\n`,
  );
  const header = ['scenario', 'herald p50', 'herald p95', 'baseline p50', 'baseline p95', 'target'];
  const table = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  process.stdout.write(`${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n`);
  for (const r of rows) process.stdout.write(`${line(r)}\n`);
  process.stdout.write(
    `\nthroughput, first page, ${CONCURRENCY} concurrent clients, ${SECONDS} s: herald ${heraldRps.toFixed(0)} req/s, baseline ${baseRps.toFixed(0)} req/s, ratio ${(heraldRps / baseRps).toFixed(2)} (target ≥ 0.5)\n`,
  );

  await db.query('DELETE FROM api_tokens WHERE id = $1', [record.id]);
  await dispatcher.close();
  await new Promise((r) => heraldServer.close(r));
  await new Promise((r) => baselineServer.close(r));
  await pool.end();
  await db.close();
  redis.disconnect();
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
