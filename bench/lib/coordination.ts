import {
  createRedis,
  createRedisCoordination,
  type Logger,
  type Redis,
  type RedisCoordination,
} from '@herald/runtime';

/** Coordination on a benchmark's Redis connection (the caller closes `redis`). */
export function benchRedisCoordination(
  redis: Redis,
  url: string,
  prefix: string,
  logger: Logger,
): RedisCoordination {
  return createRedisCoordination({
    redis,
    target: url,
    prefix,
    createSubscriber: () => createRedis(url, 'worker', logger),
  });
}
