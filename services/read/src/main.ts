import {
  ConfigError,
  Lifecycle,
  closeServer,
  createLogger,
  createMetrics,
  httpSettings,
  listen,
  openDatabase,
  openRedis,
} from '@herald/runtime';
import { createApp } from './app.js';
import { IndexManager } from './index-manager.js';
import { loadConfig, openReadDb, readLimits } from './config.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ name: 'read', level: config.LOG_LEVEL });
  const lifecycle = new Lifecycle(logger);
  lifecycle.installSignalHandlers((code) => process.exit(code), {
    readinessDelayMs: config.SHUTDOWN_READINESS_DELAY_MS,
  });

  const db = await openDatabase(config, 'read', logger, lifecycle);
  const redis = openRedis(config.REDIS_URL, 'producer', logger, lifecycle);
  const metrics = createMetrics();
  const readDb = openReadDb(config, db, 'herald-read-items');
  lifecycle.onShutdown('read-database', () => readDb.close());
  const app = createApp({
    db,
    redis,
    logger,
    metrics,
    lifecycle,
    http: httpSettings(config),
    redisPrefix: config.REDIS_PREFIX,
    indexes: new IndexManager(db, logger, config.READ_EXPRESSION_INDEXES),
    readDb: readDb.db,
    readLimits: readLimits(config, readDb.db),
  });
  const { server, url } = await listen(app, {
    port: config.PORT,
    host: config.HOST,
    docsUrl: config.DOCS_URL,
    logger,
  });
  lifecycle.onShutdown('http', () => closeServer(server, config.SHUTDOWN_GRACE_MS));
  logger.info({ url }, 'read listening');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(
      `read failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
