import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  DeploymentConflictError,
  Lifecycle,
  claimRedisPrefix,
  closeServer,
  createLogger,
  createDeliverQueue,
  createEventMatchQueue,
  createMetrics,
  httpSettings,
  listen,
  openDatabase,
  openRedis,
} from '@herald/runtime';
import { createApp } from './app.js';
import { loadConfig } from './config.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ name: 'ingest', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers((code) => process.exit(code), {
    readinessDelayMs: config.SHUTDOWN_READINESS_DELAY_MS,
  });

  const db = await openDatabase(config, 'ingest', logger, lifecycle);
  const redis = openRedis(config.REDIS_URL, 'producer', logger, lifecycle);
  await claimRedisPrefix(db, redis, config.REDIS_PREFIX, logger);
  const metrics = createMetrics();
  const eventMatchQueue = createEventMatchQueue(redis, config.REDIS_PREFIX, logger, {
    attempts: config.MATCH_JOB_ATTEMPTS,
    backoffMs: config.MATCH_JOB_BACKOFF_MS,
  });
  lifecycle.onShutdown('event-match-queue', () => eventMatchQueue.close());
  // Resends go on it.
  const deliverQueue = createDeliverQueue(redis, config.REDIS_PREFIX, logger);
  lifecycle.onShutdown('webhook-deliver-queue', () => deliverQueue.close());
  const app = createApp({
    eventMatchQueue,
    deliverQueue,
    enqueueTimeoutMs: config.ENQUEUE_TIMEOUT_MS,
    db,
    redis,
    logger,
    metrics,
    lifecycle,
    http: httpSettings(config),
    redisPrefix: config.REDIS_PREFIX,
    consoleDir: config.CONSOLE_DIR ?? fileURLToPath(new URL('../../console/dist', import.meta.url)),
    ssrfAllowCidrs: config.SSRF_ALLOW_CIDRS,
    siteId: config.SITE_ID,
  });
  const { server, url } = await listen(app, {
    port: config.PORT,
    host: config.HOST,
    docsUrl: config.DOCS_URL,
    logger,
  });
  lifecycle.onShutdown('http', () => closeServer(server, config.SHUTDOWN_GRACE_MS));
  logger.info({ url }, 'ingest listening');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DeploymentConflictError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(
      `ingest failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
