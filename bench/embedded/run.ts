import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createPostgresDb, migrate, startEmbeddedPostgres } from '@herald/store';
import { TEST_REDIS_URL, deleteTestRedisKeys, randomId, spawnHerald } from '@herald/testkit';
import { itemEvent } from '../delivery/fixtures.js';
import { processCpuMs, treeCpuDelta, treeCpuMs } from '../lib/cpu.js';
import { ReceiverProcess } from '../lib/receiver-process.js';
import { table } from '../lib/table.js';
import { SEARCH_WORD, seed } from './seed.js';

/**
 * pnpm bench:embedded [--records=50000] [--samples=100] [--only=embedded,inline,worker]
 *
 * #29's embedded database, measured: Herald's single process on the embedded PostgreSQL (the
 * real services/standalone main), beside the PGlite baseline (the single process as it ran before
 * #29, ./pglite-herald.ts), with PGlite in its event loop and on a worker thread, in one run, on
 * the same data set (./seed.ts): full-text search, /healthz and accepted → sent while four
 * searches run, a runaway regular expression, and the CPU of each (Herald's process, plus the
 * server's processes for PostgreSQL). Needs the test Redis; nothing else.
 */

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k!, v ?? 'true'] as const;
  }),
);
const RECORDS = Number(args.get('records') ?? 50_000);
const SAMPLES = Number(args.get('samples') ?? 100);
const LOAD_SEARCHES = 4;
const HEALTH_SAMPLES = 200;
const EVENT_SAMPLES = 20;
const BUDGET_MS = 1000;
const TOKEN = `hrld_admin_bench_${'x'.repeat(24)}`;
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

type Kind = 'embedded' | 'inline' | 'worker';
const SYSTEMS: { kind: Kind; name: string }[] = [
  { kind: 'embedded' as const, name: 'Herald, embedded PostgreSQL' },
  { kind: 'inline' as const, name: 'PGlite baseline (in process)' },
  { kind: 'worker' as const, name: 'PGlite on a worker thread' },
].filter((s) => !args.has('only') || args.get('only')!.split(',').includes(s.kind));

const agent = new Agent({ connections: 16, keepAliveTimeout: 60_000 });
const auth = { authorization: `Bearer ${TOKEN}` };
const searchPath = `/items?filter[query]=${SEARCH_WORD}`;
const regexpPath = `/items?filter[type]=m0&filter[fields][body][matches][pattern]=${encodeURIComponent(
  `${'.{0,49}'.repeat(20)}!`,
)}`;

async function get(url: string, timeoutMs = 120_000): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const res = await request(url, {
    dispatcher: agent,
    headers: auth,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.body.dump();
  return { status: res.statusCode, ms: performance.now() - started };
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
};
const f = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  startMs: number;
  exited: Promise<number | null>;
}

async function startProcess(kind: Kind, env: Record<string, string>): Promise<Running> {
  const script =
    kind === 'embedded'
      ? join(REPO, 'services/standalone/dist/main.js')
      : fileURLToPath(new URL('./pglite-herald.js', import.meta.url));
  const started = performance.now();
  const herald = spawnHerald(script, {
    HERALD_ADMIN_TOKEN: TOKEN,
    SSRF_ALLOW_CIDRS: '127.0.0.0/8',
    READ_STATEMENT_TIMEOUT_MS: String(BUDGET_MS),
    // The embedded default runs its queues on its PostgreSQL alone; PGlite cannot, so the
    // baseline keeps them on Redis.
    ...(kind === 'embedded' ? {} : { REDIS_URL: TEST_REDIS_URL }),
    BENCH_PGLITE: kind,
    ...env,
  });
  const exited = new Promise<number | null>((resolve) => herald.child.once('exit', resolve));
  const url = await herald.url();
  return { ...herald, url, startMs: performance.now() - started, exited };
}

async function stopProcess(running: Running): Promise<void> {
  running.child.kill('SIGTERM');
  // Only the measures count here; a process that fails its shutdown is told, not fatal.
  const code = await running.exited;
  if (code !== 0) process.stderr.write(`  (it exited with ${String(code)} on SIGTERM)\n`);
}

interface Result {
  firstStartMs: number;
  seedMs: number;
  restartMs: number;
  search: number[];
  cpuPerSearch: { herald: number; server: number };
  health: number[];
  accepted: number[];
  regexp: { status: number; ms: number; healthMax: number };
}

async function measure(kind: Kind, receiver: ReceiverProcess): Promise<Result> {
  const dataDir = await mkdtemp(join(tmpdir(), `herald-bench-${kind}-`));
  const env = { HERALD_DATA_DIR: dataDir, REDIS_PREFIX: randomId('herald_test') };
  const phase = (name: string) => process.stderr.write(`  ${kind}: ${name}\n`);
  try {
    // A first start on an empty folder: the cluster made, every migration.
    phase('first start');
    const first = await startProcess(kind, { ...env, BENCH_RECORDS: '0' });
    phase('stop');
    await stopProcess(first);
    phase('seed');

    let seedMs: number;
    let running: Running;
    if (kind === 'embedded') {
      // As the `herald` CLI does while no Herald runs: the server started for the writes.
      const server = await startEmbeddedPostgres({ dir: join(dataDir, 'postgres') });
      const db = createPostgresDb({ connectionString: server.url, maxConnections: 2 });
      const seeding = performance.now();
      await migrate(db);
      await seed(db, RECORDS, receiver.url);
      seedMs = performance.now() - seeding;
      await db.close();
      await server.stop();
      running = await startProcess(kind, env);
    } else {
      running = await startProcess(kind, {
        ...env,
        BENCH_RECORDS: String(RECORDS),
        BENCH_RECEIVER_URL: receiver.url,
      });
      seedMs = Number(/seeded in ([\d.]+) s/.exec(running.output())![1]) * 1000;
      running.startMs -= seedMs;
    }
    process.stderr.write(
      `  ${kind}: seeded ${RECORDS} records in ${(seedMs / 1000).toFixed(1)} s\n`,
    );
    const heraldPid = running.child.pid!;
    const postmaster =
      kind === 'embedded'
        ? Number(
            (await readFile(join(dataDir, 'postgres/data/postmaster.pid'), 'utf8')).split('\n')[0],
          )
        : 0;
    const serverCpu = () => (postmaster ? treeCpuMs(postmaster) : new Map<number, number>());
    const { url } = running;

    try {
      phase('searches');
      for (let i = 0; i < 10; i++) await get(`${url}${searchPath}`);
      const heraldBefore = processCpuMs(heraldPid);
      const serverBefore = serverCpu();
      const search: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const r = await get(`${url}${searchPath}`);
        if (r.status !== 200) throw new Error(`search answered ${r.status}`);
        search.push(r.ms);
      }
      const cpuPerSearch = {
        herald: (processCpuMs(heraldPid) - heraldBefore) / SAMPLES,
        server: treeCpuDelta(serverBefore, serverCpu()) / SAMPLES,
      };

      // Four clients searching all along, while /healthz and one event at a time are timed.
      let loading = true;
      const loops = Array.from({ length: LOAD_SEARCHES }, async () => {
        while (loading) await get(`${url}${searchPath}`);
      });
      phase('/healthz and events, four searches running');
      const health: number[] = [];
      for (let i = 0; i < HEALTH_SAMPLES; i++) health.push((await get(`${url}/healthz`)).ms);
      await receiver.mode(true);
      const accepted: number[] = [];
      for (let i = 0; i < EVENT_SAMPLES; i++) {
        const id = `rec-${i}`;
        const res = await request(`${url}/events`, {
          dispatcher: agent,
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ data: [itemEvent('update', 0, id)] }),
        });
        const body = await res.body.text();
        if (res.statusCode !== 202) throw new Error(`POST /events: ${res.statusCode} ${body}`);
        const at = performance.timeOrigin + performance.now();
        for (const deadline = Date.now() + 60_000; ;) {
          if (Date.now() > deadline) throw new Error(`${id}'s delivery did not arrive in 60 s`);
          const arrival = (await receiver.stats()).arrivals.find(([entity]) => entity === id);
          if (arrival) {
            accepted.push(arrival[1] - at);
            break;
          }
          await new Promise((r) => setTimeout(r, 1));
        }
      }
      await receiver.mode(false);
      loading = false;
      await Promise.all(loops);

      phase('a runaway regexp');
      // A runaway regular expression, with /healthz asked all along.
      let regexpDone = false;
      let healthMax = 0;
      const healthLoop = (async () => {
        while (!regexpDone) healthMax = Math.max(healthMax, (await get(`${url}/healthz`)).ms);
      })();
      // PGlite cannot cancel the statement: the server's requestTimeout (60 s) may cut the answer.
      const regexpStarted = performance.now();
      const regexp = await get(`${url}${regexpPath}`, 600_000).catch(() => ({
        status: 0,
        ms: performance.now() - regexpStarted,
      }));
      regexpDone = true;
      await healthLoop;

      return {
        firstStartMs: first.startMs,
        seedMs,
        restartMs: running.startMs,
        search,
        cpuPerSearch,
        health,
        accepted,
        regexp: { ...regexp, healthMax },
      };
    } finally {
      await stopProcess(running);
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const receiver = await ReceiverProcess.start();
const results = new Map<Kind, Result>();
try {
  for (const system of SYSTEMS) {
    process.stderr.write(`${system.name}…\n`);
    results.set(system.kind, await measure(system.kind, receiver));
  }
} finally {
  await receiver.stop();
  await agent.close();
  await deleteTestRedisKeys();
}

const cells = (fn: (r: Result) => string) => SYSTEMS.map((s) => fn(results.get(s.kind)!));
const embedded = results.get('embedded');
const target = (ok: (r: Result) => boolean, text: string) =>
  embedded ? `${text} ${ok(embedded) ? '✓' : '✗'}` : text;
process.stdout.write(
  `\n${RECORDS.toLocaleString('en')} records, full text "${SEARCH_WORD}" (~2 % of them, ranked), ` +
    `${SAMPLES} sequential searches; then ${LOAD_SEARCHES} clients searching without pause while ` +
    `${HEALTH_SAMPLES} GET /healthz and ${EVENT_SAMPLES} single events (POST /events → 202 → the ` +
    `receiver) are timed one at a time; READ_STATEMENT_TIMEOUT_MS=${BUDGET_MS}. CPU: Herald's ` +
    `process (with its threads), and the PostgreSQL server's processes.\n\n` +
    table(
      ['', ...SYSTEMS.map((s) => s.name), 'target (embedded)'],
      [
        [
          'first start, empty folder (initdb or PGlite init, migrations)',
          ...cells((r) => `${(r.firstStartMs / 1000).toFixed(1)} s`),
          '',
        ],
        [
          `seed ${RECORDS.toLocaleString('en')} records (batches of 500)`,
          ...cells((r) => `${(r.seedMs / 1000).toFixed(1)} s`),
          '',
        ],
        ['start on the seeded folder', ...cells((r) => `${(r.restartMs / 1000).toFixed(1)} s`), ''],
        [
          'full-text search p50 / p95',
          ...cells((r) => `${f(pct(r.search, 0.5))} / ${f(pct(r.search, 0.95))} ms`),
          target((r) => pct(r.search, 0.5) <= 50, 'p50 ≤ 50 ms'),
        ],
        [
          'CPU per search: Herald / server',
          ...cells((r) => `${f(r.cpuPerSearch.herald)} / ${f(r.cpuPerSearch.server)} ms`),
          '',
        ],
        [
          `/healthz p50 / p95 / max, ${LOAD_SEARCHES} searches running`,
          ...cells(
            (r) =>
              `${f(pct(r.health, 0.5))} / ${f(pct(r.health, 0.95))} / ${f(Math.max(...r.health))} ms`,
          ),
          target((r) => pct(r.health, 0.95) <= 50, '≤ 50 ms (p95)'),
        ],
        [
          `accepted → sent p50 / max, ${LOAD_SEARCHES} searches running`,
          ...cells((r) => `${f(pct(r.accepted, 0.5))} / ${f(Math.max(...r.accepted))} ms`),
          target((r) => pct(r.accepted, 0.5) <= 100, '≤ 100 ms (p50)'),
        ],
        [
          'runaway regexp: answer, time',
          ...cells((r) =>
            r.regexp.status === 0
              ? `connection cut after ${f(r.regexp.ms)} ms`
              : `${r.regexp.status} in ${f(r.regexp.ms)} ms`,
          ),
          target((r) => r.regexp.status === 422, '422'),
        ],
        ['/healthz max while it runs', ...cells((r) => `${f(r.regexp.healthMax)} ms`), ''],
      ],
    ),
);
