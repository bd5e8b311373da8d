/**
 * The capacity sweep (docs/scaling.md): the delivery workers in 1, 2, … N child processes
 * (./workers.ts, the delivery service as deployed) against one Postgres and one Redis, the ingest
 * app in this process, on Redis and on Postgres alone; beside them, measured in the same run, the
 * raw undici baseline and the floor's fan-out (./floor.ts) against the same receiver.
 *
 *   pnpm bench:delivery --processes 1,2,3     (CAPACITY_EVENTS=1000 CAPACITY_BATCH=20
 *                                              LATENCY_SECONDS=5 IDLE_SECONDS=3
 *                                              CAPACITY_MODES=redis,postgres)
 *
 * It runs on servers of its own (../lib/own-servers.ts: a PostgreSQL cluster with
 * pg_stat_statements and durability on, a redis-server), started here and deleted at the end, so
 * that it can count per event what a shared server cannot: every statement, row and WAL byte,
 * the CPU of the whole cluster, every Redis command. This process starts them, then runs the
 * sweep in a child of itself pointed at them (testkit reads TEST_DATABASE_URL on import).
 *
 * Each row: CAPACITY_EVENTS events of 10 webhooks each (10 deliveries an event) posted
 * CAPACITY_BATCH per POST /events, two POSTs in flight; delivered/s from the first POST to the
 * last delivery received; CPU, statements, rows, WAL, Redis commands and the tables' growth from
 * the first POST until every outcome is written. Then the latency at 200 events/s, one event per
 * POST, one webhook each (as bench:delivery's latency rows), and its cost; then IDLE_SECONDS with
 * nothing to do. CPU per event is the figure to carry to another machine: rates move with
 * whatever else runs here, CPU per unit of work much less.
 *
 * In Redis mode the workers' process opens the workers' pools only, not the service's pool that
 * services/delivery/src/main.ts also opens (idle in a delivery process but for /readyz and the
 * prefix claim); on Postgres alone it opens that one too, which coordination runs on.
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseCidrList } from '@herald/contract';
import { deliverySettings, loadConfig } from '@herald/delivery';
import { createApp } from '@herald/ingest';
import { createLogger, createRedis } from '@herald/runtime';
import { createPostgresDb, insertWebhook, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  createTestDb,
  createTestToken,
  randomId,
  serve,
  silentLogger,
  testDeps,
  testRedis,
  type TestServer,
} from '@herald/testkit';
import { processCpuMs, treeCpuDelta, treeCpuMs } from '../lib/cpu.js';
import { productionHttp } from '../lib/http.js';
import { MONITOR_ROLE, redisInfo, startOwnServers } from '../lib/own-servers.js';
import { ReceiverProcess, baseline } from '../lib/receiver-process.js';
import { table } from '../lib/table.js';
import { itemEvent, itemWebhook, modelEvent, postEvents, postInBatches } from './fixtures.js';
import { startFloor } from './floor.js';
import { servePostgresOnlyIngest } from './postgres-only.js';
import { WorkersProcess } from './workers-process.js';

const EVENTS = Number(process.env['CAPACITY_EVENTS'] ?? 1000);
/**
 * Events per POST /events in the fan-out rows. The unit of work a delivery process takes is a
 * match job, one per request (or per requests committing together), and the process that matches
 * an event makes its first attempts: with bench:delivery's 250 a request, 1000 events were 4 jobs
 * and a second process had next to nothing to do.
 */
const BATCH = Number(process.env['CAPACITY_BATCH'] ?? 20);
const FANOUT = 10;
const MODELS = 10; // ten webhooks on each of ten models
const LATENCY_RATE = 200;
const LATENCY_SECONDS = Number(process.env['LATENCY_SECONDS'] ?? 5);
const IDLE_SECONDS = Number(process.env['IDLE_SECONDS'] ?? 3);
const MODES = (process.env['CAPACITY_MODES'] ?? 'redis,postgres').split(',') as Mode[];
type Mode = 'redis' | 'postgres';

const now = () => performance.timeOrigin + performance.now();
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const loadText = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');

/** `--processes 1,2,3` (or `--processes=1,2,3`, or PROCESSES=1,2,3): the counts, else undefined. */
export function processCounts(argv: readonly string[]): number[] | undefined {
  const at = argv.findIndex((a) => a === '--processes' || a.startsWith('--processes='));
  const text =
    at < 0
      ? process.env['PROCESSES']
      : argv[at]!.includes('=')
        ? argv[at]!.split('=')[1]
        : argv[at + 1];
  if (!text) return undefined;
  const counts = text.split(',').map(Number);
  if (counts.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error(`--processes takes counts such as 1,2,3, not ${text}`);
  }
  return counts;
}

/** The postmaster of the cluster `db` is on (the parent of one of its backends). */
async function postmasterPid(db: Db): Promise<number> {
  const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const stat = readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** What one run cost, from its first POST until every outcome was written. */
interface Cost {
  /** CPU ms: this process (ingest app, poster), each workers process, Postgres, Redis, receiver. */
  cpu: { bench: number; workers: number[]; postgres: number; redis: number; receiver: number };
  statements: { calls: number; rows: number; walBytes: number };
  /** The statements with the most calls: text, calls, rows, WAL bytes, execution ms. */
  top: {
    query: string;
    calls: number;
    rows: number;
    walBytes: number;
    walFpi: number;
    execMs: number;
  }[];
  /** WAL written by the cluster (pg_current_wal_lsn before and after). */
  walBytes: number;
  redisCalls: number;
  redisTop: [string, number][];
  /** The most client backends seen at once, by application_name, and in all. */
  backends: Map<string, number>;
  backendsPeak: number;
  redisClientsPeak: number;
  /** Growth of the tables and indexes of Herald's schema and the queues' (relation sizes). */
  storedBytes: number;
}

interface Row {
  label: string;
  mode: Mode | 'baseline';
  processes: number;
  events: number;
  deliveries: number;
  seconds: number;
  cost?: Cost;
  latency?: { p50: number; p99: number; received: number; total: number; cost: Cost };
  /** IDLE_SECONDS with nothing to do: what the processes cost by the second alone. */
  idle?: Cost;
}

/** The sweep itself, on the servers TEST_DATABASE_URL and TEST_REDIS_URL name (ours). */
async function sweep(counts: number[]): Promise<void> {
  const loadBefore = loadavg();
  const receiver = await ReceiverProcess.start();
  const testDb = await createTestDb('postgres');
  const schema = testDb.schema!;
  const redis = testRedis();
  const admin = createRedis(TEST_REDIS_URL, 'producer', silentLogger()); // INFO, RESETSTAT
  // The bench's own queries, as a role pg_stat_statements' figures leave out.
  const monitor = createPostgresDb({
    connectionString: process.env['BENCH_MONITOR_DATABASE_URL']!,
    searchPath: schema,
    maxConnections: 2,
    applicationName: 'bench-monitor',
  });
  const logger = createLogger({ name: 'bench', level: 'error', destination: process.stderr });
  const deps = { ...testDeps(testDb.db, redis, productionHttp()), logger };
  const config = loadConfig({ ...process.env, SSRF_ALLOW_CIDRS: '127.0.0.0/8' });
  const settings = deliverySettings(config);
  const postmaster = await postmasterPid(monitor);
  const { rows: serverSettings } = await monitor.query<{ name: string; setting: string }>(
    `SELECT name, current_setting(name) AS setting FROM pg_settings
     WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'full_page_writes',
       'shared_buffers', 'max_connections', 'wal_level', 'checkpoint_timeout')
     ORDER BY name`,
  );
  const redisVersion = (await redisInfo(admin)).get('redis_version');
  const token = await createTestToken(testDb.db, 'admin');
  const servers: TestServer[] = [];
  const rows: Row[] = [];
  try {
    const redisHerald = await serve(
      createApp({ ...deps, ssrfAllowCidrs: parseCidrList('127.0.0.0/8') }),
    );
    servers.push(redisHerald);
    // Models, then webhooks, stored before any workers start (their index loads them at once).
    await postEvents(
      redisHerald.url,
      token,
      Array.from({ length: MODELS }, (_, i) => modelEvent(i)),
    );
    await insertWebhook(testDb.db, itemWebhook(receiver.url, 'one', ['update'], 0));
    for (let m = 0; m < MODELS; m++) {
      for (let k = 0; k < FANOUT; k++) {
        await insertWebhook(testDb.db, itemWebhook(receiver.url, `b-${m}-${k}`, ['publish'], m));
      }
    }
    const fanOut = (count: number) =>
      Array.from({ length: count }, (_, i) => itemEvent('publish', i % MODELS, randomId('r')));

    /** Every event matched, no call pending: the run's work all done, outcomes written. */
    const settle = async () => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const { rows: busy } = await monitor.query<{ busy: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM events WHERE matched_at IS NULL)
             OR EXISTS (SELECT 1 FROM webhook_calls WHERE status = 'pending') AS busy`,
        );
        if (!busy[0]?.busy) return;
        if (Date.now() > deadline) throw new Error('Herald did not finish the run');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    /** Runs `body`, counting what it costs on every server and process. */
    const measure = async (workers: readonly number[], body: () => Promise<void>) => {
      await monitor.query('SELECT public.pg_stat_statements_reset()');
      await admin.config('RESETSTAT');
      const lsn = (await monitor.query<{ lsn: string }>('SELECT pg_current_wal_lsn() AS lsn'))
        .rows[0]!.lsn;
      const redisCpu = async () => {
        const info = await redisInfo(admin);
        return (Number(info.get('used_cpu_sys')) + Number(info.get('used_cpu_user'))) * 1000;
      };
      const sample = async () => ({
        bench: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
        workers: workers.map(processCpuMs),
        postgres: treeCpuMs(postmaster),
        redis: await redisCpu(),
        receiver: processCpuMs(receiver.pid),
      });
      const backends = new Map<string, number>();
      let backendsPeak = 0;
      let redisClientsPeak = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const { rows: apps } = await monitor.query<{ app: string; n: number }>(
            `SELECT application_name AS app, count(*)::int AS n FROM pg_stat_activity
             WHERE backend_type = 'client backend' AND usename <> $1 GROUP BY 1`,
            [MONITOR_ROLE],
          );
          let all = 0;
          for (const { app, n } of apps) {
            // The schema's random name out of it: `<schema>-workers` → `<schema>-workers`.
            const name = app.replace(schema, '<schema>');
            backends.set(name, Math.max(backends.get(name) ?? 0, n));
            all += n;
          }
          backendsPeak = Math.max(backendsPeak, all);
          const clients = Number((await redisInfo(admin)).get('connected_clients'));
          redisClientsPeak = Math.max(redisClientsPeak, clients - 1); // not this one
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })();
      const stored = async () =>
        Number(
          (
            await monitor.query<{ bytes: string }>(
              `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relkind = 'r' AND (n.nspname = $1 OR n.nspname LIKE '%\\_queues')`,
              [schema],
            )
          ).rows[0]!.bytes,
        );
      const storedBefore = await stored();
      const before = await sample();
      await body();
      const after = await sample();
      sampling = false;
      await sampler;
      const { rows: total } = await monitor.query<{ calls: string; rows: string; wal: string }>(
        `SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(rows), 0) AS rows,
           coalesce(sum(wal_bytes), 0) AS wal
         FROM public.pg_stat_statements
         WHERE userid <> (SELECT oid FROM pg_roles WHERE rolname = $1)`,
        [MONITOR_ROLE],
      );
      const { rows: top } = await monitor.query<{
        query: string;
        calls: string;
        rows: string;
        wal: string;
        fpi: string;
        exec_ms: number;
      }>(
        `SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 80) AS query, calls, rows,
           wal_bytes AS wal, wal_fpi AS fpi, total_exec_time AS exec_ms
         FROM public.pg_stat_statements
         WHERE userid <> (SELECT oid FROM pg_roles WHERE rolname = $1)
         ORDER BY total_exec_time DESC LIMIT 12`,
        [MONITOR_ROLE],
      );
      const { rows: wal } = await monitor.query<{ bytes: string }>(
        'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS bytes',
        [lsn],
      );
      const info = await redisInfo(admin);
      const redisTop: [string, number][] = [];
      for (const [key, value] of info) {
        if (!key.startsWith('cmdstat_')) continue;
        const command = key.slice('cmdstat_'.length);
        // The bench's own: INFO for these figures, CONFIG RESETSTAT.
        if (/^(info|config|ping|client)\b/.test(command)) continue;
        redisTop.push([command, Number(/calls=(\d+)/.exec(value)?.[1] ?? 0)]);
      }
      redisTop.sort((a, b) => b[1] - a[1]);
      const cost: Cost = {
        cpu: {
          bench: after.bench - before.bench,
          workers: after.workers.map((ms, i) => ms - before.workers[i]!),
          postgres: treeCpuDelta(before.postgres, after.postgres),
          redis: after.redis - before.redis,
          receiver: after.receiver - before.receiver,
        },
        statements: {
          calls: Number(total[0]!.calls),
          rows: Number(total[0]!.rows),
          walBytes: Number(total[0]!.wal),
        },
        top: top.map((r) => ({
          query: r.query,
          calls: Number(r.calls),
          rows: Number(r.rows),
          walBytes: Number(r.wal),
          walFpi: Number(r.fpi),
          execMs: Number(r.exec_ms),
        })),
        walBytes: Number(wal[0]!.bytes),
        redisCalls: redisTop.reduce((sum, [, calls]) => sum + calls, 0),
        redisTop,
        backends,
        backendsPeak,
        redisClientsPeak,
        storedBytes: (await stored()) - storedBefore,
      };
      return cost;
    };

    /** `count` one-event POSTs paced at LATENCY_RATE; the times to the 202, sorted (ms). */
    const postPaced = async (
      url: string,
      count: number,
      prefix: string,
      onSend: (recordId: string) => void = () => undefined,
    ): Promise<number[]> => {
      const posts: Promise<void>[] = [];
      const answers: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < count; i++) {
        const wait = t0 + (i * 1000) / LATENCY_RATE - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const recordId = randomId(prefix);
        onSend(recordId);
        const postedAt = performance.now();
        posts.push(
          postEvents(url, token, [itemEvent('update', 0, recordId)]).then(() => {
            answers.push(performance.now() - postedAt);
          }),
        );
      }
      await Promise.all(posts);
      return answers.sort((a, b) => a - b);
    };

    /** One event per POST at LATENCY_RATE, one webhook each: POST sent → delivery received. */
    const latencyRun = async (url: string, workers: readonly number[]) => {
      await settle();
      await postPaced(url, LATENCY_RATE, 'warm'); // a second, unmeasured
      await settle();
      await receiver.mode(true);
      const sent = new Map<string, number>();
      const total = LATENCY_RATE * LATENCY_SECONDS;
      let arrivals: [string, number][] = [];
      const cost = await measure(workers, async () => {
        await postPaced(url, total, 'lat', (id) => sent.set(id, now()));
        const deadline = Date.now() + 60_000;
        while (arrivals.length < total && Date.now() < deadline) {
          arrivals = (await receiver.stats()).arrivals;
          if (arrivals.length < total) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await settle();
      });
      await receiver.mode(false);
      const latencies = arrivals
        .filter(([id]) => sent.has(id))
        .map(([id, at]) => at - sent.get(id)!)
        .sort((a, b) => a - b);
      return {
        p50: quantile(latencies, 0.5),
        p99: quantile(latencies, 0.99),
        received: latencies.length,
        total,
        cost,
      };
    };

    /** CAPACITY_EVENTS events of FANOUT webhooks each, to `url`, measured. */
    const fanOutRun = async (url: string, workers: readonly number[]) => {
      const before = (await receiver.stats()).count;
      let seconds = 0;
      const cost = await measure(workers, async () => {
        const started = performance.now();
        await postInBatches(url, token, fanOut(EVENTS), BATCH);
        await receiver.waitFor(before + EVENTS * FANOUT);
        seconds = (performance.now() - started) / 1000;
        await settle();
      });
      return { seconds, cost };
    };

    let bodyBytes = 0;
    for (const mode of MODES) {
      let url = redisHerald.url;
      let prefix = deps.redisPrefix;
      let closeMode = () => Promise.resolve();
      if (mode === 'postgres') {
        const postgresOnly = await servePostgresOnlyIngest(testDb.db, deps, logger);
        url = postgresOnly.server.url;
        prefix = postgresOnly.coordination.prefix;
        closeMode = () => postgresOnly.close();
      }
      try {
        for (const n of counts) {
          process.stdout.write(`${mode}, ${n} delivery process(es): starting…\n`);
          const workers = await Promise.all(
            Array.from({ length: n }, () =>
              WorkersProcess.start({
                ...process.env,
                BENCH_SCHEMA: schema,
                BENCH_COORDINATION: mode,
                REDIS_PREFIX: prefix,
                SSRF_ALLOW_CIDRS: '127.0.0.0/8',
              }),
            ),
          );
          try {
            const pids = workers.map((w) => w.pid);
            // Warm-up (JIT, pools, connections), unmeasured.
            await postInBatches(url, token, fanOut(100), BATCH);
            await settle();
            if (!bodyBytes) {
              bodyBytes = (await receiver.stats()).bytes;
              process.stdout.write('baseline: raw undici…\n');
              await baseline(receiver.url, bodyBytes, settings.connectionsPerOrigin, 2000);
              const cpu0 = process.cpuUsage();
              const receiver0 = processCpuMs(receiver.pid);
              const raw = await baseline(
                receiver.url,
                bodyBytes,
                settings.connectionsPerOrigin,
                EVENTS * FANOUT,
              );
              const cpu1 = process.cpuUsage(cpu0);
              rows.push({
                label: `baseline: raw undici request(), ${settings.connectionsPerOrigin} in flight`,
                mode: 'baseline',
                processes: 1,
                events: EVENTS,
                deliveries: EVENTS * FANOUT,
                seconds: raw.seconds,
                cost: emptyCost(
                  (cpu1.user + cpu1.system) / 1000,
                  processCpuMs(receiver.pid) - receiver0,
                ),
              });
            }
            process.stdout.write(`${mode}, ${n}: ${EVENTS} events × ${FANOUT} webhooks…\n`);
            const fan = await fanOutRun(url, pids);
            process.stdout.write(`${mode}, ${n}: latency at ${LATENCY_RATE} events/s…\n`);
            const latency = await latencyRun(url, pids);
            process.stdout.write(`${mode}, ${n}: idle for ${IDLE_SECONDS} s…\n`);
            await settle();
            const idle = await measure(
              pids,
              () => new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000)),
            );
            rows.push({
              label: `Herald, ${mode === 'redis' ? 'Redis' : 'Postgres only'}, ${n} delivery process${n > 1 ? 'es' : ''}`,
              mode,
              processes: n,
              events: EVENTS,
              deliveries: EVENTS * FANOUT,
              seconds: fan.seconds,
              cost: fan.cost,
              latency,
              idle,
            });
          } finally {
            await Promise.all(workers.map((w) => w.stop()));
          }
        }
      } finally {
        await closeMode();
      }
    }

    // The floor (./floor.ts): the same fan-out by hand (node:http + pg + undici) into the same
    // tables, in this process: the least this work can cost on these servers.
    process.stdout.write('floor: fan-out…\n');
    const floor = await startFloor({
      connectionString: TEST_DATABASE_URL,
      schema,
      token,
      receiver,
      bodyBytes,
      connections: settings.connectionsPerOrigin,
      poolSize: config.DB_POOL_SIZE,
      postBatches: (url, events) => postInBatches(url, token, events, BATCH),
    });
    try {
      await floor.fanOutRun(fanOut(100), 100 * FANOUT);
      let seconds = 0;
      const cost = await measure([], async () => {
        const run = await floor.fanOutRun(fanOut(EVENTS), EVENTS * FANOUT);
        seconds = run.seconds;
      });
      rows.push({
        label: "floor: by hand (node:http + pg + undici) in Herald's tables, one process",
        mode: 'baseline',
        processes: 1,
        events: EVENTS,
        deliveries: EVENTS * FANOUT,
        seconds,
        cost,
      });
    } finally {
      await floor.close();
    }

    const loadAfter = loadavg();
    printTables(rows, {
      settings: `DELIVERY_CONCURRENCY=${settings.deliverConcurrency}, MATCH_CONCURRENCY=${settings.matchConcurrency}, DELIVERY_CONNECTIONS_PER_ORIGIN=${settings.connectionsPerOrigin}, DB_POOL_SIZE=${config.DB_POOL_SIZE}, DELIVERY_SYNCHRONOUS_COMMIT=${config.DELIVERY_SYNCHRONOUS_COMMIT}. PostgreSQL: ${serverSettings.map((r) => `${r.name}=${r.setting}`).join(', ')}; Redis ${redisVersion}`,
      bodyBytes,
      load: `machine: ${cpus().length} cores; load average before ${loadText(loadBefore)}, after ${loadText(loadAfter)} (other work on the machine slows every rate; CPU per event moves far less)`,
    });
  } finally {
    for (const server of servers) await server.close();
    await receiver.stop();
    await deps.eventMatchQueue.close();
    await deps.deliverQueue.close();
    await redis.quit();
    await admin.quit();
    await monitor.close();
    await testDb.cleanup();
  }
}

function emptyCost(bench: number, receiver: number): Cost {
  return {
    cpu: { bench, workers: [], postgres: 0, redis: 0, receiver },
    statements: { calls: 0, rows: 0, walBytes: 0 },
    top: [],
    walBytes: 0,
    redisCalls: 0,
    redisTop: [],
    backends: new Map(),
    backendsPeak: 0,
    redisClientsPeak: 0,
    storedBytes: 0,
  };
}

function printTables(
  rows: Row[],
  about: { settings: string; bodyBytes: number; load: string },
): void {
  const ms = (v: number) => v.toFixed(2);
  const perEvent = (r: Row, v: number) => v / r.events;
  const workersCpu = (c: Cost) => c.cpu.workers.reduce((a, b) => a + b, 0);
  const heraldCpu = (c: Cost) => c.cpu.bench + workersCpu(c) + c.cpu.postgres + c.cpu.redis;
  const out: string[] = [
    `Capacity: ${EVENTS} events × ${FANOUT} webhooks (${EVENTS * FANOUT} deliveries) to one local node:http receiver (child process) answering 200; body ${about.bodyBytes} B; ` +
      `ingest app and poster in the bench process, the delivery workers in N child processes; servers of the bench's own (PostgreSQL with fsync on, redis-server). ${about.settings}.`,
    '',
    table(
      [
        'run',
        'delivered/s',
        'events/s',
        'CPU ms per event: ingest+poster',
        'workers (each process)',
        'Postgres (whole cluster)',
        'Redis',
        'receiver',
        "Herald's total",
        'e2e p50 / p99 ms at 200 events/s',
      ],
      rows.map((r) => {
        const c = r.cost!;
        return [
          r.label,
          (r.deliveries / r.seconds).toFixed(0),
          (r.events / r.seconds).toFixed(0),
          ms(perEvent(r, c.cpu.bench)),
          c.cpu.workers.length
            ? `${ms(perEvent(r, workersCpu(c)))} (${c.cpu.workers.map((w) => ms(perEvent(r, w))).join(' + ')})`
            : '',
          r.mode === 'baseline' && !c.cpu.postgres ? '' : ms(perEvent(r, c.cpu.postgres)),
          r.mode === 'baseline' && !c.cpu.redis ? '' : ms(perEvent(r, c.cpu.redis)),
          ms(perEvent(r, c.cpu.receiver)),
          ms(perEvent(r, heraldCpu(c))),
          r.latency
            ? `${r.latency.p50.toFixed(1)} / ${r.latency.p99.toFixed(1)}${r.latency.received < r.latency.total ? ` (${r.latency.received}/${r.latency.total})` : ''}`
            : '',
        ];
      }),
    ),
    `What each event cost the servers: the fan-out rows above (${FANOUT} deliveries an event, ${BATCH} events a POST), then the latency runs (one event a POST, one delivery an event)`,
    '',
    table(
      [
        'run',
        'Postgres statements per event',
        'rows',
        'WAL bytes (statements)',
        'WAL bytes (cluster)',
        'bytes stored (tables + indexes)',
        'Redis commands',
        'peak Postgres client backends',
        'peak Redis clients',
      ],
      [
        ...rows
          .filter((r) => r.cost!.statements.calls > 0)
          .map((r) => [r.label, r.cost!, r.events] as const),
        ...rows
          .filter((r) => r.latency)
          .map((r) => [`${r.label}, latency run`, r.latency!.cost, r.latency!.total] as const),
      ].map(([label, c, events]) => [
        label,
        (c.statements.calls / events).toFixed(2),
        (c.statements.rows / events).toFixed(1),
        (c.statements.walBytes / events).toFixed(0),
        (c.walBytes / events).toFixed(0),
        (c.storedBytes / events).toFixed(0),
        (c.redisCalls / events).toFixed(1),
        String(c.backendsPeak),
        String(c.redisClientsPeak),
      ]),
    ),
    `The latency runs (${LATENCY_RATE} events/s, one event a POST, one webhook each): CPU ms per event`,
    '',
    table(
      ['run', 'ingest+poster', 'workers (each process)', 'Postgres', 'Redis', "Herald's total"],
      rows
        .filter((r) => r.latency)
        .map((r) => {
          const c = r.latency!.cost;
          const per = (v: number) => ms(v / r.latency!.total);
          return [
            r.label,
            per(c.cpu.bench),
            `${per(workersCpu(c))} (${c.cpu.workers.map(per).join(' + ')})`,
            per(c.cpu.postgres),
            per(c.cpu.redis),
            per(heraldCpu(c)),
          ];
        }),
    ),
    `Idle for ${IDLE_SECONDS} s after each run (no events): CPU ms per second`,
    '',
    table(
      ['run', 'workers (each process)', 'Postgres', 'Redis', 'bench process'],
      rows
        .filter((r) => r.idle)
        .map((r) => {
          const c = r.idle!;
          const per = (v: number) => (v / IDLE_SECONDS).toFixed(0);
          return [
            r.label,
            `${per(workersCpu(c))} (${c.cpu.workers.map(per).join(' + ')})`,
            per(c.cpu.postgres),
            per(c.cpu.redis),
            per(c.cpu.bench),
          ];
        }),
    ),
  ];
  const statements = (r: Row) =>
    table(
      ['statement', 'calls', 'rows', 'WAL bytes', 'of which full-page images', 'µs executing'],
      r.cost!.top.map((s) => [
        s.query.replace(/\|/g, '\\|'),
        perEvent(r, s.calls).toFixed(2),
        perEvent(r, s.rows).toFixed(2),
        perEvent(r, s.walBytes).toFixed(0),
        perEvent(r, s.walFpi).toFixed(2),
        ((s.execMs * 1000) / r.events).toFixed(0),
      ]),
    );
  // The largest run of each mode, statement by statement and command by command; the floor's.
  for (const mode of ['redis', 'postgres', 'baseline'] as const) {
    const r = rows.filter((x) => x.mode === mode && x.cost!.statements.calls > 0).at(-1);
    if (!r) continue;
    const c = r.cost!;
    out.push(
      `${r.label}: Postgres's statements with the most execution time (pg_stat_statements), per event`,
      '',
      statements(r),
    );
    if (mode === 'baseline') continue;
    out.push(
      `${r.label}: Postgres client backends at most, by application_name`,
      '',
      table(
        ['application_name', 'backends'],
        [...c.backends].sort((a, b) => b[1] - a[1]).map(([app, n]) => [app || '(none)', String(n)]),
      ),
    );
    if (c.redisCalls > 0) {
      out.push(
        `${r.label}: Redis commands per event (INFO commandstats)`,
        '',
        table(
          ['Redis command', 'calls per event'],
          c.redisTop.slice(0, 12).map(([cmd, calls]) => [cmd, perEvent(r, calls).toFixed(2)]),
        ),
      );
    }
  }
  out.push(about.load);
  process.stdout.write(`\n${out.join('\n')}\n`);
}

/**
 * bench:delivery --processes: starts the servers of the bench's own, runs the sweep in a child of
 * this script pointed at them, deletes them.
 */
export async function capacity(counts: number[]): Promise<void> {
  if (process.env['BENCH_MONITOR_DATABASE_URL']) return sweep(counts);
  process.stdout.write('starting a PostgreSQL cluster and a redis-server of the bench’s own…\n');
  const servers = await startOwnServers();
  try {
    const child = fork(process.argv[1]!, process.argv.slice(2), {
      stdio: 'inherit',
      env: { ...process.env, ...servers.env, PROCESSES: counts.join(',') },
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) process.exitCode = code ?? 1;
  } finally {
    await servers.stop();
  }
}
