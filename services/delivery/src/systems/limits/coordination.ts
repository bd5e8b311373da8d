import type { Coordination } from '@herald/runtime';
import { InFlightLimiter, type SlotRequest } from './in-flight.js';
import { PostgresInFlightLimiter } from './in-flight-postgres.js';
import { RateLimiter, type RateAdmission } from './rate-limit.js';
import { PostgresRateLimiter } from './rate-limit-postgres.js';

/** Each webhook's in-flight slots, across every delivery process (in-flight.ts). */
export interface InFlightSlots {
  /** True when a slot was taken for `token` (release it with the same token). */
  acquire(webhookId: string, token: string): Promise<boolean>;
  /** For each request, in order, whether its slot was taken. */
  acquireMany(requests: readonly SlotRequest[]): Promise<boolean[]>;
  /** Frees a slot. */
  release(webhookId: string, token: string): Promise<void>;
  /** Gives back what the process keeps (KeptSlots), once its attempts are over. */
  stop?(): Promise<void>;
}

/** Each webhook's rate limit, across every delivery process (rate-limit.ts). */
export interface RateTurns {
  admit(
    webhookId: string,
    perSecond: number,
    hasTurn: boolean,
    withinUs: number,
  ): Promise<RateAdmission>;
  started(webhookId: string, notBeforeUs: number): Promise<void>;
}

/**
 * The in-flight slots and rate-limit turns on the process's coordination: the Redis scripts, or
 * their Postgres statements (migration 027) when Herald runs on Postgres alone.
 */
export function deliveryCoordination(
  coordination: Coordination,
  settings: { maxInFlightPerWebhook: number; slotTtlMs: number },
): { inFlight: InFlightSlots; rateTurns: RateTurns } {
  const { maxInFlightPerWebhook: limit, slotTtlMs } = settings;
  if (coordination.kind === 'redis') {
    return {
      inFlight: new InFlightLimiter(coordination.redis, coordination.prefix, limit, slotTtlMs),
      rateTurns: new RateLimiter(coordination.redis, coordination.prefix),
    };
  }
  return {
    inFlight: new PostgresInFlightLimiter(coordination.db, limit, slotTtlMs),
    rateTurns: new PostgresRateLimiter(coordination.db),
  };
}
