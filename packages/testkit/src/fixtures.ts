import type { Express } from 'express';
import { afterAll, beforeAll, test, type TestAPI } from 'vitest';
import type { Role } from '@herald/contract';
import type { HttpSettings, Redis } from '@herald/runtime';
import type { Db } from '@herald/store';
import { testApi, type TestApi } from './api.js';
import {
  createTestDb,
  createTestToken,
  serve,
  testDeps,
  testRedis,
  type TestDb,
  type TestDeps,
  type TestServer,
} from './index.js';

// vitest fixtures for the integration tests: made once per file and closed after its last test.
// The slow ones (a migrated database, a served app) are made in a beforeAll hook that the factory
// registers on the suite that calls it, so under the hook timeout rather than the first test's.
// Seed with `it.beforeAll(async ({ db }) => …)`.

/**
 * The context of a test whose fixtures F are all file-scoped, in the shape vitest's `extend`
 * builder tracks scopes with: so that hooks (`it.beforeAll`) see F, also once a file extends the
 * test further with fixtures of its own.
 */
export type FileFixtures<F> = F & {
  readonly $__worker?: object;
  readonly $__file?: F;
  readonly $__test?: object;
};

export interface IntegrationTestOptions {
  /**
   * The database: a fresh schema in the test Postgres (default), or in the embedded PostgreSQL
   * (the single process's; see createTestDb).
   */
  db?: 'postgres' | 'embedded';
}

export interface IntegrationFixtures {
  /** A migrated database of this file's own. */
  testDb: TestDb;
  /** testDb.db */
  db: Db;
  /** A producer connection to the test Redis, connected. */
  redis: Redis;
}

/** vitest's `test` with the database and Redis connection of the file. */
export function integrationTest(
  options: IntegrationTestOptions = {},
): TestAPI<FileFixtures<IntegrationFixtures>> {
  const it = test.extend<{ $file: IntegrationFixtures }>({
    testDb: [
      // vitest reads what a fixture needs from its destructuring: this one needs nothing.
      // eslint-disable-next-line no-empty-pattern
      async ({}, use) => {
        const testDb = await createTestDb(options.db);
        await use(testDb);
        await testDb.cleanup();
      },
      { scope: 'file' },
    ],
    db: [({ testDb }, use) => use(testDb.db), { scope: 'file' }],
    redis: [
      // vitest reads what a fixture needs from its destructuring: this one needs nothing.
      // eslint-disable-next-line no-empty-pattern
      async ({}, use) => {
        const redis = testRedis();
        // A producer connection fails fast (and rate limiting fails open) until it is connected.
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        await use(redis);
        await redis.quit();
      },
      { scope: 'file' },
    ],
  });
  it.beforeAll(({ db: _db }) => {});
  return it as TestAPI<FileFixtures<IntegrationFixtures>>;
}

export interface AppTestOptions<E extends object> extends IntegrationTestOptions {
  /** Overrides of the HTTP settings (body limit, rate limits, a bootstrap token…). */
  http?: Partial<HttpSettings>;
  /** The role of the token `api` sends; default admin. */
  role?: Role;
  /** What the app gets beyond testDeps (an index manager…); onCleanup runs once it is closed. */
  deps?: (deps: TestDeps, onCleanup: (cleanup: () => void | Promise<void>) => void) => E;
}

export interface AppFixtures<E extends object> {
  /** testDeps on the file's database and Redis, with what options.deps adds. */
  deps: TestDeps & E;
  /** The app, served on an ephemeral port. */
  server: TestServer;
  /** A client of the app with a token of options.role. */
  api: TestApi;
}

/**
 * The app `createApp` makes of `deps` (testDeps: a pipeline's coordination makes its workers take
 * the app's jobs), served, and a client of it with a token of `role`; `onCleanup` is given what
 * closes the server and the deps' queues. For fixtures of a file's own (`test.extend('api', …)`).
 */
export async function serveTestApi<D extends TestDeps>(
  createApp: (deps: D) => Express,
  deps: D,
  onCleanup: (cleanup: () => Promise<void>) => void,
  role: Role = 'admin',
): Promise<TestApi> {
  const server = await serve(createApp(deps));
  onCleanup(async () => {
    await server.close();
    await deps.eventMatchQueue.close();
    await deps.deliverQueue.close();
  });
  return testApi(server.url, await createTestToken(deps.db, role));
}

/** integrationTest, plus the app that createApp makes of testDeps, served. */
export function appTest<E extends object = object>(
  createApp: (deps: TestDeps & NoInfer<E>) => Express,
  options: AppTestOptions<E> = {},
): TestAPI<FileFixtures<IntegrationFixtures & AppFixtures<E>>> {
  type Fixtures = FileFixtures<IntegrationFixtures & AppFixtures<E>>;
  const it = integrationTest(options).extend<{ $file: AppFixtures<E> }>({
    deps: [
      async ({ db, redis }, use) => {
        const deps = testDeps(db, redis, options.http);
        const cleanups: (() => void | Promise<void>)[] = [];
        const extra = options.deps?.(deps, (cleanup) => cleanups.push(cleanup)) ?? ({} as E);
        await use({ ...deps, ...extra });
        for (const cleanup of cleanups.reverse()) await cleanup();
        await deps.eventMatchQueue.close();
      },
      { scope: 'file' },
    ],
    server: [
      async ({ deps }, use) => {
        const server = await serve(createApp(deps));
        await use(server);
        await server.close();
      },
      { scope: 'file' },
    ],
    api: [
      async ({ server, db }, use) =>
        use(testApi(server.url, await createTestToken(db, options.role ?? 'admin'))),
      { scope: 'file' },
    ],
  }) as TestAPI<Fixtures>;
  it.beforeAll(({ api: _api }) => {});
  return it;
}

/**
 * A migrated database (createTestDb) for the suite that calls this: made before its first test,
 * dropped after its last. For a describe block that needs a database of its own apart from the
 * file's other blocks; read it in tests and hooks, once made.
 */
export function suiteTestDb(kind: 'postgres' | 'embedded' = 'postgres'): TestDb {
  let testDb: TestDb | undefined;
  beforeAll(async () => {
    testDb = await createTestDb(kind);
  }, 60_000);
  afterAll(async () => {
    await testDb?.cleanup();
  });
  const made = (): TestDb => {
    if (!testDb) throw new Error('the suite database is made before its first test');
    return testDb;
  };
  return {
    get db() {
      return made().db;
    },
    get schema() {
      return made().schema;
    },
    connect: (options) => made().connect(options),
    cleanup: () => made().cleanup(),
  };
}
