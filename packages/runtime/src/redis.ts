import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisClusterTarget } from './config.js';
import {
  redisProblem,
  rememberClusterSeeds,
  rememberRedisError,
  warnOncePerCause,
} from './dependencies.js';
import type { Logger } from './logger.js';
import { settleWithin } from './settle-within.js';

export type { Cluster, Redis, RedisClusterTarget };

/**
 * A connection to Redis: one server (REDIS_URL), or a Redis Cluster (REDIS_CLUSTER_NODES), whose
 * client sends each command to the master of its key's slot. Whatever runs on either keeps each
 * command, script call and MULTI within one slot (hash tags: redis-keys.ts).
 */
export type RedisClient = Redis | Cluster;

/** Where Redis is: REDIS_URL, or the cluster of REDIS_CLUSTER_NODES. */
export type RedisTarget = string | RedisClusterTarget;

/** Per role, as createRedis says. */
function roleOptions(role: 'producer' | 'worker'): RedisOptions {
  return role === 'producer'
    ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 }
    : { maxRetriesPerRequest: null, enableReadyCheck: false };
}

/**
 * `producer`: fails fast when Redis is away (HTTP requests must not hang on it).
 * `worker`: BullMQ workers block on Redis and must retry forever (`maxRetriesPerRequest: null`).
 */
export function createRedis(
  url: string,
  role: 'producer' | 'worker',
  logger: Logger,
  extra: RedisOptions = {},
): Redis {
  const redis = new Redis(url, { lazyConnect: false, ...roleOptions(role), ...extra });
  return watchRedis(redis, role, logger);
}

/**
 * A Redis Cluster client of the given role (see createRedis). It learns the cluster's layout from
 * the seeds, follows MOVED and ASK, and during a failover (a master lost, its replica promoted
 * once `cluster-node-timeout` has passed) retries the commands of the lost master's slots on the
 * new one. A producer's commands fail at once while the cluster is not ready (its offline queue is
 * off); a worker's wait.
 */
export function createRedisCluster(
  target: RedisClusterTarget,
  role: 'producer' | 'worker',
  logger: Logger,
  extra: Partial<ClusterOptions> = {},
): Cluster {
  const { nodes, username, password, tls } = target;
  const options: ClusterOptions = {
    lazyConnect: false,
    enableOfflineQueue: role === 'worker',
    // Each node's connection keeps an offline queue (ioredis sets it): the cluster's own decides.
    // BullMQ reads a Cluster's maxRetriesPerRequest from redisOptions (null for workers).
    redisOptions: {
      ...withoutOfflineQueue(roleOptions(role)),
      ...(username ? { username } : {}),
      ...(password ? { password } : {}),
      ...(tls ? { tls: {} } : {}),
    },
    // A failover takes cluster-node-timeout and then some: commands meanwhile are retried.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 200,
    maxRedirections: 64,
    // Notices a changed layout (a promoted replica) even with no command failing on it.
    slotsRefreshInterval: 2000,
    slotsRefreshTimeout: 2000,
    clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    ...extra,
  };
  const cluster = new Cluster(nodes, options);
  rememberClusterSeeds(cluster, nodes);
  // A node's connection error (node error) is also the cluster's problem until it is ready again.
  cluster.on('node error', (error: Error) => {
    rememberRedisError(cluster, error);
    warnOncePerCause(logger, redisProblem(cluster, error), { err: error.message, role });
  });
  return watchRedis(cluster, role, logger);
}

function withoutOfflineQueue({
  enableOfflineQueue: _queue,
  ...options
}: RedisOptions): Omit<RedisOptions, 'enableOfflineQueue'> {
  return options;
}

/** A client for `target`: one server, or a cluster. */
export function connectRedis(
  target: RedisTarget,
  role: 'producer' | 'worker',
  logger: Logger,
): RedisClient {
  return typeof target === 'string'
    ? createRedis(target, role, logger)
    : createRedisCluster(target, role, logger);
}

function watchRedis<T extends RedisClient>(redis: T, role: string, logger: Logger): T {
  // Reconnection is automatic. The log says what is wrong and what to check, at most every 10 s
  // for all of the process's connections, queues and workers together; /readyz says it too.
  redis.on('error', (error: Error) => {
    rememberRedisError(redis, error);
    warnOncePerCause(logger, redisProblem(redis, error), { err: error.message, role });
  });
  redis.on('ready', () => rememberRedisError(redis, undefined));
  return redis;
}

/** True for a Redis Cluster's client. */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** How long a connection's QUIT may wait for its reply before the connection is cut instead. */
const QUIT_WAIT_MS = 2000;

/**
 * Closes a connection: QUIT, which lets the commands sent before it finish, or, when Redis does
 * not answer it within QUIT_WAIT_MS (a master killed mid-command, a network dropping packets) or
 * refuses it, a cut. Either way the client stops reconnecting.
 */
export async function closeRedis(redis: RedisClient): Promise<void> {
  const quit = redis.quit().then(
    () => true,
    () => false,
  );
  if (!(await settleWithin(quit, QUIT_WAIT_MS, () => false))) redis.disconnect();
}
