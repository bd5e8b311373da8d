import { fileURLToPath } from 'node:url';
import {
  claimPrefix,
  createDeliverQueue,
  createEventMatchQueue,
  createMetrics,
  httpSettings,
  openCoordination,
  openDatabase,
  openReplicaDb,
  prepareCoordination,
  prepareDatabase,
  registerAdminToken,
  runMain,
  serveHttp,
  startService,
  startTracing,
} from '@herald/runtime';
import { createApp } from './app.js';
import { loadConfig } from './config.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const { logger, lifecycle } = startService('ingest', config);
  await startTracing('herald-ingest', config, logger, lifecycle);

  const db = openDatabase(config, 'ingest', logger, lifecycle);
  const coordination = openCoordination(config, db, logger, lifecycle);
  const metrics = createMetrics();
  const eventMatchQueue = createEventMatchQueue(coordination, logger, {
    attempts: config.MATCH_JOB_ATTEMPTS,
    backoffMs: config.MATCH_JOB_BACKOFF_MS,
  });
  lifecycle.onShutdown('event-match-queue', () => eventMatchQueue.close());
  // Resends go on it.
  const deliverQueue = createDeliverQueue(coordination, logger);
  lifecycle.onShutdown('webhook-deliver-queue', () => deliverQueue.close());
  // GET /events, GET /webhook_calls and GET /webhook_stats read it (EventsDeps.replicaDb).
  const replicaDb = openReplicaDb(config, 'herald-ingest-replica');
  if (replicaDb) lifecycle.onShutdown('replica-database', () => replicaDb.close());
  const app = createApp({
    eventMatchQueue,
    deliverQueue,
    enqueueTimeoutMs: config.ENQUEUE_TIMEOUT_MS,
    enqueueWaitForWritesMs: config.ENQUEUE_WAIT_FOR_WRITES_MS,
    db,
    coordination,
    logger,
    metrics,
    lifecycle,
    http: httpSettings(config),
    consoleDir: config.CONSOLE_DIR ?? fileURLToPath(new URL('../../console/dist', import.meta.url)),
    ssrfAllowCidrs: config.SSRF_ALLOW_CIDRS,
    siteId: config.SITE_ID,
    replicaDb,
  });
  // Listening first: while Postgres or Redis does not answer, /readyz says which and why, and the
  // API answers 503 until the database is ready (Redis may come later: events are stored).
  const { url } = await serveHttp(app, config, logger, lifecycle);
  await prepareDatabase(db, config, logger, lifecycle);
  if (config.HERALD_ADMIN_TOKEN) {
    await registerAdminToken(db, config.HERALD_ADMIN_TOKEN, 'HERALD_ADMIN_TOKEN', logger);
  }
  await prepareCoordination(config, coordination, logger, lifecycle);
  await claimPrefix(db, coordination, logger);
  lifecycle.started();
  logger.info({ url }, 'ingest listening');
}

runMain('ingest', main);
