import type { Redis } from 'ioredis';
import type { Role } from '@herald/contract';

export interface RateLimits {
  windowMs: number;
  perRole: Record<Role, number>;
  anonymous: number;
}

export interface RateLimitResult {
  limit: number;
  remaining: number;
  /** Seconds until the window resets, ≥ 1. */
  resetSeconds: number;
  exceeded: boolean;
}

// A fixed window per key, opened by its first request: one round trip, atomic.
const SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}`;

type RateLimitRedis = Redis & {
  heraldRateLimitHit(key: string, windowMs: number): Promise<unknown>;
};

/**
 * Counts requests in Redis so the limit holds across replicas. When Redis is unreachable the
 * request is let through (returns undefined): rate limiting must not turn an outage into refusals
 * of work that Postgres can still accept.
 */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly limits: RateLimits,
    private readonly prefix: string,
  ) {
    // EVALSHA (ioredis falls back to EVAL once per connection): with plain EVAL Redis hashes the
    // script text on every request.
    if (!('heraldRateLimitHit' in redis)) {
      redis.defineCommand('heraldRateLimitHit', { numberOfKeys: 1, lua: SCRIPT });
    }
  }

  limitFor(role: Role | 'anonymous'): number {
    return role === 'anonymous' ? this.limits.anonymous : this.limits.perRole[role];
  }

  async hit(key: string, role: Role | 'anonymous'): Promise<RateLimitResult | undefined> {
    const limit = this.limitFor(role);
    let reply: unknown;
    try {
      reply = await (this.redis as RateLimitRedis).heraldRateLimitHit(
        `${this.prefix}${key}`,
        this.limits.windowMs,
      );
    } catch {
      return undefined;
    }
    const [count, ttl] = reply as [number, number];
    return {
      limit,
      remaining: Math.max(0, limit - count),
      resetSeconds: Math.max(1, Math.ceil(ttl / 1000)),
      exceeded: count > limit,
    };
  }
}
