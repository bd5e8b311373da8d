import {
  claimRedisPrefix,
  createMetrics,
  openDatabase,
  openRedis,
  prepareDatabase,
  runMain,
  serveHttp,
  startService,
} from '@herald/runtime';
import { createApp } from './app.js';
import { deliverySettings, loadConfig, openWorkerDb } from './config.js';
import { startDelivery } from './workers.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const { logger, lifecycle } = startService('delivery', config);

  const db = openDatabase(config, 'delivery', logger, lifecycle);
  const redis = openRedis(config.REDIS_URL, 'producer', logger, lifecycle);
  const metrics = createMetrics();
  const app = createApp({ db, redis, logger, metrics, lifecycle, docsUrl: config.DOCS_URL });
  // Listening first: while Postgres or Redis does not answer, /readyz says which and why.
  const { url } = await serveHttp(app, config, logger, lifecycle);
  await prepareDatabase(db, config, logger, lifecycle);
  await claimRedisPrefix(db, redis, config.REDIS_PREFIX, logger);
  // Registered last so it closes first (hooks run in reverse): workers stop taking jobs and finish
  // the ones in flight while /readyz already answers 503.
  // The workers' own pool (commits without waiting for the WAL flush unless configured).
  const workerDb = openWorkerDb(config, db);
  lifecycle.onShutdown('worker-database', () => workerDb.close());
  const delivery = await startDelivery(
    { db: workerDb.db, redis, logger, registry: metrics.registry },
    deliverySettings(config, config.REDIS_URL),
  );
  lifecycle.onShutdown('delivery-workers', () => delivery.close());
  lifecycle.started();
  logger.info({ url }, 'delivery listening; workers and sweeper started');
}

runMain('delivery', main);
