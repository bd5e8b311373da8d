import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertEvents, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  createTestDb,
  freePort,
  randomId,
  startTcpProxy,
  testItemEvent,
  testRedis,
  type TcpProxy,
  type TestDb,
  waitFor,
} from '@herald/testkit';
import type { Redis } from '@herald/runtime';

// The built ingest service as a child process, on this file's schema and a Redis prefix of its
// own: what happens to the process itself (signals, a lost database connection) is the subject.
const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const TOKEN = `hrld_${randomId('admin')}_main_test`;
/** Generous: two cores shared with other work. */
const POLL = { timeout: 20_000, interval: 20 };

let testDb: TestDb;
let db: Db;
let redis: Redis;
let prefix: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  redis = testRedis();
  prefix = randomId('herald_test');
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  // The keys under `prefix` go with the file's (testkit's vitest-setup).
  await redis.quit();
  await testDb.cleanup();
});

interface Ingest {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** The test schema's URL on the given Postgres URL. */
function databaseUrl(url = TEST_DATABASE_URL): string {
  const database = new URL(url);
  database.searchParams.set('options', `-c search_path=${testDb.schema!}`);
  return database.toString();
}

/** Starts the built ingest and waits for the log line that gives its URL. */
function startIngest(
  env: Record<string, string>,
  onOutput: (output: string) => void = () => undefined,
): Promise<Ingest> {
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      DATABASE_URL: databaseUrl(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      HERALD_ADMIN_TOKEN: TOKEN,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MIGRATE_ON_START: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  let out = '';
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      onOutput(out);
      const match = /"url":"(http:\/\/[^"]+)".*"msg":"ingest listening"/.exec(out);
      if (match) resolve({ child, url: match[1]!, exited });
    });
    void exited.then((code) => reject(new Error(`ingest exited with ${String(code)}:\n${out}`)));
  });
}

const get = (url: string, auth = false) =>
  fetch(url, auth ? { headers: { Authorization: `Bearer ${TOKEN}` } } : {});

/** An item_type event: POST /events stores it inside a transaction (not the one-statement path). */
function modelEvent(id: string) {
  return {
    type: 'event',
    id,
    attributes: {
      entity_type: 'item_type',
      event_type: 'create',
      entity: {
        type: 'item_type',
        id: randomId('model'),
        attributes: { name: 'm', api_key: randomId('m') },
      },
      related_entities: [],
    },
  };
}

function postEvent(url: string, id: string): Promise<Response> {
  return fetch(`${url}/events`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: [modelEvent(id)] }),
  });
}

class RolledBack extends Error {}

/**
 * Holds an uncommitted events row with this id: a POST /events of the same id waits on it inside
 * its transaction (the insert's unique check) until release() rolls it back.
 */
async function holdEventId(id: string): Promise<{ pid: number; release: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let holding!: (pid: number) => void;
  const held = new Promise<number>((resolve) => (holding = resolve));
  const done = db
    .transaction(async (tx) => {
      await insertEvents(tx, [testItemEvent(id)]);
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      holding(rows[0]!.pid);
      await released;
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  const pid = await Promise.race([
    held,
    done.then(() => Promise.reject(new Error('the holding transaction ended early'))),
  ]);
  return {
    pid,
    release: async () => {
      release();
      await done;
    },
  };
}

/** The backend of the request waiting on the holder's lock (its transaction), once it waits. */
function blockedBackend(holderPid: number, request: Promise<Response>): Promise<number> {
  let answered: number | undefined;
  void request.then(
    (response) => (answered = response.status),
    () => undefined,
  );
  return waitFor(
    async () => {
      if (answered !== undefined) throw new Error(`answered ${answered} without waiting`);
      const { rows } = await db.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))',
        [holderPid],
      );
      if (!rows[0]) throw new Error('not waiting yet');
      return rows[0].pid;
    },
    { timeout: 20_000, interval: 20 },
  );
}

describe('shutdown of the built ingest service', () => {
  it('on SIGTERM answers /readyz 503 while serving the rest, then finishes in-flight requests and exits 0', async () => {
    // A delay longer than the test: a second SIGTERM ends it.
    const ingest = await startIngest({ SHUTDOWN_READINESS_DELAY_MS: '600000' });
    // Ready once its Redis connection is up.
    await expect.poll(async () => (await get(`${ingest.url}/readyz`)).status, POLL).toBe(200);
    const eventId = randomId('evt');
    const holder = await holdEventId(eventId);
    try {
      ingest.child.kill('SIGTERM');
      await expect.poll(async () => (await get(`${ingest.url}/readyz`)).status, POLL).toBe(503);
      const ready = (await (await get(`${ingest.url}/readyz`)).json()) as {
        data: [{ attributes: { code: string; details: { draining: boolean } } }];
      };
      expect(ready.data[0].attributes).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        details: { draining: true },
      });
      expect((await get(`${ingest.url}/healthz`)).status).toBe(200);
      const served = await get(`${ingest.url}/webhooks`, true);
      expect(served.status).toBe(200);
      // Keep-alive clients move to new connections, which the closed server will refuse cleanly,
      // instead of sending on one the shutdown cuts.
      expect(served.headers.get('connection')).toBe('close');

      // A request that starts during the delay and is still running when it ends.
      const posted = postEvent(ingest.url, eventId);
      await blockedBackend(holder.pid, posted);
      ingest.child.kill('SIGTERM');
      await expect
        .poll(
          () =>
            get(`${ingest.url}/healthz`).then(
              () => 'open',
              () => 'refused',
            ),
          POLL,
        )
        .toBe('refused');
      expect(ingest.child.exitCode).toBeNull();
      await holder.release();
      const answer = await posted;
      expect(answer.status).toBe(202);
      expect(await answer.json()).toMatchObject({
        data: [{ id: eventId, attributes: { status: 'accepted' } }],
      });
      expect(await ingest.exited).toBe(0);
    } finally {
      await holder.release();
    }
  });

  it('waits SHUTDOWN_READINESS_DELAY_MS on SIGTERM, then stops by itself; does not wait on SIGINT', async () => {
    const [terminated, interrupted] = await Promise.all([
      startIngest({ SHUTDOWN_READINESS_DELAY_MS: '1500' }),
      // Ctrl-C at a terminal: no load balancer to warn, so no delay (the test would time out).
      startIngest({ SHUTDOWN_READINESS_DELAY_MS: '600000' }),
    ]);
    const signalled = performance.now();
    terminated.child.kill('SIGTERM');
    interrupted.child.kill('SIGINT');
    expect(await interrupted.exited).toBe(0);
    expect(await terminated.exited).toBe(0);
    expect(performance.now() - signalled).toBeGreaterThanOrEqual(1500);
  });
});

/** A proxy to the shared server at `url`, cut: its port refuses connections until restore(). */
async function cutProxy(url: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(url);
  const proxy = await startTcpProxy({ host: hostname, port: Number(port) });
  await proxy.cut();
  return proxy;
}

describe('Postgres and Redis missing at start', () => {
  it('/readyz says what is wrong with each, the log once per cause, and ingest starts once they answer', async () => {
    // Proxies to the shared servers, cut: nothing listens on their ports until restore().
    const postgres = await cutProxy(TEST_DATABASE_URL);
    const redis = await cutProxy(TEST_REDIS_URL);
    const port = await freePort();
    let output = '';
    const starting = startIngest(
      {
        DATABASE_URL: databaseUrl(postgres.url(TEST_DATABASE_URL)),
        REDIS_URL: redis.url(TEST_REDIS_URL),
        PORT: String(port),
        SHUTDOWN_READINESS_DELAY_MS: '0',
      },
      (out) => (output = out),
    );
    try {
      const problems = {
        database:
          `Postgres at 127.0.0.1:${postgres.port} is not answering (connection refused); ` +
          'check that it runs and that DATABASE_URL points at it',
        redis:
          `Redis at 127.0.0.1:${redis.port} is not answering (connection refused); ` +
          'check that it runs and that REDIS_URL points at it',
      };
      const warnings = () =>
        output
          .split('\n')
          .filter((line) => line.includes('"level":40'))
          .map((line) => JSON.parse(line) as { msg: string; time: string });
      // One clear line for each.
      await waitFor(() => {
        const said = warnings().map((line) => line.msg);
        expect(said).toContain(problems.database);
        expect(said).toContain(problems.redis);
      });
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        data: [
          {
            attributes: {
              details: { message: 'Herald is waiting for Postgres and Redis', checks: problems },
            },
          },
        ],
      });

      await postgres.restore();
      await redis.restore();
      const ingest = await starting;
      await expect.poll(async () => (await get(`${ingest.url}/readyz`)).status, POLL).toBe(200);
      // Each cause's lines at least 10 s apart (by their own timestamps).
      for (const problem of Object.values(problems)) {
        const times = warnings()
          .filter((line) => line.msg === problem)
          .map((line) => Date.parse(line.time));
        for (let i = 1; i < times.length; i++) {
          expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(10_000 - 5);
        }
      }
      ingest.child.kill('SIGTERM');
      expect(await ingest.exited).toBe(0);
    } finally {
      await postgres.close();
      await redis.close();
    }
  });
});

describe('a database connection lost inside POST /events', () => {
  it('answers 503 SERVICE_UNAVAILABLE, and the process lives on and accepts the retry', async () => {
    const ingest = await startIngest({ SHUTDOWN_READINESS_DELAY_MS: '0' });
    const eventId = randomId('evt');
    const holder = await holdEventId(eventId);
    try {
      const posted = postEvent(ingest.url, eventId);
      const backend = await blockedBackend(holder.pid, posted);
      await db.query('SELECT pg_terminate_backend($1)', [backend]);
      const answer = await posted;
      expect(answer.status).toBe(503);
      const body = (await answer.json()) as {
        data: [{ type: string; attributes: { code: string; transient: boolean } }];
      };
      expect(body.data[0]).toMatchObject({
        type: 'api_error',
        attributes: { code: 'SERVICE_UNAVAILABLE', transient: true },
      });
    } finally {
      await holder.release();
    }
    const retried = await postEvent(ingest.url, eventId);
    expect(retried.status).toBe(202);
    expect(await retried.json()).toMatchObject({
      data: [{ id: eventId, attributes: { status: 'accepted' } }],
    });
    expect(ingest.child.exitCode).toBeNull();
    ingest.child.kill('SIGTERM');
    expect(await ingest.exited).toBe(0);
  });
});

describe('what the built ingest serves without a token (#32)', () => {
  it('the error reference its doc_url points at, found from the build', async () => {
    const ingest = await startIngest({ SHUTDOWN_READINESS_DELAY_MS: '0' });
    try {
      const refused = await get(`${ingest.url}/webhooks`);
      expect(refused.status).toBe(401);
      const body = (await refused.json()) as { data: [{ attributes: { doc_url: string } }] };
      const docUrl = body.data[0].attributes.doc_url;
      expect(docUrl).toBe(`${ingest.url}/docs/errors#INVALID_AUTHORIZATION_HEADER`);
      const reference = await get(docUrl.slice(0, docUrl.indexOf('#')));
      expect(reference.status).toBe(200);
      expect(await reference.text()).toContain('<a id="INVALID_AUTHORIZATION_HEADER"></a>');
    } finally {
      ingest.child.kill('SIGTERM');
      expect(await ingest.exited).toBe(0);
    }
  });

  it('the document of the whole API, read operations included (the gateway sends it /openapi.json)', async () => {
    const ingest = await startIngest({ SHUTDOWN_READINESS_DELAY_MS: '0' });
    try {
      const document = await get(`${ingest.url}/openapi.json`);
      expect(document.status).toBe(200);
      const paths = Object.keys(((await document.json()) as { paths: object }).paths);
      expect(paths).toEqual(expect.arrayContaining(['/items', '/items/{id}', '/webhooks']));
    } finally {
      ingest.child.kill('SIGTERM');
      expect(await ingest.exited).toBe(0);
    }
  });
});
