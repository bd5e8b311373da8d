import {
  claimPrefix,
  createMetrics,
  openCoordination,
  openDatabase,
  prepareCoordination,
  prepareDatabase,
  runMain,
  serveHttp,
  startService,
  startTracing,
} from '@herald/runtime';
import { createApp } from './app.js';
import { deliverySettings, loadConfig, openWorkerDb } from './config.js';
import { startDelivery } from './workers.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const { logger, lifecycle } = startService('delivery', config);
  await startTracing('herald-delivery', config, logger, lifecycle);

  const db = openDatabase(config, 'delivery', logger, lifecycle);
  const coordination = openCoordination(config, db, logger, lifecycle);
  const metrics = createMetrics();
  const app = createApp({ db, coordination, logger, metrics, lifecycle, docsUrl: config.DOCS_URL });
  // Listening first: while Postgres or Redis does not answer, /readyz says which and why.
  const { url } = await serveHttp(app, config, logger, lifecycle);
  await prepareDatabase(db, config, logger, lifecycle);
  await prepareCoordination(config, coordination, logger, lifecycle);
  await claimPrefix(db, coordination, logger);
  // Registered last so it closes first (hooks run in reverse): workers stop taking jobs and finish
  // the ones in flight while /readyz already answers 503.
  // The workers' own pool (commits without waiting for the WAL flush unless configured).
  const workerDb = openWorkerDb(config, db);
  lifecycle.onShutdown('worker-database', () => workerDb.close());
  const delivery = await startDelivery(
    { db: workerDb.db, coordination, logger, registry: metrics.registry },
    deliverySettings(config),
  );
  lifecycle.onShutdown('delivery-workers', () => delivery.close());
  lifecycle.started();
  logger.info({ url }, 'delivery listening; workers and sweeper started');
}

runMain('delivery', main);
