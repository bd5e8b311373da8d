import { admitRateTurn, startRateTurn, type Queryable } from '@herald/store';
import { intervalUs, type RateAdmission } from './rate-limit.js';

/**
 * Each webhook's rate limit on Postgres alone (RateLimiter's counterpart, same rule): requests
 * spaced by at least 1/rate, no burst, the calls that must wait taking turns; a row per webhook in
 * an UNLOGGED table, updated by a single statement under its row lock (migration 027).
 */
export class PostgresRateLimiter {
  constructor(private readonly db: Queryable) {}

  /** See RateLimiter.started. */
  async started(webhookId: string, perSecond: number): Promise<void> {
    await startRateTurn(this.db, webhookId, intervalUs(perSecond));
  }

  /** See RateLimiter.admit. */
  async admit(webhookId: string, perSecond: number, hasTurn: boolean): Promise<RateAdmission> {
    const interval = intervalUs(perSecond);
    const waitUs = await admitRateTurn(this.db, webhookId, interval, hasTurn);
    if (waitUs === 0) return { waitMs: 0, turn: false };
    // A little after the time, not before (a call back early waits again), as on Redis.
    return {
      waitMs: Math.ceil(waitUs / 1000) + Math.max(1, Math.ceil(interval / 20_000)),
      turn: true,
    };
  }
}
