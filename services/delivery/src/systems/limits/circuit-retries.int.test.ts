import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect } from 'vitest';
import { waitFor } from '@herald/testkit';
import { readWebhookStats } from '@herald/store';
import { FAST_RETRIES, inEnvironment, pipelineTest } from '../../harness.test-support.js';

// An open circuit holds retries that were planned before it opened (docs/api.md, the circuit
// breaker: "first attempts and retries alike, wait"), whatever the order in which a retry wakes
// and the circuit opens. The deployment's cool-down is long, so this process reads the circuits
// only once a second: a retry that trusted the last read would go.
const it = pipelineTest({
  circuit: { failures: 3, cooldownMs: 60_000 },
  retry: FAST_RETRIES,
});

describe('the circuit breaker and retries', () => {
  it('holds the retries planned before it opened: each reads the circuit just before it would go', async ({
    db,
    pipeline,
    receiver,
  }) => {
    receiver.respond = (_req, res) => res.writeHead(503).end();
    const env = inEnvironment('circuit-retries-env');
    // A cool-down far longer than the retries' 100 ms: any retry not held shows up inside it.
    const cooldownMs = 3000;
    const webhook = await pipeline.addWebhook(
      env.webhook(receiver.url, {
        deliveryPolicy: { circuit_failures: 3, circuit_cooldown_ms: cooldownMs },
      }),
    );
    // The pipeline, its receiver and this test share one event loop: a retry that read the circuit
    // closed just before it opened reaches the receiver that much later on a busy machine.
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const since = Date.now();
    await pipeline.emit(Array.from({ length: 5 }, () => env.event()));
    const openUntil = await waitFor(
      async () => {
        const open = (await readWebhookStats(db, '1h', [webhook.id]))[0]!.circuit;
        expect(open.state).toBe('open');
        return open.openUntil!.getTime();
      },
      { timeout: 10_000, interval: 10 },
    );
    const openedAt = openUntil - cooldownMs;
    // The first probe, one cool-down later.
    await waitFor(
      () => expect(receiver.requests.some((request) => request.at >= openUntil - 50)).toBe(true),
      { timeout: 10_000, interval: 25 },
    );
    delay.disable();
    // Nothing reached the endpoint while it was open but what was sent before it opened (a
    // moment's slack for those, and the loop's longest delay) and the probe at its end.
    const slackMs = 100 + delay.max / 1e6;
    const whileOpen = receiver.requests
      .filter((request) => request.at >= since)
      .map((request) => request.at)
      .filter((at) => at > openedAt + slackMs && at < openUntil - 50);
    expect(whileOpen).toEqual([]);
  });
});
