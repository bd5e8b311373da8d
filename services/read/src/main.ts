import {
  createMetrics,
  httpSettings,
  openCoordination,
  openDatabase,
  prepareDatabase,
  registerAdminToken,
  runMain,
  serveHttp,
  startService,
} from '@herald/runtime';
import { createApp } from './app.js';
import { IndexManager } from './index-manager.js';
import { loadConfig, openReadDb, readLimits } from './config.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const { logger, lifecycle } = startService('read', config);

  const db = openDatabase(config, 'read', logger, lifecycle);
  const coordination = openCoordination(config, db, logger, lifecycle);
  const metrics = createMetrics();
  const readDb = openReadDb(config, db, 'herald-read-items');
  lifecycle.onShutdown('read-database', () => readDb.close());
  const app = createApp({
    db,
    coordination,
    logger,
    metrics,
    lifecycle,
    http: httpSettings(config),
    indexes: new IndexManager(db, logger, config.READ_EXPRESSION_INDEXES),
    readDb: readDb.db,
    readReplicaDb: readDb.replica,
    readAfterWaitMs: config.READ_AFTER_WAIT_MS,
    readLimits: readLimits(config, readDb.db),
  });
  // Listening first: while Postgres or Redis does not answer, /readyz says which and why, and the
  // API answers 503 until the database is ready.
  const { url } = await serveHttp(app, config, logger, lifecycle);
  await prepareDatabase(db, config, logger, lifecycle);
  if (config.HERALD_ADMIN_TOKEN) {
    await registerAdminToken(db, config.HERALD_ADMIN_TOKEN, 'HERALD_ADMIN_TOKEN', logger);
  }
  lifecycle.started();
  logger.info({ url }, 'read listening');
}

runMain('read', main);
