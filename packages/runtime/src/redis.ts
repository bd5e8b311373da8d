import { Redis, type RedisOptions } from 'ioredis';
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
  let lastLogged = 0;
  redis.on('error', (error: Error) => {
    // Reconnection is automatic; log at most every 10 s so an outage does not flood the log.
    const now = Date.now();
    if (now - lastLogged > 10_000) {
      lastLogged = now;
      logger.warn({ err: error.message, role }, 'redis connection error');
    }
  });
  return redis;
}
