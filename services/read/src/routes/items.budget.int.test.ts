import { describe, expect } from 'vitest';
import { errorId } from '@herald/contract';
import type { Redis } from '@herald/runtime';
import { createPostgresDb, type Db } from '@herald/store';
import {
  TEST_DATABASE_URL,
  createTestToken,
  randomId,
  seedDocs,
  serve,
  testDeps,
  type TestDb,
  type TestServer,
} from '@herald/testkit';
import { integrationTest } from '@herald/testkit/fixtures';
import { createApp } from '../app.js';
import { IndexManager } from '../index-manager.js';
import type { ReadLimits } from '../read-gate.js';

/**
 * The time budget and each token's share of the read pool, against real Postgres: slow listings
 * (a regular expression the cost rule lets through, over 8,000 texts of 1 KB: ~1 s per
 * statement on an idle machine) are cancelled at
 * the statement timeout, and while one client sends many, another client's fast reads and
 * /readyz are served at once.
 */

/** The file's database and Redis, and startApp: startAppOn (below) on them. */
const it = integrationTest().extend(
  'startApp',
  ({ testDb, redis }) =>
    (options: AppOptions) =>
      startAppOn(testDb, redis, options),
);

let reader: string;
let other: string;

const RECORDS = 8000;
// 20 quantifiers and 981 atoms, within the cost rule; no text holds a "!".
const SLOW = `/items?filter[type]=doc&filter[fields][body][matches][pattern]=${encodeURIComponent(
  `${'.{0,49}'.repeat(20)}!`,
)}`;

it.beforeAll(async ({ db }) => {
  await seedDocs(db, RECORDS);
  reader = await createTestToken(db, 'read_only', 'slow-client');
  other = await createTestToken(db, 'read_only', 'other-client');
});

type AppOptions = { poolSize: number; statementTimeoutMs: number } & ReadLimits;

/** A read app whose routes use a pool of their own, as openReadDb gives the services. */
async function startAppOn(
  testDb: TestDb,
  redis: Redis,
  options: AppOptions,
): Promise<{ server: TestServer; readDb: Db; applicationName: string; close(): Promise<void> }> {
  const applicationName = randomId('herald_read');
  const readDb = createPostgresDb({
    connectionString: TEST_DATABASE_URL,
    searchPath: testDb.schema!,
    maxConnections: options.poolSize,
    applicationName,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  const deps = testDeps(testDb.db, redis);
  const server = await serve(
    createApp({
      ...deps,
      indexes: new IndexManager(testDb.db, deps.logger, false),
      readDb,
      readLimits: {
        statementsPerToken: options.statementsPerToken,
        statementTimeoutMs: options.statementTimeoutMs,
      },
    }),
  );
  return {
    server,
    readDb,
    applicationName,
    async close() {
      await server.close();
      await readDb.close();
      // Its producer queue (unused by reads) leaves its meta key in Redis.
      await deps.eventMatchQueue.obliterate({ force: true });
      await deps.eventMatchQueue.close();
    },
  };
}

async function get(url: string, token: string) {
  const started = performance.now();
  const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { data: { attributes?: Record<string, any> }[] };
  return { status: res.status, body, ms: performance.now() - started };
}

describe('GET /items time budget', () => {
  it('cancels a statement past READ_STATEMENT_TIMEOUT_MS: 422 QUERY_TIMEOUT', async ({
    startApp,
  }) => {
    const app = await startApp({ poolSize: 4, statementTimeoutMs: 300, statementsPerToken: 2 });
    try {
      const slow = await get(`${app.server.url}${SLOW}`, reader);
      expect(slow.status, JSON.stringify(slow.body)).toBe(422);
      expect(slow.body.data[0]).toMatchObject({
        id: errorId('QUERY_TIMEOUT'),
        attributes: { code: 'QUERY_TIMEOUT', details: { timeout_ms: 300 } },
      });
      // Other reads on the same pool go on being answered.
      expect((await get(`${app.server.url}/items?filter[type]=doc`, reader)).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe('GET /items: one client cannot take the whole pool', () => {
  it("serves another client's fast reads and /readyz at once while one client's slow reads run", async ({
    startApp,
    db,
  }) => {
    // A long timeout: the fast reads' bound below (half of it) leaves room for a busy machine.
    const app = await startApp({ poolSize: 4, statementTimeoutMs: 3000, statementsPerToken: 2 });
    try {
      const slow = Array.from({ length: 6 }, () => get(`${app.server.url}${SLOW}`, reader));
      // Wait until the slow client's statements hold connections of the read pool.
      await expect
        .poll(
          async () => {
            const { rows } = await db.query<{ n: string }>(
              `SELECT count(*) AS n FROM pg_stat_activity
               WHERE application_name = $1 AND state = 'active' AND query LIKE '%~*%'`,
              [app.applicationName],
            );
            return Number(rows[0]!.n);
          },
          { timeout: 10_000, interval: 20 },
        )
        .toBeGreaterThanOrEqual(2);

      const fast: { path: string; status: number; ms: number }[] = [];
      for (let i = 0; i < 5; i++) {
        for (const path of [`/items?filter[type]=doc&page[offset]=${i * 7}`, `/items/d${i}`]) {
          const res = await get(`${app.server.url}${path}`, other);
          fast.push({ path, status: res.status, ms: res.ms });
        }
      }
      const ready = await fetch(`${app.server.url}/readyz`);
      fast.push({ path: '/readyz', status: ready.status, ms: 0 });

      // Without the share, the slow client's twelve statements fill the pool of four for a whole
      // timeout (3 s) or more, and every fast read waits behind them.
      for (const answer of fast) {
        expect(answer.status, answer.path).toBe(200);
        expect(answer.ms, answer.path).toBeLessThan(1500);
      }
      // The slow client is answered too: within the budget, cancelled at it, or told to wait
      // its turn.
      for (const answer of await Promise.all(slow)) {
        if (answer.status === 200) continue;
        const code = answer.body.data[0]?.attributes?.['code'] as string;
        expect([422, 429], JSON.stringify(answer.body)).toContain(answer.status);
        expect(['QUERY_TIMEOUT', 'RATE_LIMIT_EXCEEDED']).toContain(code);
      }
    } finally {
      await app.close();
    }
  });
});
