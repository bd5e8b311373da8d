/**
 * pnpm bench:ingest — accepted events/s through POST /events (HTTP, validation, one transaction
 * storing the events and the records, enqueue on Redis) for batches of 1, 100 and 1000 item
 * events, side by side with baselines measured in the same run: the same rows written by hand
 * behind a bare `node:http` server (JSON.parse, one statement through `pg` per request), and
 * without HTTP the same batches as one multi-row INSERT of the events alone, and as the same rows
 * by hand. Herald and the `node:http` baseline each run in a process of their own
 * (bench/ingest/server.ts), so that their CPU per request is theirs alone. Beside them, the floor:
 * the `node:http` baseline plus the match job Herald adds to Redis before its 202 (the least work
 * of a server that hands its events to workers), in a process of its own too.
 *
 * Needs the test Postgres and Redis (BENCH_DATABASE_URL, BENCH_REDIS_URL); works in a schema and
 * a Redis prefix of its own, dropped at the end. BENCH_BATCHES=1,100 runs some batch sizes only;
 * BENCH_WARMUP_REQUESTS (3000) one-event requests warm each server up first; BENCH_ENQUEUE_WAIT_MS
 * sets Herald's ENQUEUE_WAIT_FOR_WRITES_MS;
 * BENCH_CPU_PROF=<folder> profiles both servers over each measured run (which slows them), writes
 * the profiles there and prints where their time went.
 */
import { randomBytes } from 'node:crypto';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createEventMatchQueue, createRedis } from '@herald/runtime';
import { createPostgresDb, createToken, migrate, textSearchConfig } from '@herald/store';
import { silentLogger } from '@herald/testkit';
import { profileTable, type ProfileSummary } from '../lib/cpu-profile.js';
import { table } from '../lib/table.js';
import { sameRowsStatement, type BenchItemEvent } from './same-rows.js';
import { benchRedisCoordination } from '../lib/coordination.js';

const DATABASE_URL = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** Requests (or baseline INSERTs) in flight at once. */
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 4);
/** Events per scenario, by batch size (kept small enough for a run of about a minute). */
const SCENARIOS = [
  { batch: 1, events: Number(process.env['BENCH_EVENTS_BATCH_1'] ?? 3_000) },
  { batch: 100, events: Number(process.env['BENCH_EVENTS_BATCH_100'] ?? 30_000) },
  { batch: 1000, events: Number(process.env['BENCH_EVENTS_BATCH_1000'] ?? 30_000) },
].filter(({ batch }) =>
  (process.env['BENCH_BATCHES'] ?? '1,100,1000').split(',').map(Number).includes(batch),
);
/** One-event requests sent to each server before anything is measured. */
const WARMUP_REQUESTS = Number(process.env['BENCH_WARMUP_REQUESTS'] ?? 3_000);
/** Where to write CPU profiles of the servers; unset: no profiling. */
const PROFILE_DIR = process.env['BENCH_CPU_PROF'];

const suffix = randomBytes(4).toString('hex');
const schema = `herald_bench_${suffix}`;
let counter = 0;

/** utime + stime of a process in µs (Linux /proc; USER_HZ is 100), or 0 when it is gone. */
function processCpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return 0;
  }
}

/** Pids of the local processes whose command name is `name` (e.g. redis-server). */
function pidsNamed(name: string): number[] {
  try {
    return readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
        } catch {
          return false;
        }
      })
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU spent by a set of processes over a window: the bench's own Postgres backends (found by
 * application_name, so other clients of the server do not count) and every redis-server. Only
 * meaningful when Postgres and Redis run on this machine; otherwise the figures read 0.
 */
class CpuWindow {
  private readonly start = new Map<number, number>();

  private constructor(private readonly pids: () => Promise<number[]>) {}

  static async open(pids: () => Promise<number[]>): Promise<CpuWindow> {
    const window = new CpuWindow(pids);
    for (const pid of await pids()) window.start.set(pid, processCpuMicros(pid));
    return window;
  }

  /** µs of CPU since open(); a process that started inside the window counts whole. */
  async close(): Promise<number> {
    let total = 0;
    for (const pid of new Set([...(await this.pids()), ...this.start.keys()])) {
      const now = processCpuMicros(pid);
      if (now > 0) total += now - (this.start.get(pid) ?? 0);
    }
    return total;
  }
}

function itemEvent(): BenchItemEvent {
  const n = counter++;
  const event = {
    type: 'event',
    id: `bench-${suffix}-${n}`,
    attributes: {
      entity_type: 'item',
      event_type: 'create',
      occurred_at: new Date().toISOString(),
      entity: {
        type: 'item',
        id: `rec-${suffix}-${n}`,
        attributes: {
          title: `Article number ${n}`,
          body: 'Herald turns content events into reliable webhook deliveries. '.repeat(3),
          views: n,
        },
        relationships: { item_type: { data: { type: 'item_type', id: 'article' } } },
        meta: { created_at: new Date().toISOString(), updated_at: new Date().toISOString() },
      },
    },
  };
  return event;
}

/** Runs the tasks with at most CONCURRENCY in flight; returns events/s. */
async function measure(batches: number, batchSize: number, run: (i: number) => Promise<void>) {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < batches) await run(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return (batches * batchSize) / seconds;
}

/** A server of bench/ingest/server.ts in a child process. */
class ServerProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  get pid(): number {
    return this.child.pid ?? 0;
  }

  static async start(env: Record<string, string>): Promise<ServerProcess> {
    const child = fork(fileURLToPath(new URL('./server.js', import.meta.url)), [], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m: { port: number }) => resolve(m.port));
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    return new ServerProcess(child, `http://127.0.0.1:${port}/events`);
  }

  #ask<T>(message: object): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', (m: T) => resolve(m));
      this.child.send(message);
    });
  }

  async profileStart(): Promise<void> {
    await this.#ask({ cmd: 'profile-start' });
  }

  async profileStop(file: string): Promise<ProfileSummary> {
    return (await this.#ask<{ summary: ProfileSummary }>({ cmd: 'profile-stop', file })).summary;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ cmd: 'exit' });
    await exited;
  }
}

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const db = createPostgresDb({
    connectionString: DATABASE_URL,
    searchPath: schema,
    maxConnections: 2,
    applicationName: `herald-bench-setup-${suffix}`,
  });
  const baselinePool = new pg.Pool({
    connectionString: DATABASE_URL,
    max: CONCURRENCY,
    options: `-c search_path=${schema}`,
    application_name: `herald-bench-baseline-${suffix}`,
  });
  const backends = (name: string) => async () =>
    (
      await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE application_name = $1',
        [name],
      )
    ).rows.map((row) => row.pid);
  const redisPids = () => Promise.resolve(pidsNamed('redis-server'));
  const redis = createRedis(REDIS_URL, 'producer', silentLogger());
  const queue = createEventMatchQueue(
    benchRedisCoordination(redis, REDIS_URL, `herald_bench_${suffix}`, silentLogger()),
    silentLogger(),
  );
  const servers: ServerProcess[] = [];
  let agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  try {
    await migrate(db);
    const { token } = await createToken(db, { name: 'bench', role: 'producer' });
    const serverEnv = {
      BENCH_SCHEMA: schema,
      BENCH_SUFFIX: suffix,
      BENCH_DATABASE_URL: DATABASE_URL,
      BENCH_REDIS_URL: REDIS_URL,
    };
    const herald = await ServerProcess.start({ ...serverEnv, BENCH_MODE: 'herald' });
    servers.push(herald);
    // node:http with keep-alive rather than fetch: fetch (undici's web streams) costs ~0.6 ms of
    // CPU per request on this machine, which the load generator would take from the server. A
    // new agent for each run: a connection idle through the runs between could be closing
    // (keepAliveTimeout) just as it is reused.
    const freshAgent = () => {
      agent.destroy();
      agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    };
    const postBody = (url: string, body: string) =>
      new Promise<void>((resolve, reject) => {
        const request = httpRequest(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
            },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () => {
              if (response.statusCode === 202) return resolve();
              const text = Buffer.concat(chunks).toString('utf8');
              reject(new Error(`POST ${url} → ${response.statusCode}: ${text.slice(0, 500)}`));
            });
            response.on('error', reject);
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    await postBody(
      herald.url,
      JSON.stringify({
        data: {
          type: 'event',
          attributes: {
            entity_type: 'item_type',
            event_type: 'create',
            entity: {
              type: 'item_type',
              id: 'article',
              attributes: { name: 'Article', api_key: 'article', draft_mode_active: true },
            },
            related_entities: [
              { type: 'field', id: 'f1', attributes: { api_key: 'title', field_type: 'string' } },
              { type: 'field', id: 'f2', attributes: { api_key: 'body', field_type: 'text' } },
              { type: 'field', id: 'f3', attributes: { api_key: 'views', field_type: 'integer' } },
            ],
          },
        },
      }),
    );

    // The locale of the environment the events land in, and its text search configuration.
    const { rows: environments } = await db.query<{ locale: string | null }>(
      `SELECT locales[1] AS locale FROM environments WHERE id = 'main'`,
    );
    const locale = environments[0]?.locale ?? 'en';
    const searchConfig = textSearchConfig(locale);
    const byHand = await ServerProcess.start({
      ...serverEnv,
      BENCH_MODE: 'rows',
      BENCH_LOCALE: locale,
      BENCH_SEARCH_CONFIG: searchConfig,
    });
    servers.push(byHand);
    const floor = await ServerProcess.start({
      ...serverEnv,
      BENCH_MODE: 'floor',
      BENCH_LOCALE: locale,
      BENCH_SEARCH_CONFIG: searchConfig,
    });
    servers.push(floor);

    // Warm-up: connection pools, prepared plans, and the JIT, whose compiling (on threads of
    // the server process, so in its CPU) a short run would otherwise measure: one-event
    // requests, CONCURRENCY in flight, then batches.
    for (const server of [herald, byHand, floor]) {
      await measure(WARMUP_REQUESTS, 1, () =>
        postBody(server.url, JSON.stringify({ data: [itemEvent()] })),
      );
      await measure(20, 50, () =>
        postBody(server.url, JSON.stringify({ data: Array.from({ length: 50 }, itemEvent) })),
      );
    }
    if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });

    const rows: string[][] = [];
    const cpuRows: string[][] = [];
    const profiles: string[] = [];
    /** POSTs pre-built bodies to a server process: events/s, and its node CPU in µs. */
    const runServer = async (server: ServerProcess, name: string, batch: number) => {
      const batches = Math.max(
        1,
        Math.round(SCENARIOS.find((s) => s.batch === batch)!.events / batch),
      );
      // Bodies are built before the clock starts: the load generator shares the CPU.
      const bodies = Array.from({ length: batches }, () =>
        JSON.stringify({ data: Array.from({ length: batch }, itemEvent) }),
      );
      freshAgent();
      if (PROFILE_DIR) await server.profileStart();
      const nodeBefore = processCpuMicros(server.pid);
      const rate = await measure(batches, batch, (i) => postBody(server.url, bodies[i]!));
      const nodeUsed = processCpuMicros(server.pid) - nodeBefore;
      if (PROFILE_DIR) {
        const file = join(PROFILE_DIR, `ingest-${name}-batch-${batch}.cpuprofile`);
        const summary = await server.profileStop(file);
        profiles.push(
          `\n${name}, batches of ${batch} (${batches} requests; profile: ${file})\n\n` +
            profileTable(summary, batches),
        );
      }
      return { rate, nodeUsed };
    };

    for (const { batch, events } of SCENARIOS) {
      const batches = Math.max(1, Math.round(events / batch));
      const total = batches * batch;
      const perEvent = (micros: number) => (micros / total).toFixed(0);

      const pgCpu = await CpuWindow.open(backends(`herald-bench-${suffix}`));
      const redisCpu = await CpuWindow.open(redisPids);
      // Nothing consumes the queue here: the jobs the run added wait.
      const jobsBefore = await queue.getWaitingCount();
      const posted = await runServer(herald, 'herald', batch);
      const jobs = (await queue.getWaitingCount()) - jobsBefore;
      const pgUsed = await pgCpu.close();
      const redisUsed = await redisCpu.close();

      const httpPgCpu = await CpuWindow.open(backends(`herald-bench-http-${suffix}`));
      const http = await runServer(byHand, 'node-http-same-rows', batch);
      const httpPgUsed = await httpPgCpu.close();

      const floorPgCpu = await CpuWindow.open(backends(`herald-bench-floor-${suffix}`));
      const floorRedisCpu = await CpuWindow.open(redisPids);
      const floorJobsBefore = await queue.getWaitingCount();
      const floored = await runServer(floor, 'node-http-floor', batch);
      const floorJobs = (await queue.getWaitingCount()) - floorJobsBefore;
      const floorPgUsed = await floorPgCpu.close();
      const floorRedisUsed = await floorRedisCpu.close();

      const baselineBatches = Array.from({ length: batches }, () =>
        Array.from({ length: batch }, itemEvent),
      );
      const baselineCpu = process.cpuUsage();
      const baselinePgCpu = await CpuWindow.open(backends(`herald-bench-baseline-${suffix}`));
      const baseline = await measure(batches, batch, async (i) => {
        const list = baselineBatches[i]!;
        const params: unknown[] = [];
        const values = list.map((event) => {
          const base = params.length;
          params.push(
            event.id,
            'main',
            true,
            'item',
            'create',
            event.attributes.entity.id,
            'article',
            event.attributes.occurred_at,
            JSON.stringify(event.attributes.entity),
          );
          return `(${Array.from({ length: 9 }, (_, k) => `$${base + k + 1}`).join(', ')})`;
        });
        await baselinePool.query(
          `INSERT INTO events (id, environment, is_environment_primary, entity_type, event_type,
             entity_id, item_type_id, occurred_at, entity) VALUES ${values.join(', ')}`,
          params,
        );
      });
      const baselineUsed = process.cpuUsage(baselineCpu);
      const baselinePgUsed = await baselinePgCpu.close();

      // The same rows without HTTP: the floor of the work before the 202.
      const rowsBatches = Array.from({ length: batches }, () =>
        Array.from({ length: batch }, itemEvent),
      );
      const rowsCpu = process.cpuUsage();
      const rowsPgCpu = await CpuWindow.open(backends(`herald-bench-baseline-${suffix}`));
      const sameRows = await measure(batches, batch, async (i) => {
        const { text, params } = sameRowsStatement(rowsBatches[i]!, locale, searchConfig);
        await baselinePool.query(text, params);
      });
      const rowsUsed = process.cpuUsage(rowsCpu);
      const rowsPgUsed = await rowsPgCpu.close();

      rows.push([
        String(batch),
        String(total),
        posted.rate.toFixed(0),
        http.rate.toFixed(0),
        (posted.rate / http.rate).toFixed(2),
        floored.rate.toFixed(0),
        (posted.rate / floored.rate).toFixed(2),
        (floored.rate / http.rate).toFixed(2),
        baseline.toFixed(0),
        (posted.rate / baseline).toFixed(2),
        sameRows.toFixed(0),
        (posted.rate / sameRows).toFixed(2),
      ]);
      cpuRows.push([
        String(batch),
        (jobs / batches).toFixed(2),
        perEvent(posted.nodeUsed),
        perEvent(pgUsed),
        perEvent(redisUsed),
        perEvent(http.nodeUsed),
        perEvent(httpPgUsed),
        (floorJobs / batches).toFixed(2),
        perEvent(floored.nodeUsed),
        perEvent(floorPgUsed),
        perEvent(floorRedisUsed),
        perEvent(baselineUsed.user + baselineUsed.system),
        perEvent(baselinePgUsed),
        perEvent(rowsUsed.user + rowsUsed.system),
        perEvent(rowsPgUsed),
      ]);
    }

    process.stdout.write(
      `\nIngest benchmark: ${CONCURRENCY} requests in flight, item create events (3 fields, draft mode)${PROFILE_DIR ? ', servers profiled (rates lowered)' : ''}\n\n` +
        table(
          [
            'batch size',
            'events',
            'POST /events (events/s)',
            'same rows via node:http + pg',
            'ratio',
            'floor: same rows + match job',
            'ratio',
            'floor ÷ same rows',
            'raw multi-row INSERT, no HTTP',
            'ratio',
            'same rows by hand, no HTTP',
            'ratio',
          ],
          rows,
        ) +
        `\nMatch jobs added per request; CPU µs per event (= per request at batch 1). node: the server process alone (user + system); Postgres: that run's own backends; Redis: every local redis-server; the runs without HTTP: the bench process\n\n` +
        table(
          [
            'batch size',
            'match jobs per request',
            'POST /events: node',
            'Postgres',
            'Redis',
            'node:http + pg: node',
            'Postgres',
            'floor: match jobs per request',
            'node',
            'Postgres',
            'Redis',
            'INSERT: node',
            'Postgres',
            'same rows: node',
            'Postgres',
          ],
          cpuRows,
        ) +
        profiles.join('') +
        '\n',
    );
  } finally {
    agent.destroy();
    for (const server of servers) await server.stop();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    await redis.quit();
    await baselinePool.end();
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench:ingest failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
