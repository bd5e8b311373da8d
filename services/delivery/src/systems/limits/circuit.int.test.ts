import { describe, expect } from 'vitest';
import { waitFor } from '@herald/testkit';
import { listOpenCircuits, readWebhookStats } from '@herald/store';
import { FAST_RETRIES, inEnvironment, outage, pipelineTest } from '../../harness.test-support.js';

// The circuit breaker end to end: a receiver that goes down, then comes back.
const COOLDOWN_MS = 800;
const it = pipelineTest({
  circuit: { failures: 3, cooldownMs: COOLDOWN_MS },
  // Retries soon after a failure: without the circuit they would keep hitting the endpoint.
  retry: FAST_RETRIES,
});

describe('the circuit breaker', () => {
  it('opens after a run of failures, lets only probes through, closes on a success, drops nothing', async ({
    db,
    pipeline,
    receiver,
  }) => {
    const endpoint = outage(receiver);
    const env = inEnvironment('circuit-env');
    const webhook = await pipeline.addWebhook(env.webhook(receiver.url));
    const events = Array.from({ length: 12 }, () => env.event());
    await pipeline.emit(events);

    // Three failures in a row open it.
    await waitFor(async () => expect(await listOpenCircuits(db)).toHaveLength(1), {
      timeout: 10_000,
      interval: 25,
    });
    const openedAt = Date.now();
    // Let every process hear of it (it reads the circuits every quarter cool-down).
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS / 4 + 50));
    const before = receiver.requests.length;
    const stats = (await readWebhookStats(db, '1h', [webhook.id]))[0]!;
    expect(stats.circuit.state).toBe('open');
    expect(stats.circuit.failures).toBeGreaterThanOrEqual(3);

    // While it is open, across three cool-downs: only probes, one per cool-down at most,
    // where 12 calls retrying every 100 ms would have sent hundreds of requests.
    await new Promise((resolve) => setTimeout(resolve, 3 * COOLDOWN_MS));
    const whileOpen = receiver.requests.slice(before);
    expect(whileOpen.length).toBeLessThanOrEqual(4);
    whileOpen.slice(1).forEach((request, i) => {
      expect(request.at - whileOpen[i]!.at).toBeGreaterThanOrEqual(COOLDOWN_MS * 0.9);
    });
    expect(Date.now() - openedAt).toBeGreaterThan(3 * COOLDOWN_MS);

    // The endpoint comes back: the next probe succeeds, the circuit closes, every call goes.
    endpoint.recover();
    await waitFor(
      async () => {
        for (const event of events)
          expect((await pipeline.callOf(event.id, webhook.id)).status).toBe('success');
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(await listOpenCircuits(db)).toEqual([]);
    const after = (await readWebhookStats(db, '1h', [webhook.id]))[0]!;
    expect(after.circuit).toEqual({ state: 'closed', openUntil: null, failures: 0 });
    // Each event reached the receiver with a success (nothing dropped).
    const succeeded = new Set(
      receiver.requests
        .filter((request) => request.at > openedAt)
        .map((request) => request.headers['webhook-id']),
    );
    for (const event of events) {
      expect(succeeded).toContain((await pipeline.callOf(event.id, webhook.id)).id);
    }
  });
});
