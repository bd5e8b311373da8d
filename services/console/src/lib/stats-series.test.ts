import { describe, expect, it } from 'vitest';
import { formatDuration, formatMs, statsSeries } from './stats-series.js';

describe('stats series', () => {
  it('fills the quiet buckets of the window: zero attempts, no latency', () => {
    const series = statsSeries({
      window: '1h',
      granularity: 'minute',
      from: '2026-01-01T10:00:00.000Z',
      to: '2026-01-01T10:03:30.000Z',
      buckets: [
        {
          start: '2026-01-01T10:01:00.000Z',
          attempts_success: 3,
          attempts_failure: 1,
          calls_succeeded: 3,
          calls_failed: 0,
          latency_ms_p50: 12.5,
        },
      ],
    } as Parameters<typeof statsSeries>[0]);
    const t0 = Date.parse('2026-01-01T10:00:00.000Z') / 1000;
    expect(series.step).toBe(60);
    expect(series.time).toEqual([t0, t0 + 60, t0 + 120, t0 + 180]);
    expect(series.success).toEqual([0, 3, 0, 0]);
    expect(series.failure).toEqual([0, 1, 0, 0]);
    expect(series.latencyP50).toEqual([null, 12.5, null, null]);
  });

  it('formats durations', () => {
    expect(formatMs(null)).toBe('—');
    expect(formatMs(4.25)).toBe('4.3 ms');
    expect(formatMs(250.4)).toBe('250 ms');
    expect(formatMs(1400)).toBe('1.4 s');
    expect(formatDuration(42)).toBe('42 s');
    expect(formatDuration(600)).toBe('10 min');
    expect(formatDuration(5400)).toBe('1.5 h');
    expect(formatDuration(2 * 86_400)).toBe('2 d');
  });
});
