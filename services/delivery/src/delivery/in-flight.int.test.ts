import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomId, testRedis } from '@herald/testkit';
import { InFlightLimiter } from './in-flight.js';

// The worker role queues commands until the connection is up (the producer role fails fast).
const redis = testRedis('worker');
beforeAll(async () => {
  await redis.ping();
});
afterAll(async () => {
  await redis.quit();
});

describe('InFlightLimiter (real Redis)', () => {
  it('grants at most `limit` slots per webhook in one pipelined round trip, and frees them', async () => {
    const limiter = new InFlightLimiter(redis, randomId('herald_test'), 2, 10_000);
    const asks = ['a1', 'a2', 'a3', 'b1'].map((token) => ({
      webhookId: token.startsWith('a') ? '1' : '2',
      token,
    }));
    expect(await limiter.acquireMany(asks)).toEqual([true, true, false, true]);
    // Releases asked for in the same tick go together; the freed slot is taken again.
    await Promise.all([limiter.release('1', 'a1'), limiter.release('2', 'b1')]);
    expect(await limiter.acquireMany([{ webhookId: '1', token: 'a4' }])).toEqual([true]);
    expect(await limiter.acquire('1', 'a5')).toBe(false);
  });

  it('lets a slot expire when its holder never releases it (a killed worker)', async () => {
    const limiter = new InFlightLimiter(redis, randomId('herald_test'), 1, 50);
    expect(await limiter.acquire('9', 'lost')).toBe(true);
    expect(await limiter.acquire('9', 'waiting')).toBe(false);
    await expect.poll(() => limiter.acquire('9', 'later'), { interval: 20 }).toBe(true);
  });
});
