import { resolve } from 'node:path';
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
  redisReady,
  registerAdminToken,
  runMain,
  serveHttp,
  startService,
  startTracing,
} from '@herald/runtime';
import { deliverySettings, openWorkerDb, startDelivery } from '@herald/delivery';
import { openReadDb, readLimits } from '@herald/read';
import { loadOrCreateAdminToken } from './admin-token.js';
import { createApp } from './app.js';
import { loadConfig } from './config.js';
import { EmbeddedPostgresError, embeddedPostgresUrlFile } from '@herald/store';
import {
  PgliteFolderError,
  embeddedPostgresDir,
  startEmbeddedDatabase,
} from './embedded-database.js';
import { PidLockError, acquirePidLock } from './pid-lock.js';

/** Single-process mode: ingest + read + delivery on one port, on the embedded defaults. */
async function main(): Promise<void> {
  const settings = loadConfig(process.env);
  const { logger, lifecycle } = startService('herald', settings);
  await startTracing('herald', settings, logger, lifecycle);

  let databaseUrl = settings.DATABASE_URL;
  if (!databaseUrl) {
    const release = await acquirePidLock(resolve(settings.HERALD_DATA_DIR, 'herald.pid'));
    lifecycle.onShutdown('pid-lock', release);
    const log = logger.child({ module: 'embedded-postgres' });
    const embedded = await startEmbeddedDatabase({
      dataDir: settings.HERALD_DATA_DIR,
      port: settings.EMBEDDED_POSTGRES_PORT,
      log: (message) => log.info(message),
    });
    // Registered before the pools, so it stops after they have closed.
    lifecycle.onShutdown('embedded-postgres', () => embedded.stop());
    embedded.onUnexpectedExit((code, signal) => {
      log.fatal({ code, signal }, 'the embedded PostgreSQL exited; stopping');
      void lifecycle.shutdown('embedded PostgreSQL exited').finally(() => process.exit(1));
    });
    log.info(
      { postgresPid: embedded.pid, port: new URL(embedded.url).port },
      'embedded PostgreSQL started',
    );
    databaseUrl = embedded.url;
  }
  // From here on the single process runs as on any PostgreSQL: the same pools, plan-once share
  // and statement budgets. Without REDIS_URL the queues run on that PostgreSQL too (Postgres
  // alone): the embedded default needs nothing but Node.
  const config = { ...settings, DATABASE_URL: databaseUrl };
  const db = openDatabase(config, 'standalone', logger, lifecycle);
  const coordination = openCoordination(config, db, logger, lifecycle);

  const tokenFile = resolve(config.HERALD_DATA_DIR, 'admin-token');
  const adminToken = config.HERALD_ADMIN_TOKEN ?? (await loadOrCreateAdminToken(tokenFile));
  const metrics = createMetrics();
  const eventMatchQueue = createEventMatchQueue(coordination, logger, {
    attempts: config.MATCH_JOB_ATTEMPTS,
    backoffMs: config.MATCH_JOB_BACKOFF_MS,
  });
  lifecycle.onShutdown('event-match-queue', () => eventMatchQueue.close());
  // Resends go on it.
  const deliverQueue = createDeliverQueue(coordination, logger);
  lifecycle.onShutdown('webhook-deliver-queue', () => deliverQueue.close());
  // GET /items runs on a pool of its own with a time budget (Postgres only; see @herald/read),
  // and one on the replica of READ_DATABASE_URL if set.
  const readDb = openReadDb(config, db, 'herald-standalone-items');
  lifecycle.onShutdown('read-database', () => readDb.close());
  // The lists of ingest that tolerate a replica's lag read it too, without the items' budget.
  const replicaDb = openReplicaDb(config, 'herald-standalone-replica');
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
    ssrfAllowCidrs: config.SSRF_ALLOW_CIDRS,
    siteId: config.SITE_ID,
    consoleDir: config.CONSOLE_DIR ?? fileURLToPath(new URL('../../console/dist', import.meta.url)),
    http: httpSettings(config),
    readDb: readDb.db,
    readReplicaDb: readDb.replica,
    readAfterWaitMs: config.READ_AFTER_WAIT_MS,
    replicaDb,
    readLimits: readLimits(config, readDb.db),
  });
  const { url } = await serveHttp(app, config, logger, lifecycle);
  // A Postgres or Redis that does not answer: the banner says what Herald waits for (once), the
  // log at most every 10 s, /readyz with each request. The API opens once the database is ready;
  // the delivery workers start once Redis is.
  const announceOnce = (): ((problem: string) => void) => {
    let announced = false;
    return (problem) => {
      if (announced) return;
      announced = true;
      process.stdout.write(
        `\nHerald is waiting: ${problem}.\n` +
          `  ${url}/readyz answers 503 with the reason until then. Herald goes on by itself once\n` +
          `  it answers, and prints its banner.\n\n`,
      );
    };
  };
  const redisAnswers =
    coordination.kind === 'redis'
      ? redisReady(coordination.redis, announceOnce())
      : Promise.resolve();
  await prepareDatabase(db, config, logger, lifecycle, announceOnce());
  await prepareCoordination(config, coordination, logger, lifecycle);
  const adminTokenWorks = await registerAdminToken(
    db,
    adminToken,
    config.HERALD_ADMIN_TOKEN ? 'HERALD_ADMIN_TOKEN' : 'HERALD_DATA_DIR/admin-token',
    logger,
  );
  await claimPrefix(db, coordination, logger);
  lifecycle.started();
  await redisAnswers;
  // Registered last so it closes first: workers stop taking jobs and finish those in flight. The
  // workers (and the one sweeper startDelivery runs) use their own pool on Postgres: their commits
  // need not wait for the WAL flush (DELIVERY_SYNCHRONOUS_COMMIT), unlike POST /events.
  const workerDb = openWorkerDb(config, db);
  lifecycle.onShutdown('worker-database', () => workerDb.close());
  const delivery = await startDelivery(
    { db: workerDb.db, coordination, logger, registry: metrics.registry },
    deliverySettings(config),
  );
  lifecycle.onShutdown('delivery-workers', () => delivery.close());
  logger.info(
    { url, database: settings.DATABASE_URL ? 'postgres' : 'embedded' },
    'herald listening',
  );
  const source = config.HERALD_ADMIN_TOKEN ? 'HERALD_ADMIN_TOKEN' : tokenFile;
  const tokenHint = !adminTokenWorks
    ? `the admin token in ${source} was revoked: use another admin token`
    : config.HERALD_ADMIN_TOKEN
      ? 'the admin token is the HERALD_ADMIN_TOKEN you set'
      : `the admin token is in ${tokenFile}:  export HERALD_TOKEN=$(cat ${tokenFile})`;
  const loopbackHint = config.loopbackReceiversByDefault
    ? '  webhooks may call receivers on this machine (127.0.0.0/8, ::1): a development default of\n' +
      '  the embedded database; SSRF_ALLOW_CIDRS=none keeps the whole SSRF guard\n'
    : '';
  process.stdout.write(
    `\nHerald is running at ${url}\n` +
      `  the console:  ${url}/console\n` +
      `  ${tokenHint}\n` +
      `  try:  curl -H "Authorization: Bearer $HERALD_TOKEN" ${url}/webhooks\n` +
      `  more tokens (producer, read_only):  pnpm herald tokens create --name <name> --role producer\n` +
      `  or the console's Tokens screen:  ${url}/console/#/tokens\n` +
      (settings.DATABASE_URL
        ? ''
        : `  the database:  psql "$(cat ${embeddedPostgresUrlFile(embeddedPostgresDir(settings.HERALD_DATA_DIR))})"\n`) +
      `${loopbackHint}\n`,
  );
}

runMain('herald', main, [PidLockError, PgliteFolderError, EmbeddedPostgresError]);
