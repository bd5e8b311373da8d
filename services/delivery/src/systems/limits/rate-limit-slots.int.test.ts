import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertWebhook, type WebhookRecord } from '@herald/store';
import { createTestDb, silentLogger, testWebhookInput, type TestDb } from '@herald/testkit';
import { COORDINATION_MODES, testCoordination, testSettings } from '../../harness.test-support.js';
import { deliveryMetrics } from '../../metrics.js';
import { startLimits, type Limits, type RateReservation } from './limits.js';

// A webhook's rate limit as two delivery processes of one deployment ask it (docs/api.md, Rate
// limit): each request reserves its slot, an interval after the one before, and one that starts
// late moves the next slots back by as much.

let testDb: TestDb;
beforeAll(async () => {
  testDb = await createTestDb();
});
afterAll(async () => {
  await testDb.cleanup();
});

const RATE = 4;
const INTERVAL_US = 1_000_000 / RATE;

describe.each(COORDINATION_MODES)("a rate limit's reserved slots (%s)", (mode) => {
  const closes: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closes.reverse()) await close();
  });

  /** The limits of a delivery process; `prefix`: of the same deployment as another. */
  async function process(prefix?: string): Promise<{ limits: Limits; prefix: string }> {
    const { coordination, close } = await testCoordination(testDb.db, mode, prefix);
    const logger = silentLogger();
    const metrics = deliveryMetrics(new Registry());
    const limits = await startLimits(
      { db: testDb.db, coordination, logger, metrics },
      testSettings(),
    );
    closes.push(close, () => limits.stop());
    return { limits, prefix: coordination.prefix };
  }

  async function limited(): Promise<WebhookRecord> {
    const input = testWebhookInput({ deliveryPolicy: { rate_limit_per_second: RATE } });
    return insertWebhook(testDb.db, input);
  }

  /** The slot an admission reserved (it was let through). */
  async function reserve(limits: Limits, webhook: WebhookRecord): Promise<RateReservation> {
    const admission = await limits.admit(webhook, false);
    if (!admission.send || !admission.rate) throw new Error('not admitted');
    return admission.rate;
  }

  it('gives the requests of two processes slots an interval apart, each waited for', async () => {
    const a = await process();
    const b = await process(a.prefix);
    const webhook = await limited();
    const first = await reserve(a.limits, webhook);
    // Its slot is an interval on, within what it may wait for in the process: it waits, then goes.
    const second = await reserve(b.limits, webhook);
    expect(second.slotUs - first.slotUs).toBe(INTERVAL_US);
    await b.limits.untilRateSlot(second);
    // An interval after the first was due, but for the two answers' ways back from the limit.
    expect(performance.now() - first.dueAt).toBeGreaterThanOrEqual(0.9 * (INTERVAL_US / 1000));
    const third = await reserve(a.limits, webhook);
    expect(third.slotUs - second.slotUs).toBe(INTERVAL_US);
  });

  it('starts the requests whose slots passed during a pause of the process an interval apart', async () => {
    const { limits } = await process();
    const webhook = await limited();
    const first = await reserve(limits, webhook);
    const second = await reserve(limits, webhook);
    expect(second.slotUs - first.slotUs).toBe(INTERVAL_US);
    // The process pauses past both slots (its event loop held, as a long task or a GC would).
    const until = performance.now() + 2 * (INTERVAL_US / 1000);
    while (performance.now() < until);
    const starts: number[] = [];
    await Promise.all(
      [first, second].map(async (reserved) => {
        await limits.untilRateSlot(reserved);
        starts.push(performance.now());
      }),
    );
    // (A timer may fire up to a millisecond early.)
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(INTERVAL_US / 1000 - 1);
  });

  it('moves the next slot back by as much as a request started late', async () => {
    const a = await process();
    const b = await process(a.prefix);
    const webhook = await limited();
    const first = await reserve(a.limits, webhook);
    // It starts 200 ms after its slot (its pool was busy, the database slow).
    await sleep(200);
    await a.limits.rateStarted(first);
    const second = await reserve(b.limits, webhook);
    // (A timer may fire up to a millisecond early.)
    expect(second.slotUs - first.slotUs).toBeGreaterThanOrEqual(199_000 + INTERVAL_US);
    // Started on time (but for a timer's lateness), the next is about an interval after it.
    await b.limits.untilRateSlot(second);
    await b.limits.rateStarted(second);
    const third = await reserve(a.limits, webhook);
    expect(third.slotUs - second.slotUs).toBeGreaterThanOrEqual(INTERVAL_US);
    expect(third.slotUs - second.slotUs).toBeLessThan(INTERVAL_US + 100_000);
  });
});
