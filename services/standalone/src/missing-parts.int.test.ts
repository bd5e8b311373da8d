import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  createTestDb,
  randomId,
  startTcpProxy,
  waitFor,
  type TcpProxy,
  type TestDb,
} from '@herald/testkit';

// The real single process, started while the Redis or the Postgres it is given is not there (a
// TCP proxy in front of the shared server, cut: nothing listens on its port), then given it.
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const TOKEN = `hrld_${randomId('admin')}_missing_parts`;
const LOG_INTERVAL_MS = 10_000;

let testDb: TestDb;
let dataDir: string;
const children = new Set<ChildProcess>();
const proxies: TcpProxy[] = [];

beforeAll(async () => {
  testDb = await createTestDb();
  dataDir = await mkdtemp(join(tmpdir(), 'herald-missing-'));
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const proxy of proxies) await proxy.close();
  await testDb.cleanup();
  await rm(dataDir, { recursive: true, force: true });
});

/** A proxy to the shared server at `url`, cut: its port refuses connections until restore(). */
async function missing(url: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(url);
  const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  proxies.push(proxy);
  await proxy.cut();
  return proxy;
}

interface LogLine {
  level: number;
  time: string;
  msg: string;
  module?: string;
  repeated?: number;
}

function startHerald(env: Record<string, string>) {
  const database = new URL(TEST_DATABASE_URL);
  database.searchParams.set('options', `-c search_path=${testDb.schema!}`);
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      DATABASE_URL: database.toString(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: randomId('herald_test'),
      HERALD_ADMIN_TOKEN: TOKEN,
      HERALD_DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_READINESS_DELAY_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  return {
    output: () => out,
    logs: (): LogLine[] =>
      out
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine),
    /** The waiting banner: what Herald waits for, and its URL. */
    waiting: async (): Promise<{ problem: string; url: string }> => {
      let match: RegExpExecArray | null = null;
      await waitFor(() => {
        match = /Herald is waiting: (.*)\.\n {2}(http:\/\/\S+)\/readyz answers 503/.exec(out);
        expect(match, out).not.toBeNull();
      }, 60_000);
      return { problem: match![1]!, url: match![2]! };
    },
    running: () => waitFor(() => expect(out).toMatch(/Herald is running at http/), 60_000),
    async stop() {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    },
  };
}

async function readyz(url: string) {
  const response = await fetch(`${url}/readyz`);
  const body = (await response.json()) as {
    status?: string;
    data?: { attributes: { details: Record<string, unknown> } }[];
  };
  return { status: response.status, details: body.data?.[0]?.attributes.details, body };
}

/**
 * Every warning message (a cause) logged at most once per 10 s: consecutive lines of one message
 * at least that far apart (by their own timestamps, give or take the clock's rounding). The access
 * log is not a cause: it writes one line per request by design (a 503 while Herald waits too).
 */
function expectBoundedRate(logs: LogLine[]): void {
  const byCause = new Map<string, number[]>();
  for (const line of logs.filter((l) => l.level >= 40 && l.module !== 'access')) {
    byCause.set(line.msg, [...(byCause.get(line.msg) ?? []), Date.parse(line.time)]);
  }
  for (const [cause, times] of byCause) {
    for (let i = 1; i < times.length; i++) {
      expect(times[i]! - times[i - 1]!, `"${cause}" logged again after`).toBeGreaterThanOrEqual(
        LOG_INTERVAL_MS - 5,
      );
    }
  }
}

describe('a configured part that is missing at start', { timeout: 180_000 }, () => {
  it('Redis: the banner says Herald waits for it, /readyz says why, the log once per 10 s; then it starts', async () => {
    const redis = await missing(TEST_REDIS_URL);
    const herald = startHerald({ REDIS_URL: redis.url(TEST_REDIS_URL) });
    const problem =
      `Redis at 127.0.0.1:${redis.port} is not answering (connection refused); ` +
      'check that it runs and that REDIS_URL points at it';
    const { problem: said, url } = await herald.waiting();
    expect(said).toBe(problem);

    const ready = await readyz(url);
    expect(ready.status).toBe(503);
    expect(ready.details).toMatchObject({
      message: 'Herald is waiting for Redis',
      checks: { database: 'ok', redis: problem },
    });

    // The cause's second line: 10 s after the first, counting the reports held back meanwhile
    // (every reconnection of each connection and queue, about three a second before).
    await waitFor(
      () => expect(herald.logs().filter((l) => l.msg === problem).length).toBeGreaterThan(1),
      { timeout: 30_000, interval: 100 },
    );
    const lines = herald.logs().filter((l) => l.msg === problem);
    expect(lines[0]!.level).toBe(40);
    expect(lines[1]!.repeated).toBeGreaterThan(0);
    expectBoundedRate(herald.logs());
    expect(herald.output()).not.toMatch(/Herald is running at/);

    await redis.restore();
    await herald.running();
    expect((await readyz(url)).body).toMatchObject({ status: 'ready' });
    expect(herald.logs().some((l) => l.msg === 'herald listening')).toBe(true);
    expectBoundedRate(herald.logs());
    await herald.stop();
  });

  it('Postgres: the API and /readyz answer 503 saying why; it migrates and starts once it answers', async () => {
    const postgres = await missing(TEST_DATABASE_URL);
    const database = new URL(postgres.url(TEST_DATABASE_URL));
    database.searchParams.set('options', `-c search_path=${testDb.schema!}`);
    const herald = startHerald({ DATABASE_URL: database.toString() });
    const problem =
      `Postgres at 127.0.0.1:${postgres.port} is not answering (connection refused); ` +
      'check that it runs and that DATABASE_URL points at it';
    const { problem: said, url } = await herald.waiting();
    expect(said).toBe(problem);

    // Its Redis connection, meanwhile, comes up.
    const ready = await waitFor(
      async () => {
        const answer = await readyz(url);
        expect(answer.details).toMatchObject({ checks: { redis: 'ok' } });
        return answer;
      },
      { interval: 100 },
    );
    expect(ready.status).toBe(503);
    expect(ready.details).toMatchObject({
      message: 'Herald is waiting for Postgres',
      starting: 'waiting for the database',
      checks: { database: problem, redis: 'ok' },
    });
    const api = await fetch(`${url}/webhooks`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(api.status).toBe(503);
    expect(await api.json()).toMatchObject({
      data: [
        {
          attributes: {
            code: 'SERVICE_UNAVAILABLE',
            details: {
              message: 'Herald is starting (waiting for the database); retry in a moment',
            },
          },
        },
      ],
    });
    expect(herald.logs().filter((l) => l.msg === problem).length).toBeGreaterThan(0);
    expectBoundedRate(herald.logs());

    await postgres.restore();
    await herald.running();
    expect((await readyz(url)).body).toMatchObject({ status: 'ready' });
    const webhooks = await fetch(`${url}/webhooks`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(webhooks.status).toBe(200);
    expectBoundedRate(herald.logs());
    await herald.stop();
  });
});
