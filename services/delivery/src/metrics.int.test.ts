import { describe, expect } from 'vitest';
import type { Registry } from 'prom-client';
import { FAST_RETRIES, inEnvironment, outage, pipelineTest } from './harness.test-support.js';

// What the alert rules (infra/prometheus/alerts.yml) read, through an endpoint's outage and its
// recovery: attempts by their own result apart from their calls, first-attempt latency apart
// from retries, and the failing and circuit gauges read from Postgres on a scrape.
const it = pipelineTest({
  circuit: { failures: 2, cooldownMs: 300 },
  retry: FAST_RETRIES,
});

/** The value of one series in the registry's text exposition (0 when absent). */
async function value(registry: Registry, series: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('the delivery metrics the alerts read', () => {
  it('follow an endpoint through an outage and its recovery', async ({ pipeline, receiver }) => {
    /** The value of one series of the pipeline's metrics. */
    const read = (series: string) => value(pipeline.registry, series);
    const endpoint = outage(receiver);
    const env = inEnvironment('metrics-env');
    const webhook = await pipeline.addWebhook(env.webhook(receiver.url));
    // Every series of the attempts counter exists before any attempt.
    expect(await pipeline.registry.metrics()).toContain(
      'herald_attempts_total{trigger="first",result="success"} 0',
    );
    expect(await read('herald_webhooks_failing')).toBe(0);

    const event = env.event();
    await pipeline.emit([event]);
    await expect
      .poll(() => read('herald_circuit_open_longest_seconds'), { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(await read('herald_webhooks_failing')).toBe(1);
    expect(await read('herald_webhook_failing_longest_seconds')).toBeGreaterThan(0);
    expect(await read('herald_attempts_total{trigger="first",result="failure"}')).toBe(1);
    expect(
      await read('herald_attempts_total{trigger="retry",result="failure"}'),
    ).toBeGreaterThanOrEqual(1);
    // The call is not finished: rescheduled, not failed.
    expect(await read('herald_deliveries_total{outcome="failed",status_class="5xx"}')).toBe(0);

    endpoint.recover();
    await expect
      .poll(async () => (await pipeline.callOf(event.id, webhook.id)).status, { timeout: 10_000 })
      .toBe('success');
    expect(await read('herald_attempts_total{trigger="retry",result="success"}')).toBe(1);
    // Its latency counts as a retry's, not a first attempt's.
    expect(await read('herald_delivery_e2e_latency_seconds_count{trigger="retry"}')).toBe(1);
    expect(await read('herald_delivery_e2e_latency_seconds_count{trigger="first"}')).toBe(0);
    // The health follows the outcomes' rollups (within a quarter second).
    await expect.poll(() => read('herald_webhooks_failing')).toBe(0);
    expect(await read('herald_webhook_failing_longest_seconds')).toBe(0);
    expect(await read('herald_circuit_open_longest_seconds')).toBe(0);
  });
});
