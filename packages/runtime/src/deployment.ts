import type { Queryable } from '@herald/store';
import type { Logger } from './logger.js';

/** REDIS_PREFIX already belongs to another deployment (another database). */
export class DeploymentConflictError extends Error {
  constructor(where: string, theirs: string, ours: string, remedy: string) {
    super(
      `Refusing to start: ${where} already belongs to another Herald deployment (${theirs}), ` +
        `but this database is deployment ${ours}. Two deployments sharing a prefix run each ` +
        `other's jobs and find nothing to do in them. Give each deployment its own REDIS_PREFIX ` +
        `(or its own Redis), or point DATABASE_URL at the database this prefix belongs to. If ` +
        `that deployment is gone for good, ${remedy}.`,
    );
    this.name = 'DeploymentConflictError';
  }
}

/**
 * The Redis key naming the deployment a prefix belongs to. It shares the queues' {hash tag}
 * (queuePrefix): on a Redis Cluster it lives in their slot, on their master, so a master that
 * loses the jobs (a FLUSHALL of that node, a failover to an empty replica) loses the claim with
 * them, and the sweeper's next claim finds Redis lost its keys. Elsewhere it would live on
 * another master, and the loss of the jobs would go unseen until DELIVERY_SWEEP_AFTER_MS.
 */
export const deploymentKey = (redisPrefix: string): string => `{${redisPrefix}}:deployment`;

/**
 * Where Herald kept the claim before (a slot of its own on a cluster): still read whenever a
 * claim is written, so that a deployment of the earlier Herald on the same prefix is refused.
 */
export const legacyDeploymentKey = (redisPrefix: string): string => `${redisPrefix}:deployment`;

/**
 * What a claim of the prefix found (Coordination.claimDeployment): 'written' when no deployment
 * had claimed it (a first start, or a store that lost its state, and with it the jobs), 'claimed'
 * when this one had; 'unreachable' when the store did not answer in time: Herald runs without it
 * for a while (events are stored, the sweeper enqueues them later), so the caller carries on and
 * claims again later. A claim by another deployment throws DeploymentConflictError.
 */
export type DeploymentClaim = 'claimed' | 'written' | 'unreachable';

/**
 * The claim at a service's start: a conflict stops the start (DeploymentConflictError); a store
 * that does not answer is logged and the service starts anyway (the delivery sweeper claims the
 * prefix again at every pass).
 */
export async function claimPrefix(
  db: Queryable,
  coordination: { prefix: string; claimDeployment(db: Queryable): Promise<DeploymentClaim> },
  logger: Logger,
): Promise<void> {
  if ((await coordination.claimDeployment(db)) === 'unreachable') {
    logger.warn(
      { prefix: coordination.prefix },
      'the coordination store did not answer: starting without checking that REDIS_PREFIX belongs to this deployment',
    );
  }
}
