import type { Registry } from 'prom-client';
import { describe, expect, onTestFinished } from 'vitest';
import { randomId, waitFor } from '@herald/testkit';
import {
  COORDINATION_MODES,
  addWebhook,
  callOf,
  emitEvents,
  itemEvent,
  itemEventsIn,
  pipelineTest,
  startPipeline,
  webhookInput,
} from '../../harness.test-support.js';

/** The deliveries a process made, from its own metrics. */
async function deliveriesOf(registry: Registry): Promise<number> {
  const metric = await registry.getSingleMetric('herald_deliveries_total')?.get();
  return (metric?.values ?? []).reduce((sum, value) => sum + value.value, 0);
}

// File-scoped fixtures are made at the top level: a pipeline (and database) per mode.
const tests = { redis: pipelineTest({}, 'redis'), postgres: pipelineTest({}, 'postgres') };

describe.each(COORDINATION_MODES)("a webhook's rate limit (%s)", (mode) => {
  const it = tests[mode];

  it('holds across two delivery processes, and every call still goes', async ({
    db,
    pipeline,
    receiver,
  }) => {
    // A second delivery process of the same deployment (same database, same prefix).
    const second = await startPipeline(db, {}, { mode, prefix: pipeline.coordination.prefix });
    onTestFinished(() => second.close());
    const RATE = 20;
    const env = randomId('env');
    const webhook = await addWebhook(
      db,
      pipeline,
      webhookInput(receiver.url, {
        events: itemEventsIn(env),
        deliveryPolicy: { rate_limit_per_second: RATE },
      }),
    );
    // What this machine delivers right now without a limit, the same way: the rate below is
    // judged against it too (a busy machine delivers less than the limit allows).
    const freeEnv = randomId('env');
    const free = await addWebhook(
      db,
      pipeline,
      webhookInput(receiver.url, { name: 'unlimited', events: itemEventsIn(freeEnv) }),
    );
    await waitFor(() => expect(second.runtime.index.has(free.id)).toBe(true));
    await waitFor(() => expect(second.runtime.index.has(webhook.id)).toBe(true));
    /** Delivers 60 events of `environment` through both processes; the request times. */
    const deliver = async (target: string, environment: string): Promise<number[]> => {
      const from = receiver.requests.length;
      // Two batches, so that each process matches one and makes first attempts.
      const events = Array.from({ length: 60 }, () => itemEvent({ environment }));
      await emitEvents(db, pipeline, events.slice(0, 30));
      await emitEvents(db, second, events.slice(30));
      await waitFor(
        async () => {
          for (const event of events) {
            expect((await callOf(db, event.id, target)).status).toBe('success');
          }
        },
        { timeout: 60_000, interval: 100 },
      );
      return receiver.requests
        .slice(from)
        .map((request) => request.at)
        .sort((a, b) => a - b);
    };
    const rateOf = (times: number[]): number =>
      ((times.length - 1) * 1000) / (times.at(-1)! - times[0]!);
    const freeRate = rateOf(await deliver(free.id, freeEnv));

    const times = await deliver(webhook.id, env);
    expect(times).toHaveLength(60);
    // No one-second window holds more than the rate allows (10 % for the timers' precision).
    let busiest = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i]! - times[j]! >= 1000) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    expect(busiest).toBeLessThanOrEqual(RATE * 1.1);
    const rate = rateOf(times);
    expect(rate).toBeLessThanOrEqual(RATE * 1.1);
    // ... and the limit is what paced them, not something much slower: the limit, or what the
    // machine delivered without it (10.9/s of 20 was seen with one core busy, 7.6 with the
    // load average at 19).
    expect(rate).toBeGreaterThan(0.5 * Math.min(RATE, freeRate));
    // Both processes delivered.
    expect(await deliveriesOf(pipeline.registry)).toBeGreaterThan(0);
    expect(await deliveriesOf(second.registry)).toBeGreaterThan(0);
  });
});
