import { sendEach, settleWithin, webhookKey, type RedisClient } from '@herald/runtime';

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
 * How long a round trip of the limits' Redis scripts may take before it counts as failed. A command sent to a
 * Redis Cluster master that died waits for the OS to drop its connection (minutes), and an
 * attempt waiting for its slot, or for its slot's release, held its call and a place of the
 * process's pool all that time: under a failover one delivery process stopped sending and its
 * calls, held by its live lease, waited for nobody. A failed acquire lets the calls go for the
 * sweeper; a release that did not answer is left to the slot's expiry (`ttlMs`).
 */
export const ROUND_TRIP_LIMIT_MS = 2_000;

/** `work`, or a rejection once it has taken `ms`. */
export function answeredWithin<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  return settleWithin(work, ms, () => {
    throw new Error(`Redis did not answer ${what} within ${ms} ms`);
  });
}

/** A pipeline with the command defineCommand adds. */
type AcquireClient = {
  heraldInFlightAcquire(key: string, limit: number, ttlMs: number, token: string): unknown;
};

/** One attempt asking for a slot of its webhook. */
export interface SlotRequest {
  webhookId: string;
  /** Identifies the attempt; release with the same token. */
  token: string;
}

/**
 * The per-webhook in-flight limit (docs/architecture.md, An event, step by step), counted in Redis
 * so that it holds across worker processes. One slow endpoint then occupies at most `limit` of the
 * shared pool.
 *
 * Round trips are shared: the slots of a whole deliver-calls job are asked for in one pipeline,
 * and the releases made in the same tick go together in one pipeline.
 */
export class InFlightLimiter {
  #releases: { key: string; token: string; done: () => void; fail: (e: unknown) => void }[] = [];

  constructor(
    private readonly redis: RedisClient,
    private readonly redisPrefix: string,
    private readonly limit: number,
    /** Longer than the longest attempt (the whole-call timeout plus margin). */
    private readonly ttlMs: number,
    private readonly roundTripLimitMs = ROUND_TRIP_LIMIT_MS,
  ) {
    // EVALSHA (ioredis falls back to EVAL once per connection): Redis hashes the script text of
    // every plain EVAL, which cost more than the script itself.
    if (!('heraldInFlightAcquire' in redis)) {
      redis.defineCommand('heraldInFlightAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    }
  }

  #key(webhookId: string): string {
    return webhookKey(this.redisPrefix, 'in-flight', webhookId);
  }

  /** True when a slot was taken for `token` (release it with the same token). */
  async acquire(webhookId: string, token: string): Promise<boolean> {
    const [taken] = await this.acquireMany([{ webhookId, token }]);
    return taken === true;
  }

  /** For each request, in order, whether its slot was taken. */
  async acquireMany(requests: readonly SlotRequest[]): Promise<boolean[]> {
    if (requests.length === 0) return [];
    const results = await answeredWithin(
      sendEach(
        this.redis,
        requests,
        ({ webhookId }) => this.#key(webhookId),
        (pipeline, { webhookId, token }) =>
          (pipeline as unknown as AcquireClient).heraldInFlightAcquire(
            this.#key(webhookId),
            this.limit,
            this.ttlMs,
            token,
          ),
      ),
      this.roundTripLimitMs,
      'an in-flight slot',
    );
    return requests.map((_, i) => {
      const [error, taken] = results[i] ?? [new Error('no reply')];
      if (error) throw error;
      return taken === 1;
    });
  }

  /** Frees a slot; releases asked for in the same tick share one round trip. */
  release(webhookId: string, token: string): Promise<void> {
    return new Promise((done, fail) => {
      this.#releases.push({ key: this.#key(webhookId), token, done, fail });
      if (this.#releases.length === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#releases;
    this.#releases = [];
    answeredWithin(
      sendEach(
        this.redis,
        batch,
        ({ key }) => key,
        (pipeline, { key, token }) => pipeline.zrem(key, token),
      ),
      this.roundTripLimitMs,
      'the release of in-flight slots',
    ).then(
      () => batch.forEach((r) => r.done()),
      (error: unknown) => batch.forEach((r) => r.fail(error)),
    );
  }
}
