/**
 * The delivery service's workers in a process of their own, as deployed beside the ingest service
 * (docker-compose's `delivery`, services/delivery/src/main.ts): started by the benchmark for its
 * "two processes" rows and its capacity sweep (--processes). Its settings come from the environment
 * the parent gives it (DELIVERY_*, REDIS_PREFIX, SSRF_ALLOW_CIDRS), the parent's test schema
 * (BENCH_SCHEMA) and BENCH_COORDINATION: `redis` (the default) or `postgres` (no REDIS_URL: the
 * queues on Postgres, the queue schema migrated by the parent, as a second process of a
 * deployment finds it), on the service's pool as services/delivery/src/main.ts opens it.
 *
 * Parent → child messages: {cmd:'exit'}. Child → parent: {ready:true} once the workers run.
 */
import { deliverySettings, loadConfig, startDelivery } from '@herald/delivery';
import {
  createMetrics,
  createPostgresCoordination,
  createRedis,
  createRedisCoordination,
  type Coordination,
} from '@herald/runtime';
import { createPostgresDb } from '@herald/store';
import { TEST_DATABASE_URL, TEST_REDIS_URL, silentLogger } from '@herald/testkit';

const schema = process.env['BENCH_SCHEMA'];
if (!schema) throw new Error('BENCH_SCHEMA is required');
const config = loadConfig(process.env);
const logger = silentLogger();
// The workers' own pool, as services/delivery/src/main.ts opens it (DELIVERY_SYNCHRONOUS_COMMIT).
const db = createPostgresDb({
  connectionString: TEST_DATABASE_URL,
  searchPath: schema,
  maxConnections: config.DB_POOL_SIZE,
  // BENCH_PLAN_ONCE=0 (./run.ts): without the plan-once pool, to compare.
  planOncePoolSize: process.env['BENCH_PLAN_ONCE'] === '0' ? 0 : config.DB_POOL_SIZE,
  synchronousCommit: config.DELIVERY_SYNCHRONOUS_COMMIT,
  applicationName: `${schema}-workers`, // WORKERS_POOL in ./run.ts
});
const redis =
  process.env['BENCH_COORDINATION'] === 'postgres'
    ? undefined
    : createRedis(TEST_REDIS_URL, 'producer', logger);
// The service's own pool (openDatabase in main.ts), which Postgres-only coordination runs on.
const serviceDb = redis
  ? undefined
  : createPostgresDb({
      connectionString: TEST_DATABASE_URL,
      searchPath: schema,
      maxConnections: config.DB_POOL_SIZE,
      applicationName: `${schema}-workers-service`,
    });
const coordination: Coordination = redis
  ? createRedisCoordination({
      redis,
      target: TEST_REDIS_URL,
      prefix: config.REDIS_PREFIX,
      createSubscriber: () => createRedis(TEST_REDIS_URL, 'worker', logger),
    })
  : createPostgresCoordination({
      db: serviceDb!,
      url: TEST_DATABASE_URL,
      prefix: config.REDIS_PREFIX,
      logger,
    });
const delivery = await startDelivery(
  { db, coordination, logger, registry: createMetrics().registry },
  deliverySettings(config),
);

process.on('message', (message: { cmd: string }) => {
  if (message.cmd !== 'exit') return;
  void (async () => {
    await delivery.close();
    await coordination.close(); // on Redis: quits `redis`
    await serviceDb?.close();
    await db.close();
    process.exit(0);
  })();
});
process.send!({ ready: true });
