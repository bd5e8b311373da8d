import type { Redis } from 'ioredis';

// Per webhook, the key holds when its next request may go (Redis time, microseconds). Booking
// takes that slot (now, if it is past) and moves it one interval on; it returns how long until
// the slot, in milliseconds. A call then waits once, until its own slot, instead of asking again
// and again while others take theirs. One key and one round trip, atomic across every process.
const BOOK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local next = slot + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1000)
return math.ceil((slot - now) / 1000)
`;

type BookCommand = (key: string, intervalUs: number) => Promise<number>;

/**
 * Each webhook's rate limit (delivery_policy.rate_limit_per_second), held in Redis so that it
 * holds across every delivery process: requests are spaced by 1/rate seconds, no burst.
 */
export class RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly redisPrefix: string,
  ) {
    if (!('heraldRateBook' in redis)) {
      redis.defineCommand('heraldRateBook', { numberOfKeys: 1, lua: BOOK });
    }
  }

  /** Books the next slot of this webhook: 0 when it is now, else the wait until it, in ms. */
  async book(webhookId: string, perSecond: number): Promise<number> {
    const book = (this.redis as unknown as { heraldRateBook: BookCommand }).heraldRateBook.bind(
      this.redis,
    );
    const intervalUs = Math.max(1, Math.round(1_000_000 / perSecond));
    return Number(await book(`${this.redisPrefix}:rate:${webhookId}`, intervalUs));
  }
}
