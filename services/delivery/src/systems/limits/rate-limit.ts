import { webhookKey, type RedisClient } from '@herald/runtime';
import { ROUND_TRIP_LIMIT_MS, answeredWithin } from './in-flight.js';

// Per webhook, two times (Redis time, microseconds), in one slot of a cluster (webhookKey):
// - KEYS[1], when the next request may go (the front): GCRA (the generic cell rate algorithm) with
//   no burst. A request reserves the front; the next may go one interval after it, whichever
//   process sends it, so requests are never closer than the interval.
// - KEYS[2], the end of the queue of calls waiting for their turn, one interval apart: a backlog
//   comes back one call at a time, not all at once again and again.
// A call reserves the front when it has its turn (ARGV[2] = 1), or nobody waits before it, and the
// front comes within ARGV[3]: it waits until then in its process and goes, without asking again
// (asking again would lose a round trip at every request of a backlog). Otherwise it waits: with
// its turn until the front (it asks again), else at the end of the queue. Returns {wait} or, when
// it reserved, {wait, its slot}.
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local hasTurn = ARGV[2] == '1'
local within = tonumber(ARGV[3])
local sent = tonumber(redis.call('GET', KEYS[1]) or '0')
local queue = tonumber(redis.call('GET', KEYS[2]) or '0')
local function keep(key, value)
  redis.call('SET', key, string.format('%.0f', value), 'PX', math.ceil((value - now) / 1000) + 1000)
end
local front = math.max(sent, now)
if (hasTurn or queue <= front) and front - now <= within then
  keep(KEYS[1], front + interval)
  return {string.format('%.0f', front - now), string.format('%.0f', front)}
end
if hasTurn then return {string.format('%.0f', front - now)} end
local slot = math.max(queue, front)
keep(KEYS[2], slot + interval)
return {string.format('%.0f', slot - now)}
`;

// KEYS[1] as above, once a reserved request started late: the next may go no sooner than ARGV[1].
const STARTED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next = tonumber(ARGV[1])
local sent = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > sent then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', math.max(1, math.ceil((next - now) / 1000) + 1000))
end
return 0
`;

type AdmitCommand = (
  sentKey: string,
  queueKey: string,
  intervalUs: number,
  hasTurn: 0 | 1,
  withinUs: number,
) => Promise<[string] | [string, string]>;
type StartedCommand = (sentKey: string, notBeforeUs: string) => Promise<number>;

/**
 * What a webhook's rate limit answered a request: it may go once `waitUs` is over, in the slot
 * it reserved (`slotUs`, the limit's clock), or its call waits `waitUs` and asks again with its
 * turn (`slotUs` null).
 */
export interface RateAdmission {
  waitUs: number;
  slotUs: number | null;
}

/**
 * Each webhook's rate limit (delivery_policy.rate_limit_per_second), held in Redis so that it
 * holds across every delivery process: requests are spaced by 1/rate seconds, no burst, and the
 * calls that must wait take turns.
 */
export class RateLimiter {
  readonly #admit: AdmitCommand;
  readonly #started: StartedCommand;

  constructor(
    redis: RedisClient,
    private readonly redisPrefix: string,
    /** Past it a round trip fails (see ROUND_TRIP_LIMIT_MS). */
    private readonly roundTripLimitMs = ROUND_TRIP_LIMIT_MS,
  ) {
    if (!('heraldRateAdmit' in redis)) {
      redis.defineCommand('heraldRateAdmit', { numberOfKeys: 2, lua: ADMIT });
    }
    if (!('heraldRateStarted' in redis)) {
      redis.defineCommand('heraldRateStarted', { numberOfKeys: 1, lua: STARTED });
    }
    this.#admit = (redis as unknown as { heraldRateAdmit: AdmitCommand }).heraldRateAdmit.bind(
      redis,
    );
    this.#started = (
      redis as unknown as { heraldRateStarted: StartedCommand }
    ).heraldRateStarted.bind(redis);
  }

  /**
   * A request reserved earlier started late: the next one of its webhook may go no sooner than
   * `notBeforeUs` (its slot, how late it started, and an interval).
   */
  async started(webhookId: string, notBeforeUs: number): Promise<void> {
    await answeredWithin(
      this.#started(
        webhookKey(this.redisPrefix, 'rate-sent', webhookId),
        Math.round(notBeforeUs).toString(),
      ),
      this.roundTripLimitMs,
      'a rate limit',
    );
  }

  /**
   * Whether a request of this webhook may go, and when: see RateAdmission. It reserves a slot
   * only within `withinUs` from now (`hasTurn`: its call waited for its turn).
   */
  async admit(
    webhookId: string,
    perSecond: number,
    hasTurn: boolean,
    withinUs: number,
  ): Promise<RateAdmission> {
    const [wait, slot] = await answeredWithin(
      this.#admit(
        webhookKey(this.redisPrefix, 'rate-sent', webhookId),
        webhookKey(this.redisPrefix, 'rate-queue', webhookId),
        intervalUs(perSecond),
        hasTurn ? 1 : 0,
        Math.round(withinUs),
      ),
      this.roundTripLimitMs,
      'a rate limit',
    );
    return { waitUs: Number(wait), slotUs: slot === undefined ? null : Number(slot) };
  }
}

/** The spacing of a webhook's requests at `perSecond`, in microseconds (at least 1). */
export const intervalUs = (perSecond: number): number =>
  Math.max(1, Math.round(1_000_000 / perSecond));
