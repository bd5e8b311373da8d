import { admitRateTurn, startRateTurn, type Queryable } from '@herald/store';
import { intervalUs, type RateAdmission } from './rate-limit.js';

/**
 * Each webhook's rate limit on Postgres alone (RateLimiter's counterpart, same rule): requests
 * spaced by at least 1/rate, no burst, the calls that must wait taking turns; a row per webhook in
 * an UNLOGGED table (migration 027), decided under its row lock by herald_admit_rate_turn.
 */
export class PostgresRateLimiter {
  constructor(private readonly db: Queryable) {}

  /** See RateLimiter.started. */
  async started(webhookId: string, notBeforeUs: number): Promise<void> {
    await startRateTurn(this.db, webhookId, Math.round(notBeforeUs));
  }

  /** See RateLimiter.admit. */
  async admit(
    webhookId: string,
    perSecond: number,
    hasTurn: boolean,
    withinUs: number,
  ): Promise<RateAdmission> {
    return admitRateTurn(this.db, webhookId, intervalUs(perSecond), hasTurn, Math.round(withinUs));
  }
}
