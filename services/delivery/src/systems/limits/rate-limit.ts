import { webhookKey, type RedisClient } from '@herald/runtime';
import { ROUND_TRIP_LIMIT_MS, answeredWithin } from './in-flight.js';

// Per webhook, two times (Redis time, microseconds), in one slot of a cluster (webhookKey):
// - KEYS[1], when the next request may be sent: GCRA (the generic cell rate algorithm) with no
//   burst. A request may go when that time has come; it then moves one interval on, so requests
//   are never closer than the interval, whichever process sends them.
// - KEYS[2], the end of the queue of calls waiting for their turn, one interval apart: a backlog
//   comes back one call at a time, not all at once again and again.
// A call without a turn (ARGV[2] = 0) joins the queue when someone waits, or when the limit does
// not allow a request yet; so it never takes the place of a call whose turn has come. A call with
// a turn is sent as soon as the limit allows. Returns {wait ms, 1 if the call now has a turn}.
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local hasTurn = ARGV[2] == '1'
local sent = tonumber(redis.call('GET', KEYS[1]) or '0')
local queue = tonumber(redis.call('GET', KEYS[2]) or '0')
local function keep(key, value)
  redis.call('SET', key, string.format('%.0f', value), 'PX', math.ceil((value - now) / 1000) + 1000)
end
if hasTurn or queue <= now then
  if sent <= now then
    keep(KEYS[1], math.max(sent, now) + interval)
    return {0, 0}
  end
  if hasTurn then return {math.ceil((sent - now) / 1000), 1} end
end
local slot = math.max(queue, sent, now)
keep(KEYS[2], slot + interval)
return {math.ceil((slot - now) / 1000), 1}
`;

// KEYS[1] as above, once a request admitted has actually started (ARGV[1] the interval): the next
// may go one interval after that start, if that is later than one after its admission. A request
// that started late (its pool was busy, the database slow) is not followed by one that catches up.
const STARTED = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local next = now + tonumber(ARGV[1])
local sent = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > sent then
  redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1000)
end
return 0
`;

type AdmitCommand = (
  sentKey: string,
  queueKey: string,
  intervalUs: number,
  hasTurn: 0 | 1,
) => Promise<[number, number]>;
type StartedCommand = (sentKey: string, intervalUs: number) => Promise<number>;

/** `waitMs` 0: the request may go now; else how long its call waits, and whether it has its turn. */
export interface RateAdmission {
  waitMs: number;
  turn: boolean;
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
   * A request admitted has started now: the next one of its webhook waits one interval from
   * here if that is later (spacing counts from the later of a request's admission and its start).
   */
  async started(webhookId: string, perSecond: number): Promise<void> {
    await answeredWithin(
      this.#started(webhookKey(this.redisPrefix, 'rate-sent', webhookId), intervalUs(perSecond)),
      this.roundTripLimitMs,
      'a rate limit',
    );
  }

  /**
   * Whether a request of this webhook may be sent now (`waitMs` 0; it is counted), else how long
   * its call waits, and whether it then has its turn (`turn`: come back with `hasTurn`).
   */
  async admit(webhookId: string, perSecond: number, hasTurn: boolean): Promise<RateAdmission> {
    const interval = intervalUs(perSecond);
    const [wait, turn] = await answeredWithin(
      this.#admit(
        webhookKey(this.redisPrefix, 'rate-sent', webhookId),
        webhookKey(this.redisPrefix, 'rate-queue', webhookId),
        interval,
        hasTurn ? 1 : 0,
      ),
      this.roundTripLimitMs,
      'a rate limit',
    );
    if (Number(wait) === 0 && Number(turn) === 0) return { waitMs: 0, turn: false };
    // A little after the time, not before (a call back early waits again).
    return { waitMs: Number(wait) + Math.max(1, Math.ceil(interval / 20_000)), turn: true };
  }
}

/** The spacing of a webhook's requests at `perSecond`, in microseconds (at least 1). */
export const intervalUs = (perSecond: number): number =>
  Math.max(1, Math.round(1_000_000 / perSecond));
