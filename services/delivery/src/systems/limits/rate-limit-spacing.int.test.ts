import type { ServerResponse } from 'node:http';
import { describe, expect } from 'vitest';
import { waitFor } from '@herald/testkit';
import { createBulkJob, findBulkJob } from '@herald/store';
import { itemEvent, itemEventsIn, pipelineTest, webhookInput } from '../../harness.test-support.js';

// A rate limit's spacing holds for requests that wait for the process's pool (docs/api.md, Rate
// limit). One attempt at a time in the process (its pool), two per webhook: a bulk resend's
// second lane waits for the pool while the first request is held at the receiver; it asks the
// limit only once it holds the pool, so it does not follow the late one closely. (A request that
// starts later than the slot it reserved: rate-limit-slots.int.test.ts.)
const it = pipelineTest({ deliverConcurrency: 1, maxInFlightPerWebhook: 2 });

describe('a rate limit after a late start', () => {
  it('spaces a request that waited for the pool from the one before, with no catch-up burst', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const RATE = 4;
    const intervalMs = 1000 / RATE;
    const env = 'rate-late-env';
    receiver.respond = (_req, res) => res.writeHead(200).end();
    const webhook = await pipeline.addWebhook(
      webhookInput(receiver.url, {
        events: itemEventsIn(env),
        deliveryPolicy: { rate_limit_per_second: RATE },
      }),
    );
    const events = Array.from({ length: 4 }, () => itemEvent({ environment: env }));
    await pipeline.emit(events);
    for (const event of events) await pipeline.waitForCall(event.id, webhook.id, ['success']);

    // The job's first request is held for two intervals and a half.
    let held: ServerResponse | undefined;
    receiver.respond = (_req, res) => {
      if (held) return void res.writeHead(200).end();
      held = res;
      setTimeout(() => res.writeHead(200).end(), 2.5 * intervalMs);
    };
    const since = Date.now();
    const job = await createBulkJob(db, {
      kind: 'bulk_resend',
      webhookId: webhook.id,
      filter: { webhook_id: webhook.id },
      ratePerSecond: null,
    });
    await waitFor(async () => expect((await findBulkJob(db, job.id))?.state).toBe('completed'), {
      timeout: 20_000,
      interval: 50,
    });
    const times = receiver.requests
      .filter((request) => request.at >= since)
      .map((request) => request.at)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(4);
    // Every gap at least the interval (a little less for timers and arrival jitter).
    const gaps = times.slice(1).map((at, i) => at - times[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(0.8 * intervalMs);
  });
});
