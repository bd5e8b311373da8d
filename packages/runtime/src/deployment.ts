import { readDeploymentId, type Queryable } from '@herald/store';
import type { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/** The Redis prefix already belongs to another deployment (another database). */
export class DeploymentConflictError extends Error {
  constructor(redisPrefix: string, theirs: string, ours: string) {
    super(
      `Refusing to start: the Redis prefix "${redisPrefix}" (REDIS_PREFIX) already belongs to ` +
        `another Herald deployment (${theirs}), but this database is deployment ${ours}. Two ` +
        `deployments sharing a prefix run each other's jobs and find nothing to do in them. Give ` +
        `each deployment its own REDIS_PREFIX (or its own Redis), or point DATABASE_URL at the ` +
        `database this prefix belongs to. If that deployment is gone for good, delete the key ` +
        `"${deploymentKey(redisPrefix)}" in Redis.`,
    );
    this.name = 'DeploymentConflictError';
  }
}

/** The Redis key naming the deployment a prefix belongs to. */
export const deploymentKey = (redisPrefix: string): string => `${redisPrefix}:deployment`;

/**
 * Ties the Redis prefix to this deployment (the id migration 007 stores in Postgres): writes the
 * id under the prefix if no deployment claimed it and throws DeploymentConflictError when another
 * one did. 'written' when the key was missing: a first start, or a Redis that lost its keys
 * (flushed, restarted empty), and with them the jobs; 'claimed' when it was there already.
 * 'unreachable' when Redis did not answer within `timeoutMs`: Herald runs without Redis for a
 * while (events are stored, the sweeper enqueues them later), so the caller carries on and claims
 * again later.
 */
export async function claimDeployment(
  db: Queryable,
  redis: Redis,
  redisPrefix: string,
  timeoutMs = 5000,
): Promise<'claimed' | 'written' | 'unreachable'> {
  const ours = await readDeploymentId(db);
  const reply = await withTimeout(
    (async () => {
      if (redis.status !== 'ready') await onceReady(redis);
      const key = deploymentKey(redisPrefix);
      const [[, set] = [], [, current] = []] =
        (await redis.multi().set(key, ours, 'NX').get(key).exec()) ?? [];
      return { set, current };
    })(),
    timeoutMs,
  );
  if (!reply) return 'unreachable';
  if (reply.current !== ours) {
    throw new DeploymentConflictError(redisPrefix, String(reply.current), ours);
  }
  return reply.set === 'OK' ? 'written' : 'claimed';
}

function onceReady(redis: Redis): Promise<void> {
  return new Promise((resolve) => redis.once('ready', () => resolve()));
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([work.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * claimDeployment at a service's start: a conflict stops the start (DeploymentConflictError); a
 * Redis that does not answer is logged and the service starts anyway (the delivery sweeper claims
 * the prefix again at every pass).
 */
export async function claimRedisPrefix(
  db: Queryable,
  redis: Redis,
  redisPrefix: string,
  logger: Logger,
): Promise<void> {
  if ((await claimDeployment(db, redis, redisPrefix)) === 'unreachable') {
    logger.warn(
      { redisPrefix },
      'Redis did not answer: starting without checking that REDIS_PREFIX belongs to this deployment',
    );
  }
}
