import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '@herald/runtime';
import {
  TEST_REDIS_URL,
  createTestDb,
  randomId,
  silentLogger,
  startTcpProxy,
  testRedis,
  type TestDb,
} from '@herald/testkit';
import { COORDINATION_MODES, testCoordination } from '../../harness.test-support.js';
import { deliveryCoordination, type InFlightSlots } from './coordination.js';
import { InFlightLimiter } from './in-flight.js';
import { KeptSlots, type KeptSlotsOptions } from './kept-slots.js';
import { RateLimiter } from './rate-limit.js';

// The worker role queues commands until the connection is up (the producer role fails fast).
const redis = testRedis('worker');
let testDb: TestDb;
beforeAll(async () => {
  await redis.ping();
  testDb = await createTestDb();
});
afterAll(async () => {
  await redis.quit();
  await testDb.cleanup();
});

describe.each(COORDINATION_MODES)('in-flight slots (%s)', (mode) => {
  const opened: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of opened) await close();
  });
  /** Slots on a prefix of their own. */
  async function slots(limit: number, slotTtlMs: number): Promise<InFlightSlots> {
    const { coordination, close } = await testCoordination(testDb.db, mode);
    opened.push(close);
    return deliveryCoordination(coordination, {
      maxInFlightPerWebhook: limit,
      slotTtlMs,
    }).inFlight;
  }

  it('grants at most `limit` slots per webhook in one round trip, and frees them', async () => {
    const limiter = await slots(2, 10_000);
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
    const limiter = await slots(1, 50);
    expect(await limiter.acquire('9', 'lost')).toBe(true);
    expect(await limiter.acquire('9', 'waiting')).toBe(false);
    await expect.poll(() => limiter.acquire('9', 'later'), { interval: 20 }).toBe(true);
  });

  /**
   * Slots of limit 4 kept in one process (`here`), and another process of the deployment on the
   * same store (`there`), for one webhook.
   */
  async function keptBeside(options: KeptSlotsOptions) {
    const { coordination, close } = await testCoordination(testDb.db, mode);
    opened.push(close);
    const settings = { maxInFlightPerWebhook: 4, slotTtlMs: 60_000 };
    const here = new KeptSlots(deliveryCoordination(coordination, settings).inFlight, options);
    const there = deliveryCoordination(coordination, settings).inFlight;
    const hook = randomId('hook');
    const ask = (...tokens: string[]) => tokens.map((token) => ({ webhookId: hook, token }));
    return { here, there, hook, ask };
  }

  it('keeps a slot its process freed for its next attempt there, within the limit', async () => {
    const { here, there, hook, ask } = await keptBeside({ keep: 1, reusableMs: 60_000 });
    expect(await here.acquireMany(ask('a1', 'a2', 'a3', 'a4'))).toEqual([true, true, true, true]);
    await here.release(hook, 'a1');
    // Kept: still taken in the store, so the other process finds the limit reached, while the
    // next attempt here takes it, and the limit still holds.
    expect(await there.acquire(hook, 'b1')).toBe(false);
    expect(await here.acquireMany(ask('a5', 'a6'))).toEqual([true, false]);
    // One slot kept at most: of two freed, the other goes back.
    await Promise.all([here.release(hook, 'a5'), here.release(hook, 'a2')]);
    expect(await there.acquireMany(ask('b2', 'b3'))).toEqual([true, false]);
    // Stopping gives back what is kept.
    await here.stop();
    expect(await there.acquire(hook, 'b4')).toBe(true);
  });

  it('gives back a kept slot nobody used once it could no longer start an attempt', async () => {
    const { here, there, hook, ask } = await keptBeside({ keep: 4, reusableMs: 200 });
    expect(await here.acquireMany(ask('a1', 'a2', 'a3', 'a4'))).toEqual([true, true, true, true]);
    await Promise.all(['a1', 'a2', 'a3', 'a4'].map((token) => here.release(hook, token)));
    await expect
      .poll(async () => (await there.acquireMany(ask('b1', 'b2', 'b3', 'b4'))).filter(Boolean))
      .toHaveLength(4);
    // Taken by the other process now: none of them is reused here.
    expect(await here.acquire(hook, 'a5')).toBe(false);
    await here.stop();
  });

  it('never grants more than the limit to concurrent askers', async () => {
    const limiter = await slots(3, 10_000);
    const taken = await Promise.all(
      Array.from({ length: 20 }, (_, i) => limiter.acquire('7', `t${i}`)),
    );
    expect(taken.filter(Boolean)).toHaveLength(3);
  });
});

describe('the limits on Redis, when Redis stops answering', () => {
  it('fail a slot taken or released, or a rate limit asked, after their round-trip limit', async () => {
    // A master that died in a Redis Cluster failover: the connection stays open, nothing comes
    // back. Without the limit an attempt waited for its slot (or its release) for minutes,
    // holding its call and a place of the process's pool.
    const target = new URL(TEST_REDIS_URL);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const silent = createRedis(proxy.url(TEST_REDIS_URL), 'producer', silentLogger());
    try {
      if (silent.status !== 'ready') await once(silent, 'ready');
      const limiter = new InFlightLimiter(silent, randomId('herald_test'), 2, 10_000, 200);
      const rate = new RateLimiter(silent, randomId('herald_test'), 200);
      proxy.blackhole();
      await expect(limiter.acquireMany([{ webhookId: '1', token: 't1' }])).rejects.toThrow(
        /did not answer an in-flight slot within 200 ms/,
      );
      await expect(limiter.release('1', 't1')).rejects.toThrow(
        /did not answer the release of in-flight slots within 200 ms/,
      );
      await expect(rate.admit('1', 10, false, 0)).rejects.toThrow(
        /did not answer a rate limit within 200 ms/,
      );
      await expect(rate.started('1', Date.now() * 1000)).rejects.toThrow(
        /did not answer a rate limit/,
      );
    } finally {
      silent.disconnect();
      await proxy.close();
    }
  });
});
