/**
 * bench:embedded's baseline: Herald's single process as it ran on PGlite before #29 (the
 * composition of services/standalone/src/main.ts then), on PGlite in its own event loop
 * (BENCH_PGLITE=inline) or on a worker thread (BENCH_PGLITE=worker). Seeds its data set
 * (BENCH_RECORDS, BENCH_RECEIVER_URL) before it listens, prints the seeding time and then the
 * same "Herald is running at" line.
 *
 * Environment: the single process's (HERALD_DATA_DIR, REDIS_URL, REDIS_PREFIX, PORT, …).
 */
import { join } from 'node:path';
import { z } from 'zod';
import {
  EnvironmentResolver,
  claimPrefix,
  commonEnv,
  createApiApp,
  createMetrics,
  httpEnv,
  httpSettings,
  createRedis,
  parseEnv,
  registerAdminToken,
  serveHttp,
  startService,
} from '@herald/runtime';
import { ingestEnv, ingestPublicRouters, ingestRouter, openIngestQueues } from '@herald/ingest';
import { openReadDb, readEnv, readLimits, readRouter } from '@herald/read';
import { deliveryEnv, deliverySettings, openWorkerDb, startDelivery } from '@herald/delivery';
import { createPgliteDb, createWebhookCallMonths, migrate } from '@herald/store';
import { createPgliteWorkerDb } from './pglite-worker-db.js';
import { benchRedisCoordination } from '../lib/coordination.js';
import { seed } from './seed.js';

const config = parseEnv(
  z.object({ ...commonEnv, ...httpEnv, ...ingestEnv, ...readEnv, ...deliveryEnv }),
  process.env,
);
const { logger, lifecycle } = startService('herald-pglite', config);
const dataDir = join(config.HERALD_DATA_DIR, 'pgdata');
const db =
  process.env['BENCH_PGLITE'] === 'worker'
    ? await createPgliteWorkerDb(dataDir)
    : await createPgliteDb({ dataDir });
lifecycle.onShutdown('database', () => db.close());
await migrate(db);
if (config.HERALD_ADMIN_TOKEN) {
  await registerAdminToken(db, config.HERALD_ADMIN_TOKEN, 'HERALD_ADMIN_TOKEN', logger);
}
await createWebhookCallMonths(db);
const records = Number(process.env['BENCH_RECORDS'] ?? 0);
if (records > 0) {
  const seeding = performance.now();
  await seed(db, records, process.env['BENCH_RECEIVER_URL']!);
  process.stdout.write(`seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s\n`);
}

// PGlite cannot host the queues: the baseline runs them on Redis, as it did.
const redisUrl = config.REDIS_URL!;
const redis = createRedis(redisUrl, 'producer', logger);
const coordination = benchRedisCoordination(redis, redisUrl, config.REDIS_PREFIX, logger);
lifecycle.onShutdown('coordination', () => coordination.close());
await claimPrefix(db, coordination, logger);
const metrics = createMetrics();
const { eventMatchQueue, deliverQueue } = openIngestQueues(config, coordination, logger, lifecycle);
const readDb = openReadDb(config, db, 'herald-standalone-items');
const deps = {
  eventMatchQueue,
  deliverQueue,
  enqueueTimeoutMs: config.ENQUEUE_TIMEOUT_MS,
  enqueueWaitForWritesMs: config.ENQUEUE_WAIT_FOR_WRITES_MS,
  db,
  coordination,
  logger,
  metrics,
  lifecycle,
  ssrfAllowCidrs: config.SSRF_ALLOW_CIDRS,
  siteId: config.SITE_ID,
  consoleDir: join(config.HERALD_DATA_DIR, 'no-console'),
  http: httpSettings(config),
  readDb: readDb.db,
  readLimits: readLimits(config, readDb.db),
  environments: new EnvironmentResolver(db),
};
const app = createApiApp(deps, [readRouter(deps), ingestRouter(deps)], ingestPublicRouters(deps));
const { url } = await serveHttp(app, config, logger, lifecycle);
const workerDb = openWorkerDb(config, db);
const delivery = await startDelivery(
  { db: workerDb.db, coordination, logger, registry: metrics.registry },
  deliverySettings(config),
);
lifecycle.onShutdown('delivery-workers', () => delivery.close());
lifecycle.started();
process.stdout.write(`\nHerald is running at ${url}\n`);
