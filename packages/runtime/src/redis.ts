import { Redis, type RedisOptions } from 'ioredis';
import { redisProblem, rememberRedisError, warnOncePerCause } from './dependencies.js';
import type { Logger } from './logger.js';

export type { Redis };

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
  const options: RedisOptions =
    role === 'producer'
      ? { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 }
      : { maxRetriesPerRequest: null, enableReadyCheck: false };
  const redis = new Redis(url, { lazyConnect: false, ...options, ...extra });
  // Reconnection is automatic. The log says what is wrong and what to check, at most every 10 s
  // for all of the process's connections, queues and workers together; /readyz says it too.
  redis.on('error', (error: Error) => {
    rememberRedisError(redis, error);
    warnOncePerCause(logger, redisProblem(redis, error), { err: error.message, role });
  });
  redis.on('ready', () => rememberRedisError(redis, undefined));
  return redis;
}
