/**
 * pnpm bench:ingest — accepted events/s through POST /events (HTTP, validation, one transaction
 * storing the events and the records, enqueue on Redis) for batches of 1, 100 and 1000 item
 * events, side by side with a baseline measured in the same run: the same batches written to the
 * same events table by one hand-written multi-row INSERT per batch through `pg`.
 *
 * Needs the test Postgres and Redis (BENCH_DATABASE_URL, BENCH_REDIS_URL); works in a schema and
 * a Redis prefix of its own, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createApp } from '@herald/ingest';
import { createEventMatchQueue, createRedis } from '@herald/runtime';
import { createPostgresDb, createToken, migrate, textSearchConfig } from '@herald/store';
import { silentLogger, testDeps } from '@herald/testkit';
import { productionHttp } from '../lib/http.js';

const DATABASE_URL = process.env['BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env['BENCH_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
/** Requests (or baseline INSERTs) in flight at once. */
const CONCURRENCY = Number(process.env['BENCH_CONCURRENCY'] ?? 4);
/** Events per scenario, by batch size (kept small enough for a run of about a minute). */
const SCENARIOS = [
  { batch: 1, events: Number(process.env['BENCH_EVENTS_BATCH_1'] ?? 3_000) },
  { batch: 100, events: Number(process.env['BENCH_EVENTS_BATCH_100'] ?? 30_000) },
  { batch: 1000, events: Number(process.env['BENCH_EVENTS_BATCH_1000'] ?? 30_000) },
];

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

function itemEvent(): Record<string, unknown> {
  const n = counter++;
  return {
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

async function main(): Promise<void> {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const db = createPostgresDb({
    connectionString: DATABASE_URL,
    searchPath: schema,
    maxConnections: 10,
    applicationName: `herald-bench-${suffix}`,
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
  const deps = {
    ...testDeps(db, redis, productionHttp()),
    redisPrefix: `herald_bench_${suffix}`,
  };
  const queue = createEventMatchQueue(redis, deps.redisPrefix, deps.logger);
  const server = createServer(
    createApp({ ...deps, eventMatchQueue: queue, enqueueTimeoutMs: 5000 }),
  );
  const agents: Agent[] = [];
  try {
    await migrate(db);
    const { token } = await createToken(db, { name: 'bench', role: 'producer' });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
    // node:http with keep-alive rather than fetch: fetch (undici's web streams) costs ~0.6 ms of
    // CPU per request on this machine, which the load generator would take from the server.
    const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    agents.push(agent);
    const postBody = (body: string) =>
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
              reject(new Error(`POST /events → ${response.statusCode}: ${text.slice(0, 500)}`));
            });
            response.on('error', reject);
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    await postBody(
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
    // Warm-up: JIT, connection pools, prepared plans.
    for (let i = 0; i < 20; i++) {
      await postBody(JSON.stringify({ data: Array.from({ length: 50 }, itemEvent) }));
    }

    // The locale of the environment the events land in, and its text search configuration.
    const { rows: environments } = await db.query<{ locale: string | null }>(
      `SELECT locales[1] AS locale FROM environments WHERE id = 'main'`,
    );
    const locale = environments[0]?.locale ?? 'en';
    const searchConfig = textSearchConfig(locale);

    const rows: string[][] = [];
    const cpuRows: string[][] = [];
    for (const { batch, events } of SCENARIOS) {
      const batches = Math.max(1, Math.round(events / batch));
      // Bodies are built before the clock starts: the load generator shares the CPU.
      const bodies = Array.from({ length: batches }, () =>
        JSON.stringify({ data: Array.from({ length: batch }, itemEvent) }),
      );
      const cpu = process.cpuUsage();
      const pgCpu = await CpuWindow.open(backends(`herald-bench-${suffix}`));
      const redisCpu = await CpuWindow.open(redisPids);
      const herald = await measure(batches, batch, (i) => postBody(bodies[i]!));
      const used = process.cpuUsage(cpu);
      const pgUsed = await pgCpu.close();
      const redisUsed = await redisCpu.close();
      const total = batches * batch;

      const baselineBatches = Array.from({ length: batches }, () =>
        Array.from({ length: batch }, itemEvent),
      );
      const baselineCpu = process.cpuUsage();
      const baselinePgCpu = await CpuWindow.open(backends(`herald-bench-baseline-${suffix}`));
      const baseline = await measure(batches, batch, async (i) => {
        const list = baselineBatches[i]!;
        const params: unknown[] = [];
        const values = list.map((event) => {
          const attributes = event['attributes'] as Record<string, unknown>;
          const entity = attributes['entity'] as { id: string };
          const base = params.length;
          params.push(
            event['id'],
            'main',
            true,
            'item',
            'create',
            entity.id,
            'article',
            attributes['occurred_at'],
            JSON.stringify(entity),
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

      // The same rows Herald writes for these events, by hand: the event, its record and its
      // search document (one per locale), in one statement (one round trip, one commit).
      const rowsBatches = Array.from({ length: batches }, () =>
        Array.from({ length: batch }, itemEvent),
      );
      const rowsCpu = process.cpuUsage();
      const rowsPgCpu = await CpuWindow.open(backends(`herald-bench-baseline-${suffix}`));
      const sameRows = await measure(batches, batch, async (i) => {
        const list = rowsBatches[i]!;
        const params: unknown[] = [];
        const slots = (values: unknown[]) => {
          const base = params.length;
          params.push(...values);
          return `(${values.map((_, k) => `$${base + k + 1}`).join(', ')})`;
        };
        const events: string[] = [];
        const records: string[] = [];
        const texts: string[] = [];
        for (const event of list) {
          const attributes = event['attributes'] as Record<string, unknown>;
          const entity = attributes['entity'] as {
            id: string;
            attributes: { title: string; body: string };
            meta: { created_at: string; updated_at: string };
          };
          events.push(
            slots([
              event['id'],
              'main',
              true,
              'item',
              'create',
              entity.id,
              'article',
              attributes['occurred_at'],
              JSON.stringify(entity),
            ]),
          );
          records.push(
            slots([
              'main',
              entity.id,
              'article',
              JSON.stringify(entity.attributes),
              entity.meta.created_at,
              entity.meta.updated_at,
              event['id'],
            ]),
          );
          const text = slots([
            'main',
            entity.id,
            'current',
            locale,
            'article',
            `${entity.attributes.title}\n${entity.attributes.body}`,
          ]);
          texts.push(text.replace(/, (\$\d+)\)$/, `, to_tsvector('${searchConfig}', $1))`));
        }
        await baselinePool.query(
          `WITH e AS (INSERT INTO events (id, environment, is_environment_primary, entity_type,
               event_type, entity_id, item_type_id, occurred_at, entity)
             VALUES ${events.join(', ')}),
           r AS (INSERT INTO records (environment, id, item_type_id, current_attributes,
               created_at, updated_at, last_event_id)
             VALUES ${records.join(', ')})
           INSERT INTO record_texts (environment, record_id, version, locale, item_type_id,
               document)
             VALUES ${texts.join(', ')}`,
          params,
        );
      });
      const rowsUsed = process.cpuUsage(rowsCpu);
      const rowsPgUsed = await rowsPgCpu.close();
      const perEvent = (micros: number) => (micros / total).toFixed(0);
      rows.push([
        String(batch),
        String(total),
        herald.toFixed(0),
        baseline.toFixed(0),
        (herald / baseline).toFixed(2),
        sameRows.toFixed(0),
        (herald / sameRows).toFixed(2),
      ]);
      cpuRows.push([
        String(batch),
        `${perEvent(used.user + used.system)} (${perEvent(used.user)} + ${perEvent(used.system)})`,
        perEvent(pgUsed),
        perEvent(redisUsed),
        perEvent(baselineUsed.user + baselineUsed.system),
        perEvent(baselinePgUsed),
        perEvent(rowsUsed.user + rowsUsed.system),
        perEvent(rowsPgUsed),
      ]);
    }

    const table = (header: string[], body: string[][]) => {
      const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
      const line = (cells: string[]) =>
        `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
      return `${line(header)}\n|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|\n${body.map(line).join('\n')}\n`;
    };
    process.stdout.write(
      `\nIngest benchmark: ${CONCURRENCY} requests in flight, item create events (3 fields, draft mode)\n\n` +
        table(
          [
            'batch size',
            'events',
            'POST /events (events/s)',
            'raw multi-row INSERT (events/s)',
            'ratio',
            'same rows by hand (events/s)',
            'ratio',
          ],
          rows,
        ) +
        `\nCPU µs per event (node: server and load generator, user + system; Postgres: the bench's own backends; Redis: every local redis-server)\n\n` +
        table(
          [
            'batch size',
            'POST /events: node',
            'Postgres',
            'Redis',
            'INSERT baseline: node',
            'Postgres',
            'same rows by hand: node',
            'Postgres',
          ],
          cpuRows,
        ) +
        '\n',
    );
  } finally {
    for (const agent of agents) agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
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
