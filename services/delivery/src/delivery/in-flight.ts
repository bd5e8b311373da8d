import type { Redis } from 'ioredis';

// A sorted set per webhook: members are attempts in flight, scores their expiry (Redis time, ms).
// Expired members are evicted before counting, so a worker that died mid-call (kill -9) frees its
// slot after `ttlMs` instead of leaking it forever.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`;

/**
 * The per-webhook in-flight limit (API.md §6.2), counted in Redis so that it holds across worker
 * processes. One slow endpoint then occupies at most `limit` of the shared pool.
 */
export class InFlightLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly redisPrefix: string,
    private readonly limit: number,
    /** Longer than the longest attempt (the whole-call timeout plus margin). */
    private readonly ttlMs: number,
  ) {}

  #key(webhookId: string): string {
    return `${this.redisPrefix}:in-flight:${webhookId}`;
  }

  /** True when a slot was taken for `token` (release it with the same token). */
  async acquire(webhookId: string, token: string): Promise<boolean> {
    const taken = await this.redis.eval(
      ACQUIRE,
      1,
      this.#key(webhookId),
      this.limit,
      this.ttlMs,
      token,
    );
    return taken === 1;
  }

  async release(webhookId: string, token: string): Promise<void> {
    await this.redis.zrem(this.#key(webhookId), token);
  }
}
