/**
 * Delivery throughput and latency (issue 6), beside a baseline measured in the same run against
 * the same receiver: a raw node:http server answering 200, in a CHILD process (its own event
 * loop, the same for every row). The baseline client, the Herald ingest app, the delivery workers
 * and the event poster share THIS process (as in the single-process mode). Same body size and
 * the same connection count (DELIVERY_CONNECTIONS_PER_ORIGIN) for the baseline and for Herald.
 *
 *   pnpm bench:delivery      (EVENTS=6000 FANOUT_EVENTS=600 BATCH=250 LATENCY_SECONDS=5
 *                             LATENCY_WARMUP_SECONDS=1)
 *   pnpm bench:delivery --flow   (or FLOW_ONLY=1): only the flow control rows (./flow.ts), which
 *                                the default run prints last
 *   pnpm bench:delivery --no-flow   (or FLOW=0): all but the flow control rows
 *   pnpm bench:delivery --processes 1,2,3   (or PROCESSES=1,2,3): instead of all that, the
 *                                           capacity sweep (./capacity.ts, docs/scaling.md)
 *   pnpm bench:delivery --destinations rabbitmq,nats   (or DESTINATIONS=…; empty: all four):
 *                                           only the broker destination rows (./destinations.ts),
 *                                           which the default run prints before the flow rows
 *
 * Beside Herald's latency runs, the floor (./floor.ts): the same one-event POSTs, stored, matched,
 * delivered and logged by hand (node:http + pg + undici) in Herald's tables, in this process,
 * counted the same way; the table prints Herald's CPU per event as a multiple of the floor's. And
 * beside Herald's fan-out rows, the floor's fan-out: the same events posted the same way, by hand
 * into the same tables; the table prints Herald's delivered/s as a multiple of the floor's.
 *
 * Herald runs with the production defaults of services/delivery/src/config.ts (override any
 * DELIVERY_* variable in the environment), on a fresh Postgres schema and a random Redis prefix.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { backendPids, cpuPer, processCpuMs, sampleCpu, type CpuSample } from '../lib/cpu.js';
import {
  POSTS_IN_FLIGHT,
  itemEvent,
  itemWebhook,
  modelEvent,
  postEvents,
  postInBatches,
} from './fixtures.js';
import { capacity, processCounts } from './capacity.js';
import { servePostgresOnlyIngest } from './postgres-only.js';
import { WorkersProcess } from './workers-process.js';
import { startFloor, type FloorFanOutRun, type FloorRun } from './floor.js';
import {
  destinationKinds,
  destinationRows,
  BROKER_KINDS,
  type BrokerKind,
} from './destinations.js';
import { flowRows, prepareFlow } from './flow.js';
import { matchingBench, matchingRows } from './matching.js';
import { ReceiverProcess, baseline } from '../lib/receiver-process.js';
import { parseCidrList } from '@herald/contract';
import {
  deliverySettings,
  loadConfig,
  startDelivery,
  type DeliverySettings,
} from '@herald/delivery';
import { createApp } from '@herald/ingest';
import {
  createLogger,
  createMetrics,
  LocalMatchHandOff,
  queuePrefix,
  type Logger,
  type Redis,
} from '@herald/runtime';
import { insertWebhook, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  createTestDb,
  createTestToken,
  randomId,
  serve,
  testDeps,
  testRedis,
  type TestDb,
  type TestDeps,
  type TestServer,
} from '@herald/testkit';
import { productionHttp } from '../lib/http.js';
import { sampleActivity } from '../lib/pg-activity.js';
import { table as markdownTable } from '../lib/table.js';
import { CpuProfiler, profileTable } from '../lib/cpu-profile.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SqlTimings } from '../lib/sql-timings.js';
import { resetStatements, statementsTable } from '../lib/pg-statements.js';

const EVENTS = Number(process.env['EVENTS'] ?? 6000);
const FANOUT_EVENTS = Number(process.env['FANOUT_EVENTS'] ?? 600);
const BATCH = Number(process.env['BATCH'] ?? 250);
const LATENCY_RATE = 200;
const LATENCY_SECONDS = Number(process.env['LATENCY_SECONDS'] ?? 5);
const LATENCY_WARMUP_SECONDS = Number(process.env['LATENCY_WARMUP_SECONDS'] ?? 1);
/** Only the flow control rows (./flow.ts): FLOW_ONLY=1 or --flow. */
/**
 * Where to write a CPU profile of this process over each latency run (one event per request:
 * ingest, and the workers in "one process"), printed after the table, and over each fan-out run
 * (10 webhooks per event; written only); unset: no profiling.
 */
const PROFILE_DIR = process.env['BENCH_CPU_PROF'];
/**
 * BENCH_SQL_TIMINGS=1: the workers' statements timed, and what Herald's backends do sampled, over
 * each latency run with the workers in this process; printed after the table.
 */
const sqlTimings = process.env['BENCH_SQL_TIMINGS'] === '1' ? new SqlTimings() : undefined;
/**
 * BENCH_PG_STATEMENTS=1: pg_stat_statements over each latency run (lib/pg-statements.ts; needs a
 * server with the library preloaded), printed after the table.
 */
const PG_STATEMENTS = process.env['BENCH_PG_STATEMENTS'] === '1';
/** BENCH_PLAN_ONCE=0: the workers without their plan-once pool (services/delivery, openWorkerDb). */
const PLAN_ONCE = process.env['BENCH_PLAN_ONCE'] !== '0';
const FLOW_ONLY = process.env['FLOW_ONLY'] === '1' || process.argv.includes('--flow');
/** All but the flow control rows: FLOW=0 or --no-flow. */
const NO_FLOW = process.env['FLOW'] === '0' || process.argv.includes('--no-flow');
const MODELS_A = 50; // scenario A: one webhook per model, events spread over the models
const MODELS_B = 10; // scenario B: ten webhooks per model
const FANOUT = 10;
/** Delivery service processes beside the ingest process in the second shape. */
const WORKER_PROCESSES = Number(process.env['WORKER_PROCESSES'] ?? 1);
const SPLIT_SHAPE = WORKER_PROCESSES === 1 ? 'two processes' : `1 + ${WORKER_PROCESSES} processes`;
/** The single process on Postgres alone (REDIS_URL unset). */
const POSTGRES_SHAPE = 'one process, Postgres only';

const now = () => performance.timeOrigin + performance.now();

/** The application_name of the workers' Postgres pool (./workers.ts too), to count it apart. */
const WORKERS_POOL = (schema: string) => `${schema}-workers`;

// ---------------------------------------------------------------------------------------------
// The receiver (child process)
// ---------------------------------------------------------------------------------------------

/** CPU by process group, with the workers' process apart (0 when they run in this process). */
type Cpu = CpuSample & { workers: number };

function cpuPerUnit(before: Cpu, after: Cpu, units: number): Cpu {
  return { ...cpuPer(before, after, units), workers: (after.workers - before.workers) / units };
}

/** Herald's CPU of a run, all its processes added up: this one, the workers', Postgres, Redis. */
const heraldCpu = (c: Cpu): number => c.bench + c.workers + c.postgres + c.redis;

/**
 * Runs `run` while another process keeps one core busy (issue #16: the p99 at 200 events/s with
 * other work on the machine): a node process spinning until `run` ends.
 */
async function withBusyCore<T>(run: () => Promise<T>): Promise<T> {
  const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  try {
    return await run();
  } finally {
    const exited = new Promise((resolve) => spinner.once('exit', resolve));
    spinner.kill('SIGKILL');
    await exited;
  }
}

// ---------------------------------------------------------------------------------------------
// Herald
// ---------------------------------------------------------------------------------------------

/** Deletes the run's keys: the queues' (completed match jobs are kept), limits, slots. */
async function dropRedisKeys(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [`${queuePrefix(prefix)}*`, `${prefix}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

// ---------------------------------------------------------------------------------------------

/** What every section of the bench runs against. */
interface Harness {
  receiver: ReceiverProcess;
  testDb: TestDb;
  redis: Redis;
  /** With the hand-off of "one process": the workers in this process match what it ingests. */
  deps: TestDeps & { localMatch: LocalMatchHandOff };
  settings: DeliverySettings;
  herald: TestServer;
  token: string;
  workerDb: Db;
  logger: Logger;
  /** The workers' pool size (DB_POOL_SIZE), the floor's workers pool's too. */
  poolSize: number;
}

/** The delivery rows (throughput, latency, matching), in both shapes, and their table. */
async function deliveryRows(
  h: Harness,
  matching: ReturnType<typeof matchingBench>,
  loadBefore: number[],
): Promise<void> {
  const { receiver, testDb, deps, settings, token, workerDb, logger } = h;
  /** Where events are posted: the Redis mode's app, then the Postgres-only one's. */
  let herald = h.herald;
  // Models, then webhooks (stored before the workers start, so the index loads them at once).
  await postEvents(
    herald.url,
    token,
    Array.from({ length: MODELS_A }, (_, i) => modelEvent(i)),
  );
  for (let m = 0; m < MODELS_A; m++) {
    await insertWebhook(testDb.db, itemWebhook(receiver.url, `a-${m}`, ['update'], m));
  }
  for (let m = 0; m < MODELS_B; m++) {
    for (let k = 0; k < FANOUT; k++) {
      await insertWebhook(testDb.db, itemWebhook(receiver.url, `b-${m}-${k}`, ['publish'], m));
    }
  }
  const scenarioA = (count: number) =>
    Array.from({ length: count }, (_, i) => itemEvent('update', i % MODELS_A, randomId('r')));
  const scenarioB = (count: number) =>
    Array.from({ length: count }, (_, i) => itemEvent('publish', i % MODELS_B, randomId('r')));

  // This run's own backends (other work on the machine may use Postgres too), read again
  // whenever the workers' pool changes.
  let backends: number[] = [];
  let workersPids: number[] = [];
  /** The workers' backends among `backends` (their pools are named apart: WORKERS_POOL). */
  let workerBackends = new Set<number>();
  const ownBackends = async () => {
    const workers = await backendPids(testDb.db, WORKERS_POOL(testDb.schema!));
    workerBackends = new Set(workers);
    return backendPids(testDb.db, testDb.schema!);
  };
  const cpuNow = (): Cpu => ({
    ...sampleCpu([receiver.pid], backends),
    workers: workersPids.reduce((sum, pid) => sum + processCpuMs(pid), 0),
  });
  const run = async (events: unknown[], expected: number) => {
    const before = (await receiver.stats()).count;
    backends = await ownBackends();
    const cpu = cpuNow();
    const started = performance.now();
    await postInBatches(herald.url, token, events, BATCH);
    const posted = (performance.now() - started) / 1000;
    await receiver.waitFor(before + expected);
    const seconds = (performance.now() - started) / 1000;
    // CPU per 1000 deliveries (the receiver's polling for its count included).
    return {
      count: expected,
      seconds,
      posted,
      cpuPer1000: cpuPerUnit(cpu, cpuNow(), expected / 1000),
    };
  };
  const warmUp = async () => {
    await run(scenarioA(500), 500);
    await run(scenarioB(50), 50 * FANOUT);
    backends = await ownBackends();
  };

  /**
   * Waits until the previous run's work is done in Herald too (the receiver counts a delivery
   * before its outcome is written): every event matched, no call pending. The latency run then
   * measures Herald at 200 events/s, not the tail of the throughput run before it.
   */
  const settle = async () => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await testDb.db.query<{ busy: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM events WHERE matched_at IS NULL)
           OR EXISTS (SELECT 1 FROM webhook_calls WHERE status = 'pending') AS busy`,
      );
      if (!rows[0]?.busy) return;
      if (Date.now() > deadline) throw new Error('Herald did not finish the previous run');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /**
   * Posts `count` one-event requests at a paced LATENCY_RATE to `url` (Herald's, or the floor's),
   * telling `onSend` each record id as its POST goes; resolves with the times to the 202 (ms),
   * sorted.
   */
  const postPaced = async (
    count: number,
    prefix: string,
    onSend: (recordId: string) => void = () => undefined,
    url = herald.url,
  ): Promise<number[]> => {
    const posts: Promise<void>[] = [];
    const answers: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < count; i++) {
      const due = t0 + (i * 1000) / LATENCY_RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const recordId = randomId(prefix);
      onSend(recordId);
      const postedAt = performance.now();
      posts.push(
        postEvents(url, token, [itemEvent('update', i % MODELS_A, recordId)]).then(() => {
          answers.push(performance.now() - postedAt);
        }),
      );
    }
    await Promise.all(posts);
    return answers.sort((a, b) => a - b);
  };

  /**
   * One event per POST /events at a paced LATENCY_RATE; latency from POST sent to arrival. A
   * warm-up at the same rate comes first, unmeasured: in the first second after the batched
   * runs, one-event requests met one-off costs (a stall of ~100 ms, code paths new to the
   * process) that a service running at 200 events/s has long paid.
   */
  const latencyRun = async (shape: string) => {
    await settle();
    await postPaced(LATENCY_RATE * LATENCY_WARMUP_SECONDS, 'warm');
    await settle();
    await receiver.mode(true);
    const prefix = `lat${shape.replace(/[^a-z]/g, '')}`;
    const sent = new Map<string, number>();
    const total = LATENCY_RATE * LATENCY_SECONDS;
    backends = await ownBackends();
    const profiler = PROFILE_DIR ? new CpuProfiler() : undefined;
    await profiler?.start();
    sqlTimings?.reset();
    if (PG_STATEMENTS) await resetStatements(testDb.db);
    const activity = sqlTimings ? sampleActivity(testDb.db, testDb.schema!) : undefined;
    // How long this process's event loop could not run what was ready (GC, long tasks): a tail
    // of the latency that no statement or request explains.
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    loopDelay.enable();
    const cpu = cpuNow();
    const answers = await postPaced(total, prefix, (recordId) => sent.set(recordId, now()));
    let arrivals: [string, number][] = [];
    const deadline = Date.now() + 60_000;
    while (arrivals.length < total && Date.now() < deadline) {
      arrivals = (await receiver.stats()).arrivals;
      if (arrivals.length < total) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const after = cpuNow();
    loopDelay.disable();
    const loopMs = (ns: number) => (ns / 1e6).toFixed(1);
    const loop = `${loopMs(loopDelay.percentile(99))} / ${loopMs(loopDelay.max)}`;
    const cpuPer1000 = cpuPerUnit(cpu, after, total / 1000);
    // Postgres's share by pool: the ingest app's, the workers'.
    const postgres = { ingest: 0, workers: 0 };
    for (const [pid, ms] of after.postgresByPid) {
      const used = (ms - (cpu.postgresByPid.get(pid) ?? 0)) / (total / 1000);
      postgres[workerBackends.has(pid) ? 'workers' : 'ingest'] += used;
    }
    const states = await activity?.stop();
    const statements = PG_STATEMENTS
      ? `Postgres's statements (pg_stat_statements), latency run, ${shape}:\n\n${await statementsTable(testDb.db, total, 'event')}`
      : undefined;
    // The workers' statements when they run in this process (the other shape's are not timed).
    const sql =
      sqlTimings && states && !shape.startsWith(SPLIT_SHAPE)
        ? `The workers' statements, latency run, ${shape}:\n\n${sqlTimings.table(total, 'event')}\n\n` +
          markdownTable(
            [
              "Herald's backends (pg_stat_activity every 20 ms; running: on a CPU)",
              'mean backends',
            ],
            states
              .filter((state) => state.mean >= 0.01)
              .map((state) => [state.what.replace(/\|/g, '\\|'), state.mean.toFixed(2)]),
          )
        : undefined;
    let profile: string | undefined;
    if (profiler) {
      mkdirSync(PROFILE_DIR!, { recursive: true });
      const summary = await profiler.stop(
        join(PROFILE_DIR!, `delivery-latency-${prefix}.cpuprofile`),
      );
      profile = `CPU profile of this process, latency run, ${shape}:\n\n${profileTable(summary, total, 'event')}`;
    }
    await receiver.mode(false);
    const latencies = arrivals
      .filter(([id]) => sent.has(id))
      .map(([id, at]) => at - sent.get(id)!)
      .sort((a, b) => a - b);
    // Where the latency goes: accepted → call created (match) → attempt sent (deliver).
    const { rows } = await testDb.db.query<{ matched: number; sent: number }>(
      `SELECT extract(epoch FROM c.created_at - e.accepted_at) * 1000 AS matched,
         extract(epoch FROM c.last_sent_at - c.created_at) * 1000 AS sent
       FROM webhook_calls c JOIN events e ON e.id = c.event_id
       WHERE e.entity_id LIKE $1 AND c.last_sent_at IS NOT NULL`,
      [`${prefix}%`],
    );
    const stage = (key: 'matched' | 'sent', q: number) =>
      quantile(
        rows.map((r) => Number(r[key])).sort((a, b) => a - b),
        q,
      ).toFixed(1);
    return {
      total,
      received: latencies.length,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      accepted: `${quantile(answers, 0.5).toFixed(1)} / ${quantile(answers, 0.99).toFixed(1)}`,
      matched: `${stage('matched', 0.5)} / ${stage('matched', 0.99)}`,
      delivered: `${stage('sent', 0.5)} / ${stage('sent', 0.99)}`,
      loop,
      cpuPer1000,
      postgres,
      profile,
      sql,
      statements,
    };
  };
  const shapeRuns = async (shape: string) => {
    process.stdout.write(`${shape}: 1 webhook per event…\n`);
    const one = await run(scenarioA(EVENTS), EVENTS);
    process.stdout.write(`${shape}: ${FANOUT} webhooks per event…\n`);
    const fanProfiler = PROFILE_DIR ? new CpuProfiler() : undefined;
    await fanProfiler?.start();
    const fan = await run(scenarioB(FANOUT_EVENTS), FANOUT_EVENTS * FANOUT);
    if (fanProfiler) {
      mkdirSync(PROFILE_DIR!, { recursive: true });
      await fanProfiler.stop(
        join(PROFILE_DIR!, `delivery-fanout-${shape.replace(/[^a-z]/g, '')}.cpuprofile`),
      );
    }
    process.stdout.write(`${shape}: latency at ${LATENCY_RATE} events/s…\n`);
    const latency = await latencyRun(shape);
    process.stdout.write(`${shape}: latency at ${LATENCY_RATE} events/s, one core kept busy…\n`);
    const busy = await withBusyCore(() => latencyRun(`${shape} busy`));
    return { one, fan, latency, busy };
  };

  // Shape 1: the workers in the process that ingests (npm start's standalone mode).
  const delivery = await startDelivery(
    {
      db: sqlTimings?.wrap(workerDb) ?? workerDb,
      coordination: deps.coordination,
      logger,
      registry: deps.metrics.registry,
      localMatch: deps.localMatch,
    },
    settings,
  );
  let single: Awaited<ReturnType<typeof shapeRuns>>;
  let raw: { count: number; seconds: number };
  let bodyBytes: number;
  try {
    // Warm-up (JIT, pools, connections), which also gives the body size of a delivery.
    process.stdout.write('warming up…\n');
    await warmUp();
    bodyBytes = (await receiver.stats()).bytes;
    process.stdout.write('baseline…\n');
    await baseline(receiver.url, bodyBytes, settings.connectionsPerOrigin, 2000);
    raw = await baseline(receiver.url, bodyBytes, settings.connectionsPerOrigin, EVENTS * 2);
    single = await shapeRuns('one process');
  } finally {
    await delivery.close();
  }

  // The same shape on Postgres alone (no REDIS_URL): the queues on BullMQ's PostgreSQL backend,
  // in-flight slots, rate limits and the channel in Postgres; same schema, same webhooks.
  const postgresOnly = await servePostgresOnlyIngest(testDb.db, deps, logger);
  const pgDelivery = await startDelivery(
    {
      db: sqlTimings?.wrap(workerDb) ?? workerDb,
      coordination: postgresOnly.coordination,
      logger,
      // Its own: the Redis mode's workers registered theirs in deps.metrics.
      registry: createMetrics({ defaultMetrics: false }).registry,
      localMatch: deps.localMatch,
    },
    settings,
  );
  let postgres: Awaited<ReturnType<typeof shapeRuns>>;
  try {
    herald = postgresOnly.server;
    process.stdout.write('Postgres only: warming up…\n');
    await warmUp();
    postgres = await shapeRuns(POSTGRES_SHAPE);
  } finally {
    herald = h.herald;
    await pgDelivery.close();
    await postgresOnly.close();
  }

  // The floor (./floor.ts): the same events by hand into the same tables, in this process.
  process.stdout.write(`floor: latency at ${LATENCY_RATE} events/s…\n`);
  const floor = await startFloor({
    connectionString: TEST_DATABASE_URL,
    schema: testDb.schema!,
    token,
    receiver,
    bodyBytes,
    connections: settings.connectionsPerOrigin,
    poolSize: h.poolSize,
    latency: {
      rate: LATENCY_RATE,
      seconds: LATENCY_SECONDS,
      warmupSeconds: LATENCY_WARMUP_SECONDS,
      post: (url, count, prefix, onSend) => postPaced(count, prefix, onSend, url),
    },
    postBatches: (url, events) => postInBatches(url, token, events, BATCH),
  });
  let floorRun: FloorRun;
  let floorBusy: FloorRun;
  let floorFan: FloorFanOutRun;
  try {
    floorRun = await floor.latencyRun();
    process.stdout.write(`floor: latency at ${LATENCY_RATE} events/s, one core kept busy…\n`);
    floorBusy = await withBusyCore(() => floor.latencyRun());
    // The fan-out, after a warm-up as Herald's (warmUp's fan-out part, unmeasured).
    process.stdout.write(`floor: ${FANOUT} webhooks per event…\n`);
    await floor.fanOutRun(scenarioB(50), 50 * FANOUT);
    floorFan = await floor.fanOutRun(scenarioB(FANOUT_EVENTS), FANOUT_EVENTS * FANOUT);
  } finally {
    await floor.close();
  }

  // Shape 2: the delivery service's workers in a process of their own (docker-compose).
  const workers = await Promise.all(
    Array.from({ length: WORKER_PROCESSES }, () =>
      WorkersProcess.start({
        ...process.env,
        BENCH_SCHEMA: testDb.schema!,
        REDIS_PREFIX: deps.redisPrefix,
        SSRF_ALLOW_CIDRS: '127.0.0.0/8',
      }),
    ),
  );
  let split: Awaited<ReturnType<typeof shapeRuns>>;
  try {
    workersPids = workers.map((w) => w.pid);
    await warmUp();
    split = await shapeRuns(SPLIT_SHAPE);
  } finally {
    workersPids = [];
    await Promise.all(workers.map((w) => w.stop()));
  }

  const loadAfter = loadavg();
  const rate = (r: { count: number; seconds: number }) => r.count / r.seconds;
  const rawRate = rate(raw);
  const cpuCells = (c: Cpu | undefined) =>
    c
      ? [c.bench, c.workers, c.postgres, c.redis, c.children].map((v) => v.toFixed(0)).join(' / ')
      : '';
  const row = (
    name: string,
    r: { count: number; seconds: number; posted?: number; cpuPer1000?: Cpu },
  ) =>
    `| ${name} | ${r.count} | ${r.posted === undefined ? '' : r.posted.toFixed(2)} | ${r.seconds.toFixed(2)} | ${Math.round(rate(r))} | ${(rate(r) / rawRate).toFixed(2)}× | ${cpuCells(r.cpuPer1000)} |`;
  const pass = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const shapes = [
    ['one process', single],
    [POSTGRES_SHAPE, postgres],
    [SPLIT_SHAPE, split],
  ] as const;
  /** The floor's fan-out in the columns of Herald's rows: no workers process, no Redis. */
  const floorFanRow = {
    ...floorFan,
    cpuPer1000: {
      bench: floorFan.cpuPer1000.bench,
      workers: 0,
      postgres: floorFan.cpuPer1000.postgres,
      redis: 0,
      children: floorFan.cpuPer1000.receiver,
      postgresByPid: new Map<number, number>(),
    },
  };
  /** The floor's CPU per delivery in its fan-out (ms): this process and its Postgres backends. */
  const floorFanCpu = (floorFan.cpuPer1000.bench + floorFan.cpuPer1000.postgres) / 1000;
  /** The floor's CPU per event (ms): this process and its Postgres backends (no Redis). */
  const floorCpu = (r: FloorRun) => (r.cpuPer1000.bench + r.cpuPer1000.postgres) / 1000;
  const floorRows = (r: FloorRun, busy: FloorRun) => [
    `| floor (by hand: node:http + pg + undici, Herald's tables, ./floor.ts): e2e latency at ${LATENCY_RATE} events/s, POST sent → received, p50 / p99 (${r.received}/${r.total} events${r.failures ? `, ${r.failures} failures` : ''}) | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} ms | |`,
    `| floor: of which POST sent → 202 received, p50 / p99 | ${r.accepted.p50.toFixed(1)} / ${r.accepted.p99.toFixed(1)} ms | |`,
    `| floor: CPU ms per 1000 events in its latency run: bench process (poster, server, client) / its Postgres backends (of which ingest pool / workers pool) | ${r.cpuPer1000.bench.toFixed(0)} / ${r.cpuPer1000.postgres.toFixed(0)} (${r.cpuPer1000.ingest.toFixed(0)} / ${r.cpuPer1000.workers.toFixed(0)}) | |`,
    `| floor (by hand: node:http + pg + undici, same tables): CPU per single event end to end (bench process, poster included, + Postgres) | ${floorCpu(r).toFixed(2)} ms | |`,
    ...shapes.map(
      ([name, h]) =>
        `| ${name}: Herald's CPU per single event end to end as a multiple of the floor's | ${(heraldCpu(h.latency.cpuPer1000) / 1000 / floorCpu(r)).toFixed(1)}× | ≤ 0.8× ${pass(heraldCpu(h.latency.cpuPer1000) / 1000 <= 0.8 * floorCpu(r))} |`,
    ),
    `| floor: e2e latency at ${LATENCY_RATE} events/s with one core kept busy by another process, p50 / p99 (${busy.received}/${busy.total} events${busy.failures ? `, ${busy.failures} failures` : ''}) | ${busy.p50.toFixed(1)} / ${busy.p99.toFixed(1)} ms | |`,
  ];
  const table = [
    `Delivery to one local node:http receiver (child process) answering 200; body ${bodyBytes} B; ` +
      `${settings.connectionsPerOrigin} connections; Herald: DELIVERY_CONCURRENCY=${settings.deliverConcurrency}, ` +
      `MATCH_CONCURRENCY=${settings.matchConcurrency}, events posted ${BATCH} per POST /events, ${POSTS_IN_FLIGHT} POSTs in flight. ` +
      `"one process": ingest and workers in the bench process (npm start), on Redis; "${POSTGRES_SHAPE}": the same without Redis (no REDIS_URL: queues, slots, limits and the channel in Postgres); "${SPLIT_SHAPE}": the workers in ${WORKER_PROCESSES} child process(es) (the delivery service, as deployed)`,
    '',
    '| run | requests delivered | all events accepted (s) | last delivery received (s) | delivered/s | vs baseline | CPU ms per 1000 deliveries: bench process (ingest, poster; workers in "one process") / workers process / Herald\'s Postgres backends / redis (all) / receiver |',
    '|---|---|---|---|---|---|---|',
    row(`baseline: raw undici request(), ${settings.connectionsPerOrigin} in flight`, raw),
    ...shapes.flatMap(([name, r]) => [
      row(`Herald, ${name}, 1 webhook per event (${MODELS_A} webhooks)`, r.one),
      row(`Herald, ${name}, ${FANOUT} webhooks per event (${MODELS_B * FANOUT} webhooks)`, r.fan),
    ]),
    row(
      `floor (by hand: node:http + pg + undici, Herald's tables, ./floor.ts), ${FANOUT} webhooks per event${floorFan.failures ? ` (${floorFan.failures} failures)` : ''}`,
      floorFanRow,
    ),
    '',
    `| measure | value | target |`,
    '|---|---|---|',
    ...shapes.flatMap(([name, r]) => [
      `| ${name}: e2e latency at ${LATENCY_RATE} events/s, POST sent → received, p50 (${r.latency.received}/${r.latency.total} events) | ${r.latency.p50.toFixed(1)} ms | |`,
      `| ${name}: e2e latency at ${LATENCY_RATE} events/s, POST sent → received, p99 | ${r.latency.p99.toFixed(1)} ms | ≤ 50 ms ${pass(r.latency.p99 <= 50)} |`,
      `| ${name}: of which POST sent → 202 received, p50 / p99 | ${r.latency.accepted} ms | |`,
      `| ${name}: the bench process's event loop delay, p99 / max | ${r.latency.loop} ms | |`,
      `| ${name}: of which accepted → call created (match), p50 / p99 | ${r.latency.matched} ms | |`,
      `| ${name}: of which call created → attempt sent (deliver), p50 / p99 | ${r.latency.delivered} ms | |`,
      `| ${name}: CPU ms per 1000 events in the latency run (columns as above) | ${cpuCells(r.latency.cpuPer1000)} | |`,
      `| ${name}: of which Postgres, by pool: ingest / workers (ms per 1000 events) | ${r.latency.postgres.ingest.toFixed(0)} / ${r.latency.postgres.workers.toFixed(0)} | |`,
      `| ${name}: CPU per single event end to end (latency run: POST of one event → match → one delivery → outcome), Herald's processes added up (the bench process includes the poster) | ${(heraldCpu(r.latency.cpuPer1000) / 1000).toFixed(2)} ms | as a multiple of the floor's, below |`,
      `| ${name}: e2e latency at ${LATENCY_RATE} events/s with one core kept busy by another process, p50 / p99 (${r.busy.received}/${r.busy.total} events) | ${r.busy.p50.toFixed(1)} / ${r.busy.p99.toFixed(1)} ms | p99 ≤ 150 ms ${pass(r.busy.p99 <= 150)} |`,
      `| ${name}: of which accepted → call created / call created → sent, p50 / p99, one core busy | ${r.busy.matched} / ${r.busy.delivered} ms | |`,
    ]),
    ...floorRows(floorRun, floorBusy),
    ...shapes.flatMap(([name, r]) => [
      `| ${name}: delivered/s, 1 webhook per event | ${Math.round(rate(r.one))} | ≥ 2000 ${pass(rate(r.one) >= 2000)}, ≥ 0.4× ${pass(rate(r.one) >= 0.4 * rawRate)} |`,
      `| ${name}: delivered/s, ${FANOUT} webhooks per event | ${Math.round(rate(r.fan))} | ≥ 2000 ${pass(rate(r.fan) >= 2000)}, ≥ 0.4× ${pass(rate(r.fan) >= 0.4 * rawRate)} |`,
    ]),
    `| ${POSTGRES_SHAPE} vs Redis (one process): delivered/s, 1 webhook per event | ${(rate(postgres.one) / rate(single.one)).toFixed(2)}× | ≥ 0.7× ${pass(rate(postgres.one) >= 0.7 * rate(single.one))} |`,
    `| ${POSTGRES_SHAPE} vs Redis (one process): delivered/s, ${FANOUT} webhooks per event | ${(rate(postgres.fan) / rate(single.fan)).toFixed(2)}× | ≥ 0.7× ${pass(rate(postgres.fan) >= 0.7 * rate(single.fan))} |`,
    `| floor: delivered/s, ${FANOUT} webhooks per event (by hand, Herald's tables and guarantees) | ${Math.round(rate(floorFan))} (${(rate(floorFan) / rawRate).toFixed(2)}× raw undici) | ≥ 0.4× ${pass(rate(floorFan) >= 0.4 * rawRate)} |`,
    `| floor: CPU per delivery in its fan-out (bench process + its Postgres backends; of which ingest pool / workers pool, ms per 1000 deliveries) | ${floorFanCpu.toFixed(3)} ms (${floorFan.cpuPer1000.ingest.toFixed(0)} / ${floorFan.cpuPer1000.workers.toFixed(0)}) | |`,
    ...shapes.flatMap(([name, r]) => [
      `| ${name}: fan-out: Herald's delivered/s as a multiple of the floor's | ${(rate(r.fan) / rate(floorFan)).toFixed(2)}× | ≥ 1.0× ${pass(rate(r.fan) >= rate(floorFan))} |`,
      `| ${name}: fan-out: Herald's CPU per delivery (its processes added up) as a multiple of the floor's | ${(heraldCpu(r.fan.cpuPer1000) / 1000 / floorFanCpu).toFixed(1)}× | |`,
    ]),
    '',
    ...matchingRows(matching),
    '',
    `machine: ${cpus().length} cores; load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, ` +
      `after ${loadAfter.map((l) => l.toFixed(2)).join(' ')} (other work on the machine slows every row)`,
  ];
  const profiles = shapes.flatMap(([, r]) => [
    r.latency.profile,
    r.busy.profile,
    r.latency.sql,
    r.busy.sql,
    r.latency.statements,
  ]);
  for (const profile of profiles) if (profile) table.push('', profile);
  process.stdout.write(`\n${table.join('\n')}\n`);
}

/** Prints a section's table with the machine's load average before it and now. */
function printSection(table: string[], loadBefore: number[]): void {
  const loadAfter = loadavg();
  table.push(
    '',
    `machine: ${cpus().length} cores; load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, ` +
      `after ${loadAfter.map((l) => l.toFixed(2)).join(' ')} (other work on the machine slows every row)`,
  );
  process.stdout.write(`\n${table.join('\n')}\n`);
}

/**
 * The flow control rows (./flow.ts), the workers in this process, started once the flow webhooks
 * are stored so that their index has them.
 */
async function flowSection(h: Harness): Promise<void> {
  const loadBefore = loadavg();
  const flow = {
    db: h.testDb.db,
    schema: h.testDb.schema!,
    receiver: h.receiver,
    heraldUrl: h.herald.url,
    token: h.token,
    registry: h.deps.metrics.registry,
    connectionsPerOrigin: h.settings.connectionsPerOrigin,
    maxInFlightPerWebhook: h.settings.maxInFlightPerWebhook,
    batch: BATCH,
    sqlTimings: process.env['BENCH_SQL_TIMINGS'] === '1' ? new SqlTimings() : undefined,
  };
  const ids = await prepareFlow(flow);
  const db = flow.sqlTimings?.wrap(h.workerDb) ?? h.workerDb;
  const delivery = await startDelivery(
    {
      db,
      coordination: h.deps.coordination,
      logger: h.logger,
      registry: h.deps.metrics.registry,
      localMatch: h.deps.localMatch,
    },
    h.settings,
  );
  let table: string[];
  try {
    table = await flowRows(flow, ids);
  } finally {
    await delivery.close();
  }
  printSection(table, loadBefore);
}

/** The broker destination rows (./destinations.ts), the workers in this process. */
async function destinationSection(h: Harness, kinds: readonly BrokerKind[]): Promise<void> {
  const loadBefore = loadavg();
  const table = await destinationRows(
    {
      receiverUrl: h.receiver.url,
      receiverPid: h.receiver.pid,
      db: h.testDb.db,
      schema: h.testDb.schema!,
      connectionString: TEST_DATABASE_URL,
      poolSize: h.poolSize,
      heraldUrl: h.herald.url,
      token: h.token,
      batch: BATCH,
      startWorkers: () =>
        startDelivery(
          {
            db: h.workerDb,
            coordination: h.deps.coordination,
            logger: h.logger,
            registry: h.deps.metrics.registry,
          },
          h.settings,
        ),
    },
    kinds,
  );
  printSection(table, loadBefore);
}

async function main(): Promise<void> {
  const processes = processCounts(process.argv);
  if (processes) return capacity(processes);
  const loadBefore = loadavg();
  /** Only the destination rows when --destinations names kinds; all four in the default run. */
  const onlyDestinations = destinationKinds(process.argv);
  const destinations = onlyDestinations ?? (FLOW_ONLY ? [] : BROKER_KINDS);
  const matching = FLOW_ONLY || onlyDestinations ? undefined : matchingBench();
  if (matching) process.stdout.write(`${matchingRows(matching).join('\n')}\n`);

  const receiver = await ReceiverProcess.start();
  const testDb = await createTestDb('postgres');
  const redis = testRedis();
  // Errors only (a 500's cause, a worker's failure), on stderr: the tables stay on stdout.
  const logger = createLogger({ name: 'bench', level: 'error', destination: process.stderr });
  // As in the single process (startRoles): what this process ingests, the workers it runs match
  // in memory; when they run elsewhere (the split shape), the ids go on the queue.
  const deps = {
    ...testDeps(testDb.db, redis, productionHttp()),
    logger,
    localMatch: new LocalMatchHandOff(),
  };
  const config = loadConfig({
    ...process.env,
    REDIS_PREFIX: deps.redisPrefix,
    SSRF_ALLOW_CIDRS: '127.0.0.0/8',
  });
  const settings = deliverySettings(config);
  const herald = await serve(createApp({ ...deps, ssrfAllowCidrs: parseCidrList('127.0.0.0/8') }));
  const token = await createTestToken(testDb.db, 'admin');
  // The workers' own pool, as services/delivery/src/main.ts opens it (DELIVERY_SYNCHRONOUS_COMMIT).
  const workerDb = testDb.connect({
    maxConnections: config.DB_POOL_SIZE,
    // As openWorkerDb: the hot statements on a pool where they are planned once (BENCH_PLAN_ONCE=0:
    // without it, to compare).
    planOncePoolSize: PLAN_ONCE ? config.DB_POOL_SIZE : 0,
    synchronousCommit: config.DELIVERY_SYNCHRONOUS_COMMIT,
    applicationName: WORKERS_POOL(testDb.schema!),
  });
  try {
    const poolSize = config.DB_POOL_SIZE;
    const h = {
      receiver,
      testDb,
      redis,
      deps,
      settings,
      herald,
      token,
      workerDb,
      logger,
      poolSize,
    };
    if (matching) await deliveryRows(h, matching, loadBefore);
    if (destinations.length > 0) await destinationSection(h, destinations);
    if (!NO_FLOW && !onlyDestinations) await flowSection(h);
  } finally {
    await herald.close();
    await receiver.stop();
    await deps.eventMatchQueue.close();
    await dropRedisKeys(redis, deps.redisPrefix);
    await redis.quit();
    await workerDb.close();
    await testDb.cleanup();
  }
}

await main();
