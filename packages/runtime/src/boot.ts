import {
  createPostgresDb,
  createWebhookCallMonths,
  migrate,
  registerBootstrapToken,
  type Db,
} from '@herald/store';
import { ConfigError, type RedisClusterTarget } from './config.js';
import { waitForDatabase } from './dependencies.js';
import {
  createPostgresCoordination,
  createRedisCoordination,
  migrateQueues,
  type Coordination,
} from './coordination.js';
import type { HttpSettings } from './http/create-api-app.js';
import type { Logger } from './logger.js';
import { closeRedis, connectRedis, createRedis, type Redis, type RedisTarget } from './redis.js';
import type { Lifecycle } from './shutdown.js';

/** The parsed common variables (see commonEnv). */
export interface CommonConfig {
  DATABASE_URL?: string | undefined;
  HERALD_DATA_DIR: string;
  DB_POOL_SIZE: number;
  MIGRATE_ON_START: boolean;
}

/** The parsed HTTP variables (see httpEnv). */
export interface HttpConfig {
  DOCS_URL?: string | undefined;
  HTTP_BODY_LIMIT_BYTES: number;
  RATE_LIMIT_WINDOW_MS: number;
  RATE_LIMIT_ADMIN: number;
  RATE_LIMIT_READ_ONLY: number;
  RATE_LIMIT_PRODUCER: number;
  RATE_LIMIT_ANONYMOUS: number;
  AUTH_CACHE_TTL_MS: number;
  ACCESS_LOG_SAMPLE_EVENTS: number;
}

export function httpSettings(config: HttpConfig): HttpSettings {
  return {
    docsUrl: config.DOCS_URL,
    bodyLimitBytes: config.HTTP_BODY_LIMIT_BYTES,
    rateLimits: {
      windowMs: config.RATE_LIMIT_WINDOW_MS,
      perRole: {
        admin: config.RATE_LIMIT_ADMIN,
        read_only: config.RATE_LIMIT_READ_ONLY,
        producer: config.RATE_LIMIT_PRODUCER,
      },
      anonymous: config.RATE_LIMIT_ANONYMOUS,
    },
    authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
    accessLog: { sampleRates: { 'POST /events': config.ACCESS_LOG_SAMPLE_EVENTS } },
  };
}

/**
 * Opens the database and registers its close. DATABASE_URL is required here: the single process
 * sets it to its embedded PostgreSQL's when unset (services/standalone). The pool connects on first
 * use: prepareDatabase, once the process listens, waits for it and migrates.
 */
export function openDatabase(
  config: CommonConfig,
  name: string,
  logger: Logger,
  lifecycle: Lifecycle,
): Db {
  if (!config.DATABASE_URL) {
    throw new ConfigError([
      'DATABASE_URL: required (only the single process, pnpm start, has an embedded database)',
    ]);
  }
  const db = createPostgresDb({
    connectionString: config.DATABASE_URL,
    maxConnections: config.DB_POOL_SIZE,
    applicationName: `herald-${name}`,
  });
  lifecycle.onShutdown('database', () => db.close());
  logger.info({ kind: db.kind }, 'database opened');
  return db;
}

/**
 * Waits until the database answers (saying what is wrong in the log at most every 10 s, in
 * /readyz, and to `onWaiting`), then applies the migrations (MIGRATE_ON_START) and makes the
 * delivery log's partitions.
 */
export async function prepareDatabase(
  db: Db,
  config: CommonConfig,
  logger: Logger,
  lifecycle: Lifecycle,
  onWaiting?: (problem: string) => void,
): Promise<void> {
  lifecycle.startStep('waiting for the database');
  await waitForDatabase(db, logger, () => lifecycle.draining, onWaiting);
  if (config.MIGRATE_ON_START) {
    lifecycle.startStep('applying migrations');
    const applied = await migrate(db);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    // The delivery log's partitions of this month and the next two (the sweeper keeps them).
    await createWebhookCallMonths(db);
  }
}

/**
 * A pool on the replica of READ_DATABASE_URL (DB_POOL_SIZE connections, `statementTimeoutMs` as
 * the read pool's), or undefined without one: the reads that may lag then use `db`. The caller
 * closes it.
 */
export function openReplicaDb(
  config: { READ_DATABASE_URL?: string | undefined; DB_POOL_SIZE: number },
  applicationName: string,
  statementTimeoutMs?: number,
): Db | undefined {
  if (!config.READ_DATABASE_URL) return undefined;
  return createPostgresDb({
    connectionString: config.READ_DATABASE_URL,
    maxConnections: config.DB_POOL_SIZE,
    applicationName,
    ...(statementTimeoutMs ? { statementTimeoutMs } : {}),
  });
}

/**
 * Stores the configured admin token (HERALD_ADMIN_TOKEN, or the single process's file) as the
 * `bootstrap` token named `name`, so that it authenticates, is listed and can be revoked
 * (docs/api.md, Access tokens). false, and a warning, when it was revoked: it then does not work.
 */
export async function registerAdminToken(
  db: Db,
  token: string,
  name: string,
  logger: Logger,
): Promise<boolean> {
  const { active, record } = await registerBootstrapToken(db, { token, name });
  if (!active) {
    logger.warn(
      { tokenId: record.id, name },
      'the configured admin token was revoked and does not authenticate; configure another one',
    );
  }
  return active;
}

/** Opens a Redis connection of the given role and registers its close. */
export function openRedis(
  url: string,
  role: 'producer' | 'worker',
  logger: Logger,
  lifecycle: Lifecycle,
): Redis {
  const redis = createRedis(url, role, logger);
  lifecycle.onShutdown(`redis-${role}`, () => closeRedis(redis));
  return redis;
}

/** The variables that choose the coordination (see openCoordination). */
export interface CoordinationConfig {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: RedisClusterTarget | undefined;
  DATABASE_URL?: string | undefined;
  REDIS_PREFIX: string;
  MIGRATE_ON_START: boolean;
}

/**
 * The queues and the state the processes share: in Redis when REDIS_URL is set (or on a Redis
 * Cluster: REDIS_CLUSTER_NODES), else on Postgres alone (DATABASE_URL's server;
 * prepareCoordination migrates BullMQ's tables). Connects on first use, so that the process can
 * listen first. Registers its close.
 */
export function openCoordination(
  config: CoordinationConfig,
  db: Db,
  logger: Logger,
  lifecycle: Lifecycle,
): Coordination {
  let coordination: Coordination;
  if (config.REDIS_URL && config.REDIS_CLUSTER_NODES) {
    throw new ConfigError([
      'REDIS_CLUSTER_NODES: set, and REDIS_URL too: set one of them (a cluster takes its ' +
        'credentials and TLS from its nodes)',
    ]);
  }
  const target: RedisTarget | undefined = config.REDIS_CLUSTER_NODES ?? config.REDIS_URL;
  if (target !== undefined) {
    coordination = createRedisCoordination({
      redis: connectRedis(target, 'producer', logger),
      target,
      prefix: config.REDIS_PREFIX,
      createSubscriber: () => connectRedis(target, 'worker', logger),
    });
  } else if (config.DATABASE_URL && db.kind === 'postgres') {
    coordination = createPostgresCoordination({
      db,
      url: config.DATABASE_URL,
      prefix: config.REDIS_PREFIX,
      logger: logger.child({ module: 'coordination' }),
    });
  } else {
    throw new ConfigError([
      'REDIS_URL: not set, so Herald runs its queues on Postgres alone, which needs a PostgreSQL ' +
        'server: set DATABASE_URL, or REDIS_URL to a Redis',
    ]);
  }
  lifecycle.onShutdown('coordination', () => coordination.close());
  logger.info({ coordination: coordination.kind }, 'coordination opened');
  return coordination;
}

/**
 * Once the database answers (prepareDatabase): on Postgres alone, applies BullMQ's own migrations to
 * the queues' schema (MIGRATE_ON_START).
 */
export async function prepareCoordination(
  config: CoordinationConfig,
  coordination: Coordination,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<void> {
  if (coordination.kind !== 'postgres' || !config.MIGRATE_ON_START || !config.DATABASE_URL) return;
  lifecycle.startStep("migrating the queues' tables");
  await migrateQueues(config.DATABASE_URL, coordination.queueSchema, logger);
}
