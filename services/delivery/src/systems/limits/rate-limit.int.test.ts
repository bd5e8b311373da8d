import type { Registry } from 'prom-client';
import { describe, expect, onTestFinished } from 'vitest';
import { randomId, waitFor } from '@herald/testkit';
import {
  COORDINATION_MODES,
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
// The circuit is off, and an answer may take 10 s: on a busy machine a run of late answers
// (timeouts) would open it, or end a call after its few quick retries, which is not what this
// test measures.
const SETTINGS = { circuit: { failures: 0, cooldownMs: 60_000 }, timeoutMs: 10_000 };
const tests = {
  redis: pipelineTest(SETTINGS, 'redis'),
  postgres: pipelineTest(SETTINGS, 'postgres'),
};

describe.each(COORDINATION_MODES)("a webhook's rate limit (%s)", (mode) => {
  const it = tests[mode];

  it('holds across two delivery processes, and every call still goes', async ({
    db,
    pipeline,
    receiver,
  }) => {
    // A second delivery process of the same deployment (same database, same prefix).
    const second = await startPipeline(db, SETTINGS, {
      mode,
      prefix: pipeline.coordination.prefix,
    });
    onTestFinished(() => second.close());
    const RATE = 20;
    const env = randomId('env');
    const webhook = await pipeline.addWebhook(
      webhookInput(receiver.url, {
        events: itemEventsIn(env),
        deliveryPolicy: { rate_limit_per_second: RATE },
      }),
    );
    // What this machine delivers right now without a limit, the same way: the rate below is
    // judged against it too (a busy machine delivers less than the limit allows).
    const freeEnv = randomId('env');
    const free = await pipeline.addWebhook(
      webhookInput(receiver.url, { name: 'unlimited', events: itemEventsIn(freeEnv) }),
    );
    // ... and one call after another, as the limit makes them go: on a busy machine each waits on
    // this process's event loop and the database in turn, and a chain of them slows far more
    // than calls that go side by side (the free pace above: 18/s beside 6.7/s limited to 20).
    const serialEnv = randomId('env');
    const serial = await pipeline.addWebhook(
      webhookInput(receiver.url, {
        name: 'one entity in order',
        events: itemEventsIn(serialEnv),
        deliveryOrder: 'per_entity',
      }),
    );
    // ... and through the limiter itself, at twice the limit: on Postgres alone a call that waits
    // for its turn is a delayed job in Postgres, whose pickup on a busy machine caps the pace
    // below the limit (8.6/s of 20 was seen there, beside 20/s and more without a limit).
    const doubleEnv = randomId('env');
    const double = await pipeline.addWebhook(
      webhookInput(receiver.url, {
        name: 'twice the limit',
        events: itemEventsIn(doubleEnv),
        deliveryPolicy: { rate_limit_per_second: 2 * RATE },
      }),
    );
    for (const id of [free.id, webhook.id, serial.id, double.id]) {
      await waitFor(() => expect(second.runtime.index.has(id)).toBe(true));
    }
    /**
     * Delivers 60 events of `environment` through both processes (of one record if `entityId`);
     * the times of `target`'s requests (a call sent again after a timeout counts again: it went
     * through the limits too).
     */
    const deliver = async (
      target: string,
      environment: string,
      entityId?: string,
    ): Promise<number[]> => {
      const from = receiver.requests.length;
      // Two batches, so that each process matches one and makes first attempts.
      const events = Array.from({ length: 60 }, () =>
        itemEvent({ environment, ...(entityId ? { entityId } : {}) }),
      );
      await pipeline.emit(events.slice(0, 30));
      await second.emit(events.slice(30));
      await waitFor(
        async () => {
          for (const event of events) {
            const call = await pipeline.callOf(event.id, target);
            const after = `${call.attemptedAutoRetriesCount} retries: ${call.failureReason ?? ''}`;
            expect(call.status, `call ${call.id} after ${after}`).toBe('success');
          }
        },
        { timeout: 90_000, interval: 100 },
      );
      // This webhook's requests only (by webhook-id, the call's id): on a busy machine an earlier
      // run's call may still be retried (a late answer is a timeout) while this one goes.
      const calls = new Set(
        await Promise.all(
          events.map(async (event) => (await pipeline.callOf(event.id, target)).id),
        ),
      );
      const requests = receiver.requests
        .slice(from)
        .filter((request) => calls.has(String(request.headers['webhook-id'])));
      expect(new Set(requests.map((request) => request.headers['webhook-id'])).size).toBe(60);
      return requests.map((request) => request.at).sort((a, b) => a - b);
    };
    const rateOf = (times: number[]): number =>
      ((times.length - 1) * 1000) / (times.at(-1)! - times[0]!);
    const freeRate = rateOf(await deliver(free.id, freeEnv));
    const doubleRate = rateOf(await deliver(double.id, doubleEnv));

    const times = await deliver(webhook.id, env);
    // No one-second window holds more than the rate allows (10 % for the timers' precision).
    let busiest = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i]! - times[j]! >= 1000) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    expect(busiest).toBeLessThanOrEqual(RATE * 1.1);
    const rate = rateOf(times);
    expect(rate).toBeLessThanOrEqual(RATE * 1.1);
    // The machine's paces measured again after: on a busy machine they change within seconds.
    const freeRateAfter = rateOf(await deliver(free.id, freeEnv));
    const serialRate = rateOf(await deliver(serial.id, serialEnv, randomId('rec')));
    const doubleRateAfter = rateOf(await deliver(double.id, doubleEnv));
    // ... and the limit is what paced them, not something much slower: the limit, or what the
    // machine delivered without it (10.9/s of 20 was seen with one core busy, 7.6 with the
    // load average at 19) or through the limiter at twice the limit (8.6/s of 20 was seen on
    // Postgres alone at load 15, beside 20/s and more without a limit).
    expect(rate).toBeGreaterThan(
      0.5 * Math.min(RATE, freeRate, freeRateAfter, serialRate, doubleRate, doubleRateAfter),
    );
    // Both processes delivered.
    expect(await deliveriesOf(pipeline.registry)).toBeGreaterThan(0);
    expect(await deliveriesOf(second.registry)).toBeGreaterThan(0);
  }, 300_000); // six runs of 60 calls, the limited ones of 3 and 1.5 s, on a machine maybe busy
});
