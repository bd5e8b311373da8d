import { describe, expect, it } from 'vitest';
import type { WebhookStatsResource } from '@herald/contract/tables';
import { summarizeHealth } from './webhook-health.js';

function stats(attributes: Partial<WebhookStatsResource['attributes']> = {}): WebhookStatsResource {
  return {
    type: 'webhook_stats',
    id: '1',
    attributes: {
      window: '24h',
      granularity: 'hour',
      from: '2026-01-01T00:00:00Z',
      to: '2026-01-02T00:00:00Z',
      attempts: { total: 0, success: 0, failure: 0 },
      calls: { succeeded: 0, failed: 0 },
      success_rate: null,
      latency_ms: { p50: null, p95: null, p99: null, mean: null },
      last_success_at: null,
      last_failure_at: null,
      failure_streak: 0,
      backlog: { pending: 0, rescheduled: 0, oldest_age_seconds: null },
      circuit: { state: 'closed', open_until: null, failures: 0 },
      ...attributes,
    },
    relationships: { webhook: { data: { type: 'webhook', id: '1' } } },
  };
}

describe('summarizeHealth', () => {
  it('shows the newest outcome, the success rate, the streak and the backlog', () => {
    const failing = summarizeHealth(
      stats({
        attempts: { total: 6, success: 5, failure: 1 },
        success_rate: 5 / 6,
        last_success_at: '2026-01-01T10:00:00Z',
        last_failure_at: '2026-01-01T11:00:00Z',
        failure_streak: 1,
        backlog: { pending: 2, rescheduled: 1, oldest_age_seconds: 30 },
      }),
    );
    expect(failing).toEqual({
      last: { outcome: 'failed', at: '2026-01-01T11:00:00Z' },
      rate: '83 %',
      rateTitle: '5 of 6 attempts in 24 h',
      failureStreak: 1,
      backlog: 3,
      circuit: null,
    });
    const open = summarizeHealth(
      stats({ circuit: { state: 'open', open_until: '2026-01-01T11:01:00Z', failures: 10 } }),
    );
    expect(open.circuit).toMatch(/^Circuit open until /);
    expect(
      summarizeHealth(
        stats({
          circuit: { state: 'half_open', open_until: '2026-01-01T11:01:00Z', failures: 10 },
        }),
      ).circuit,
    ).toBe('Circuit half-open (probing)');
    // A failing webhook with no attempt in the window still shows its last outcome.
    expect(summarizeHealth(stats({ last_failure_at: '2025-12-01T00:00:00Z' }))).toMatchObject({
      last: { outcome: 'failed' },
      rate: '—',
    });
    expect(summarizeHealth(stats()).last).toBeNull();
  });
});
